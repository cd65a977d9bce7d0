import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite

@Suite("Delete rules")
struct DeleteRuleTests {
    @Test("cascade deletes the destinations, in the context and in the store")
    func cascade() throws {
        let container = try Fixtures.container()
        let (projectID, taskIDs) = try Fixtures.seedProject(container.viewContext, name: "P", taskTitles: ["a", "b"])
        let context = container.newBackgroundContext()
        try context.performAndWait {
            context.delete(context.object(with: projectID))
            #expect(taskIDs.allSatisfy { context.object(with: $0).isDeleted })
            try context.save()
            #expect(try context.count(for: FetchRequest(entityName: "Task")) == 0)
        }
    }

    @Test("nullify removes the deleted object from the inverse side, and bumps the version of rows it changes")
    func nullify() throws {
        let container = try Fixtures.container()
        let (projectID, taskIDs) = try Fixtures.seedProject(container.viewContext, name: "P", taskTitles: ["a", "b"])
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let tag = context.insertNewObject(forEntityName: "Tag")
            tag.setValue("t", forKey: "label")
            let a = context.object(with: taskIDs[0])
            a.addObject(tag, toKey: "tags")
            try context.save()
            // Task.project and Task.tags nullify: deleting a task leaves the project and tag.
            let project = context.object(with: projectID)
            #expect(project.count(forKey: "tasks") == 2)
            context.delete(a)
            #expect(project.objectIDs(forKey: "tasks") == [taskIDs[1]])
            #expect(tag.objects(forKey: "tasks").isEmpty)
            try context.save()
        }
        let reader = container.newBackgroundContext()
        try reader.performAndWait {
            #expect(reader.object(with: projectID).objectIDs(forKey: "tasks") == [taskIDs[1]])
            let tag = try #require(try reader.fetch(FetchRequest(entityName: "Tag")).first)
            #expect(tag.objectIDs(forKey: "tasks").isEmpty)
            #expect(try reader.count(for: FetchRequest(entityName: "Task")) == 1)
        }
    }

    @Test("deny refuses the delete while the relationship holds an object, and allows it once empty")
    func deny() throws {
        let container = try Fixtures.container()
        let (_, taskIDs) = try Fixtures.seedProject(container.viewContext, name: "P", taskTitles: ["a"])
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let tag = context.insertNewObject(forEntityName: "Tag")
            tag.setValue("urgent", forKey: "label")
            context.object(with: taskIDs[0]).addObject(tag, toKey: "tags")
            try context.save()
            context.delete(tag)
            #expect {
                try context.save()
            } throws: { error in
                guard case SaveError.validation(let errors) = error else { return false }
                return errors.map(\.code) == [.deleteDenied] && errors.first?.property == "tasks" && errors.first?.objectID == tag.objectID
            }
            context.rollback()
            #expect(try context.count(for: FetchRequest(entityName: "Tag")) == 1)
            // Emptying the relationship first lets the delete through.
            context.object(with: taskIDs[0]).removeObject(tag, fromKey: "tags")
            context.delete(tag)
            try context.save()
            #expect(try context.count(for: FetchRequest(entityName: "Tag")) == 0)
        }
    }

    /// The other side of a deny link may be a fault when the link is made: loading it later
    /// must still see the link (the deleted object keeps it until the save), so that letting go
    /// of it from that side empties the deny relationship. Twin: the same steps with the other
    /// side loaded first must end the same way.
    @Test("a deny link made to a fault and let go of after the delete lets the delete through", arguments: [false, true])
    func denyLetGoAfterDeleteThroughFault(loadFirst: Bool) throws {
        let container = try Fixtures.container()
        let (_, taskIDs) = try Fixtures.seedProject(container.viewContext, name: "P", taskTitles: ["a"])
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let task = context.object(with: taskIDs[0])
            if loadFirst { _ = task.objectIDs(forKey: "tags") }
            // A new tag, linked and deleted in one go; then the task lets go of it.
            let tag = context.insertNewObject(forEntityName: "Tag")
            tag.setValue("fleeting", forKey: "label")
            tag.addObject(task, toKey: "tasks")
            context.delete(tag)
            #expect(task.objectIDs(forKey: "tags") == [tag.objectID], "the deleted tag holds the task until the save")
            task.removeObject(tag, fromKey: "tags")
            #expect(tag.objectIDs(forKey: "tasks").isEmpty)
            try context.save()
            #expect(try context.count(for: FetchRequest(entityName: "Tag")) == 0)
            // A saved tag: linked in this context while the task is a fault, deleted, let go of.
            let saved = context.insertNewObject(forEntityName: "Tag")
            saved.setValue("kept", forKey: "label")
            try context.save()
            context.reset()
            let again = context.object(with: saved.objectID), faultTask = context.object(with: taskIDs[0])
            if loadFirst { _ = faultTask.objectIDs(forKey: "tags") }
            again.addObject(faultTask, toKey: "tasks")
            context.delete(again)
            #expect(faultTask.objectIDs(forKey: "tags") == [again.objectID])
            faultTask.removeObject(again, fromKey: "tags")
            try context.save()
            #expect(try context.count(for: FetchRequest(entityName: "Tag")) == 0)
        }
    }

    @Test("noAction leaves the destinations pointing at the deleted object")
    func noAction() throws {
        let model = try ManagedObjectModel(name: "NoAction", entities: [
            EntityDescription(name: "Owner", attributes: [AttributeDescription(name: "name", type: .string)],
                              relationships: [RelationshipDescription(name: "pets", destination: "Pet", inverse: "owner", isToMany: true, deleteRule: .noAction)]),
            EntityDescription(name: "Pet", attributes: [AttributeDescription(name: "name", type: .string)],
                              relationships: [RelationshipDescription(name: "owner", destination: "Owner", inverse: "pets")]),
        ])
        let container = try Fixtures.container(model: model)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let owner = context.insertNewObject(forEntityName: "Owner")
            let pet = context.insertNewObject(forEntityName: "Pet")
            pet.setObject(owner, forKey: "owner")
            try context.save()
            let ownerID = owner.objectID
            context.delete(owner)
            try context.save()
            context.reset()
            let again = try #require(try context.fetch(FetchRequest(entityName: "Pet")).first)
            #expect(again.objectID(forKey: "owner") == ownerID, "the link is left as it was")
        }
        #expect(try container.coordinator.checkIntegrity().contains { $0.contains("links to missing Owner") })
    }
}
