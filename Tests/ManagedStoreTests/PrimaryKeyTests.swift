import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite

/// Every insert is stored under the key its permanent ID names, and keys are never reused.
/// A plain insert (nothing refers to anything) takes the save's fast path, one with a
/// relationship the plain one: both are checked, and against each other.
@Suite("Primary keys: bound on every insert, never reused")
struct PrimaryKeyTests {
    /// Inserts a tag (fast path: it refers to nothing) or a task with a project (the path that
    /// maps temporary IDs), saves, and returns its permanent ID.
    private func insert(_ context: ManagedObjectContext, refersToSomething: Bool, title: String) throws -> ManagedObjectID {
        try context.performAndWait {
            let object: ManagedObject
            if refersToSomething {
                object = context.insertNewObject(forEntityName: "Task")
                object.setValue(title, forKey: "title")
                let project = context.insertNewObject(forEntityName: "Project")
                project.setValue("p-\(title)", forKey: "name")
                object.setObject(project, forKey: "project")
            } else {
                object = context.insertNewObject(forEntityName: "Task")
                object.setValue(title, forKey: "title")
            }
            try context.save()
            return object.objectID
        }
    }

    private func delete(_ context: ManagedObjectContext, _ id: ManagedObjectID) throws {
        try context.performAndWait {
            context.delete(try context.existingObject(with: id))
            try context.save()
        }
    }

    /// The title stored under `id`, read by a fresh context straight from the store.
    private func storedTitle(_ container: PersistentContainer, _ id: ManagedObjectID) throws -> String? {
        let reader = container.newBackgroundContext()
        return try reader.performAndWait {
            try reader.withStoredObject(id) { row in
                if case .string(let title) = row.value(ofAttributeAt: 0) { return title }
                return nil
            } ?? nil
        }
    }

    @Test("insert, delete the highest, insert again: the new ID is new and reads back as the new object",
          arguments: [false, true], [false, true])
    func deleteHighestThenInsert(refersToSomething: Bool, fileStore: Bool) throws {
        let store = TemporaryStore()
        let container = try Fixtures.container(fileStore ? .sqlite(store.url) : .inMemory)
        let context = container.newBackgroundContext()
        let first = try insert(context, refersToSomething: refersToSomething, title: "first")
        let second = try insert(context, refersToSomething: refersToSomething, title: "second")
        try delete(context, second)
        let third = try insert(context, refersToSomething: refersToSomething, title: "third")
        #expect(third.primaryKey! > second.primaryKey!, "a deleted key is never handed out again")
        #expect(try storedTitle(container, third) == "third", "the returned ID names the object just written")
        #expect(try storedTitle(container, second) == nil, "the deleted key names nothing")
        #expect(try storedTitle(container, first) == "first")
        #expect(try container.coordinator.checkIntegrity().isEmpty)
    }

    @Test("the fast path (nothing refers to anything) and the plain path hand out the same keys")
    func fastPathTwin() throws {
        var sequences: [[Int64]] = []
        for refersToSomething in [false, true] {
            let container = try Fixtures.container()
            let context = container.newBackgroundContext()
            var keys: [Int64] = []
            for round in 0..<5 {
                let a = try insert(context, refersToSomething: refersToSomething, title: "a\(round)")
                let b = try insert(context, refersToSomething: refersToSomething, title: "b\(round)")
                try delete(context, b)  // the highest key, every round
                keys += [a.primaryKey!, b.primaryKey!]
                #expect(try storedTitle(container, a) == "a\(round)")
            }
            sequences.append(keys)
        }
        #expect(sequences[0] == sequences[1])
        #expect(sequences[0] == Array(1...10).map { Int64($0) }, "keys follow the sequence, one after another, whatever was deleted")
    }

    @Test("a bulk save after deleting the highest rows stores every object under its own ID")
    func bulkAfterDeletes() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let ids: [ManagedObjectID] = try context.performAndWait {
            let objects = (0..<50).map { i -> ManagedObject in
                let task = context.insertNewObject(forEntityName: "Task")
                task.setValue("old \(i)", forKey: "title")
                return task
            }
            try context.save()
            for object in objects.suffix(10) { context.delete(object) }
            try context.save()
            let fresh = (0..<20).map { i -> ManagedObject in
                let task = context.insertNewObject(forEntityName: "Task")
                task.setValue("new \(i)", forKey: "title")
                return task
            }
            try context.save()
            return fresh.map(\.objectID)
        }
        for (i, id) in ids.enumerated() {
            #expect(id.primaryKey == Int64(51 + i))
            #expect(try storedTitle(container, id) == "new \(i)")
        }
    }
}
