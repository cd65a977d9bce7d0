import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite

@Suite("Persistent history")
struct PersistentHistoryTests {
    private func ids(_ changes: [PersistentHistoryChange], _ type: PersistentHistoryChangeType) -> [String] {
        changes.filter { $0.changeType == type }.map(\.objectID.description)
    }

    @Test("every save records a transaction: token, time, author, context, and per object its change, properties and values before")
    func recordsSaves() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext(name: "importer")
        let before = Date()
        let (projectID, taskIDs) = try context.performAndWait {
            context.transactionAuthor = "ann"
            let project = context.insertNewObject(forEntityName: "Project")
            project.setValue("Apollo", forKey: "name")
            let tasks = (0..<2).map { i -> ManagedObject in
                let task = context.insertNewObject(forEntityName: "Task")
                task.setValue("t\(i)", forKey: "title")
                task.setObject(project, forKey: "project")
                return task
            }
            let saved = try context.save()
            #expect(saved.token == PersistentHistoryToken(rawValue: 1))
            return (project.objectID, tasks.map(\.objectID))
        }
        let first = try container.coordinator.history(after: .zero)
        #expect(first.count == 1)
        #expect(first[0].author == "ann" && first[0].contextName == "importer")
        #expect(first[0].timestamp >= before.addingTimeInterval(-1))
        #expect(ids(first[0].changes, .insert) == ["Project/1", "Task/1", "Task/2"])
        #expect(first[0].changes.allSatisfy { $0.version == 1 && $0.previousValues.isEmpty })
        #expect(first[0].changes[0].updatedProperties == ["name", "archived", "tasks"], "an insert touches every property")

        // An update of an attribute and a to-one move: the task's row changes, both projects' tasks.
        let secondProjectID: ManagedObjectID = try context.performAndWait {
            context.transactionAuthor = nil
            let other = context.insertNewObject(forEntityName: "Project")
            other.setValue("Gemini", forKey: "name")
            try context.save()
            let task = try context.existingObject(with: taskIDs[0])
            task.setValue("renamed", forKey: "title")
            task.setObject(other, forKey: "project")
            let saved = try context.save()
            #expect(saved.token == PersistentHistoryToken(rawValue: 3))
            #expect(Set(saved.updated) == Set([taskIDs[0], projectID, other.objectID]))
            return other.objectID
        }
        let third = try #require(try container.coordinator.history(after: PersistentHistoryToken(rawValue: 2)).first)
        #expect(third.author == nil)
        let byID = Dictionary(uniqueKeysWithValues: third.changes.map { ($0.objectID, $0) })
        let task = try #require(byID[taskIDs[0]])
        #expect(task.changeType == .update && task.version == 2)
        #expect(task.updatedProperties == ["title", "project"])
        #expect(task.previousValues["title"] == .attribute(.string("t0")))
        #expect(task.previousValues["project"] == .destinations(added: [secondProjectID], removed: [projectID]))
        let oldProject = try #require(byID[projectID])
        #expect(oldProject.version == nil, "only its to-many changed: the version stays")
        #expect(oldProject.updatedProperties == ["tasks"])
        #expect(oldProject.previousValues["tasks"] == .destinations(added: [], removed: [taskIDs[0]]))
        #expect(byID[secondProjectID]?.previousValues["tasks"] == .destinations(added: [taskIDs[0]], removed: []))

        // A delete with its cascade: every deleted object with its values before.
        try context.performAndWait {
            context.delete(try context.existingObject(with: projectID))
            let saved = try context.save()
            #expect(Set(saved.deleted) == [projectID, taskIDs[1]])
        }
        let fourth = try #require(try container.coordinator.history(after: PersistentHistoryToken(rawValue: 3)).first)
        #expect(ids(fourth.changes, .delete) == ["Project/1", "Task/2"])
        let deletedProject = try #require(fourth.changes.first { $0.objectID == projectID })
        #expect(deletedProject.previousValues["name"] == .attribute(.string("Apollo")))
        #expect(deletedProject.previousValues["tasks"] == .destinations(added: [], removed: [taskIDs[1]]))
        #expect(try container.coordinator.lastHistoryToken() == PersistentHistoryToken(rawValue: 4))
    }

    @Test("history pages after a token, filters by entity, and a failed save records nothing")
    func pagingFilteringFailures() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            for i in 0..<5 {
                let tag = context.insertNewObject(forEntityName: "Tag")
                tag.setValue("tag\(i)", forKey: "label")
                try context.save()
            }
            let project = context.insertNewObject(forEntityName: "Project")
            project.setValue("P", forKey: "name")
            try context.save()
            // Refused saves: a validation error and a uniqueness conflict.
            _ = context.insertNewObject(forEntityName: "Task")
            #expect(throws: SaveError.self) { try context.save() }
            context.rollback()
            let duplicate = context.insertNewObject(forEntityName: "Tag")
            duplicate.setValue("tag0", forKey: "label")
            #expect(throws: SaveError.self) { try context.save() }
            context.rollback()
        }
        let page = try container.coordinator.history(after: PersistentHistoryToken(rawValue: 1), limit: 2)
        #expect(page.map(\.token.rawValue) == [2, 3])
        let projects = try container.coordinator.history(after: .zero, entities: ["Project"])
        #expect(projects.map(\.token.rawValue) == [6])
        #expect(try container.coordinator.lastHistoryToken().rawValue == 6, "refused saves recorded nothing")
        #expect(try container.coordinator.historyTransactionCount() == 6)
    }

    @Test("pruned history: reading from before it is refused, the store works on, tokens keep growing")
    func pruning() throws {
        let store = TemporaryStore()
        let container = try Fixtures.container(.sqlite(store.url))
        let context = container.newBackgroundContext()
        func addTag(_ label: String) throws {
            try context.performAndWait {
                let tag = context.insertNewObject(forEntityName: "Tag")
                tag.setValue(label, forKey: "label")
                try context.save()
            }
        }
        for i in 0..<4 { try addTag("t\(i)") }
        #expect(try container.coordinator.deleteHistory(before: PersistentHistoryToken(rawValue: 3)) == 2)
        #expect(try container.coordinator.oldestHistoryToken().rawValue == 2)
        #expect(throws: StoreError.historyPruned(requested: PersistentHistoryToken(rawValue: 1), oldest: PersistentHistoryToken(rawValue: 2))) {
            try container.coordinator.history(after: PersistentHistoryToken(rawValue: 1))
        }
        #expect(try container.coordinator.history(after: PersistentHistoryToken(rawValue: 2)).map(\.token.rawValue) == [3, 4])
        // Everything pruned: the next token still follows the last one.
        #expect(try container.coordinator.deleteHistory(olderThan: Date().addingTimeInterval(60)) == 2)
        #expect(try container.coordinator.deleteHistory(olderThan: Date().addingTimeInterval(60)) == 0, "nothing is pruned twice")
        #expect(try container.coordinator.historyTransactionCount() == 0)
        #expect(try container.coordinator.lastHistoryToken().rawValue == 4)
        try addTag("after")
        #expect(try container.coordinator.history(after: try container.coordinator.oldestHistoryToken()).map(\.token.rawValue) == [5])
        #expect(try container.coordinator.checkIntegrity().isEmpty)
        // Pruning past the newest save prunes no save to come; and tokens keep growing after
        // the store is closed and opened again with everything pruned.
        #expect(try container.coordinator.deleteHistory(before: PersistentHistoryToken(rawValue: 100)) == 1)
        #expect(try container.coordinator.oldestHistoryToken().rawValue == 5)
        let reopened = try Fixtures.container(.sqlite(store.url))
        let again = reopened.newBackgroundContext()
        try again.performAndWait { () throws in
            let tag = again.insertNewObject(forEntityName: "Tag")
            tag.setValue("reopened", forKey: "label")
            #expect(try again.save().token?.rawValue == 6)
        }
        #expect(try reopened.coordinator.history(after: try reopened.coordinator.oldestHistoryToken()).map(\.token.rawValue) == [6])
        #expect(try reopened.coordinator.historyTransactionCount() == 1)
    }

    @Test("a store without history records nothing and answers no token")
    func historyOff() throws {
        var description = StoreDescription.inMemory
        description.recordsHistory = false
        let container = try Fixtures.container(description)
        let context = container.newBackgroundContext()
        let saved = try context.performAndWait {
            let tag = context.insertNewObject(forEntityName: "Tag")
            tag.setValue("x", forKey: "label")
            return try context.save()
        }
        #expect(saved.token == nil)
        #expect(try container.coordinator.history(after: .zero).isEmpty)
    }

    @Test("the changes an object went through after a version, and none when history does not reach it")
    func changesAfterVersion() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let taskID: ManagedObjectID = try context.performAndWait {
            let task = context.insertNewObject(forEntityName: "Task")
            task.setValue("a", forKey: "title")
            try context.save()
            task.setValue("b", forKey: "title")
            try context.save()
            task.setValue(Int64(3), forKey: "priority")
            try context.save()
            return task.objectID
        }
        let entity = try #require(container.model.resolvedEntity(named: "Task"))
        // Through the store protocol, so that every store's history answers it.
        let changes = try container.coordinator.store.read(throughWriter: true) { session in
            try session.historyChanges(ofObject: entity, key: taskID.primaryKey ?? 0, after: 1)
        }
        #expect(changes?.map(\.updatedProperties) == [["priority"], ["title"]], "newest first")
        let none = try container.coordinator.store.read(throughWriter: true) { session in
            try session.historyChanges(ofObject: entity, key: taskID.primaryKey ?? 0, after: 7)
        }
        #expect(none == nil)
    }
}
