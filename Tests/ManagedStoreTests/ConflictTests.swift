import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite

@Suite("Optimistic locking and uniqueness conflicts")
struct ConflictTests {
    /// The store's row for a task, read through a fresh context.
    static func storedTask(_ container: PersistentContainer, _ id: ManagedObjectID) throws -> (title: String?, priority: Int64?, version: Int64) {
        let context = container.newBackgroundContext()
        return try context.performAndWait {
            let task = try context.existingObject(with: id)
            return (task.value("title", as: String.self), task.value("priority", as: Int64.self), task.version)
        }
    }

    @Test("two contexts on two tasks: the second save of the same object fails with the conflict, store unchanged")
    func twoContextsConflict() async throws {
        let store = TemporaryStore()
        let container = try Fixtures.container(.sqlite(store.url))
        let (_, taskIDs) = try Fixtures.seedProject(container.viewContext, name: "P", taskTitles: ["original"])
        let id = taskIDs[0]
        let first = container.newBackgroundContext(name: "first")
        let second = container.newBackgroundContext(name: "second")
        // Both read version 1.
        async let readFirst: Int64 = first.perform { first.object(with: id).value("priority", as: Int64.self) ?? -1 }
        async let readSecond: Int64 = second.perform { second.object(with: id).value("priority", as: Int64.self) ?? -1 }
        _ = await (readFirst, readSecond)
        // The first saves.
        try await first.perform {
            first.object(with: id).setValue("from first", forKey: "title")
            try first.save()
        }
        // The second's save of the same object is refused with every detail of the conflict.
        let error = await second.perform { () -> SaveError? in
            let task = second.object(with: id)
            task.setValue("from second", forKey: "title")
            task.setValue(Int64(5), forKey: "priority")
            do throws(SaveError) { try second.save(); return nil } catch { return error }
        }
        guard case let .conflict(mergeConflicts, constraintConflicts)? = error else {
            Issue.record("expected a conflict, got \(String(describing: error))")
            return
        }
        #expect(constraintConflicts.isEmpty)
        let conflict = try #require(mergeConflicts.first)
        #expect(mergeConflicts.count == 1)
        #expect(conflict.objectID == id)
        #expect(conflict.oldVersion == 1 && conflict.newVersion == 2)
        #expect(conflict.objectSnapshot?["title"] == .attribute(.string("from second")))
        #expect(conflict.objectSnapshot?["priority"] == .attribute(.integer(5)))
        #expect(conflict.cachedSnapshot?["title"] == .attribute(.string("original")))
        #expect(conflict.persistedSnapshot?["title"] == .attribute(.string("from first")))
        #expect(conflict.changedProperties == ["title", "priority"])
        #expect(conflict.storeChangedProperties == ["title"])
        #expect(conflict.conflictingProperties == ["title"])
        // Nothing of the refused save reached the store.
        let stored = try Self.storedTask(container, id)
        #expect(stored.title == "from first" && stored.priority == 0 && stored.version == 2)
        // The context keeps its changes; merging the store's state lets it save.
        try await second.perform {
            #expect(second.hasChanges)
            let task = second.object(with: id)
            second.refresh(task, mergeChanges: true)
            try second.save()
            #expect(task.version == 3)
        }
        #expect(try Self.storedTask(container, id).title == "from second")
    }

    @Test("every conflicting object of one save is listed, including deletes and objects deleted in the store")
    func allConflictsListed() throws {
        let container = try Fixtures.container()
        let (_, ids) = try Fixtures.seedProject(container.viewContext, name: "P", taskTitles: ["a", "b", "c", "d"])
        let stale = container.newBackgroundContext()
        stale.performAndWait { for id in ids { _ = stale.object(with: id).value("title", as: String.self) } }
        let other = container.newBackgroundContext()
        try other.performAndWait {
            other.object(with: ids[0]).setValue("a2", forKey: "title")
            other.object(with: ids[1]).setValue(Int64(2), forKey: "priority")
            other.delete(other.object(with: ids[2]))
            try other.save()
        }
        stale.performAndWait {
            stale.object(with: ids[0]).setValue("mine", forKey: "title")
            stale.delete(stale.object(with: ids[1]))
            stale.object(with: ids[2]).setValue(true, forKey: "done")
            stale.object(with: ids[3]).setValue("untouched elsewhere", forKey: "title")
            do {
                try stale.save()
                Issue.record("the save should conflict")
            } catch let SaveError.conflict(conflicts, _) {
                let byID = Dictionary(uniqueKeysWithValues: conflicts.map { ($0.objectID, $0) })
                #expect(Set(byID.keys) == [ids[0], ids[1], ids[2]])
                #expect(byID[ids[1]]?.objectSnapshot == nil, "a deleted object has no object snapshot")
                #expect(byID[ids[1]]?.newVersion == 2)
                #expect(byID[ids[2]]?.newVersion == 0 && byID[ids[2]]?.persistedSnapshot == nil, "deleted in the store")
            } catch {
                Issue.record("unexpected \(error)")
            }
        }
        // ids[3] was not written either: the whole save is refused.
        #expect(try Self.storedTask(container, ids[3]).title == "d")
    }

    @Test("a uniqueness violation is a constraint conflict naming the existing object; nothing is written")
    func uniquenessConflict() throws {
        let container = try Fixtures.container()
        let (projectID, _) = try Fixtures.seedProject(container.viewContext, name: "Apollo", taskTitles: [])
        let context = container.newBackgroundContext()
        context.performAndWait {
            let duplicate = context.insertNewObject(forEntityName: "Project")
            duplicate.setValue("Apollo", forKey: "name")
            let tag1 = context.insertNewObject(forEntityName: "Tag")
            tag1.setValue("same", forKey: "label")
            let tag2 = context.insertNewObject(forEntityName: "Tag")
            tag2.setValue("same", forKey: "label")
            do {
                try context.save()
                Issue.record("expected a constraint conflict")
            } catch let SaveError.conflict(merge, constraints) {
                #expect(merge.isEmpty)
                #expect(constraints.count == 2)
                let project = constraints.first { $0.entityName == "Project" }
                #expect(project?.constraint == ["name"])
                #expect(project?.values == ["name": .string("Apollo")])
                #expect(project?.conflictingObjects == [projectID])
                #expect(project?.objects == [duplicate.objectID])
                let tags = constraints.first { $0.entityName == "Tag" }
                #expect(tags?.conflictingObjects == [])
                #expect(Set(tags?.objects ?? []) == [tag1.objectID, tag2.objectID])
            } catch {
                Issue.record("unexpected \(error)")
            }
        }
        let reader = container.newBackgroundContext()
        try reader.performAndWait { () throws in
            #expect(try reader.count(for: FetchRequest(entityName: "Project")) == 1)
            #expect(try reader.count(for: FetchRequest(entityName: "Tag")) == 0)
        }
    }

    @Test("a unique value freed by a delete in the same save can be taken")
    func uniqueValueReusedInSameSave() throws {
        let container = try Fixtures.container()
        let (projectID, _) = try Fixtures.seedProject(container.viewContext, name: "Apollo", taskTitles: [])
        let context = container.newBackgroundContext()
        try context.performAndWait {
            context.delete(context.object(with: projectID))
            let replacement = context.insertNewObject(forEntityName: "Project")
            replacement.setValue("Apollo", forKey: "name")
            try context.save()
            #expect(replacement.objectID.primaryKey == 2, "keys are never reused")
        }
    }

    @Test("unique values are told apart by code point, in one save as across saves: é precomposed and e + U+0301 are two labels")
    func uniqueByCodePoint() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            for label in ["\u{e9}", "e\u{301}"] { context.insertNewObject(forEntityName: "Tag").setValue(label, forKey: "label") }
            try context.save()
            context.insertNewObject(forEntityName: "Tag").setValue("e\u{301}", forKey: "label")
            #expect(throws: SaveError.self, "the same code points again conflict") { try context.save() }
            context.rollback()
            #expect(try context.count(for: FetchRequest(entityName: "Tag")) == 2)
        }
    }
}
