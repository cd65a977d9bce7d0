import Foundation
import Synchronization
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite

@Suite("Batch insert, update and delete requests")
struct BatchRequestTests {
    private func task(_ title: String, priority: Int64 = 0) -> [String: PropertyValue] {
        ["title": .attribute(.string(title)), "priority": .attribute(.integer(priority))]
    }

    /// Every task's title and priority as the store holds them, read by a fresh context.
    private func storedTasks(_ container: PersistentContainer) throws -> [String: Int64] {
        let context = container.newBackgroundContext(name: "check")
        return try context.performAndWait { () throws -> [String: Int64] in
            var result: [String: Int64] = [:]
            for object in try context.fetch(FetchRequest(entityName: "Task")) {
                result[object.value("title", as: String.self) ?? "?"] = object.value("priority", as: Int64.self)
            }
            return result
        }
    }

    @Test("a batch insert stores every object in chunks, reports progress and answers the IDs in order")
    func insertInChunks() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let progress = Mutex<[Int]>([])
        var request = BatchInsertRequest(entityName: "Task", objects: (0..<30).map { task("t\($0)", priority: Int64($0 % 6)) })
        request.chunkSize = 7
        request.resultType = .objectIDs
        request.progress = { count in progress.withLock { $0.append(count) } }
        let before = try container.coordinator.lastHistoryToken()
        let result = try context.performAndWait { try context.execute(request) }
        #expect(result.count == 30)
        #expect(progress.withLock { $0 } == [7, 14, 21, 28, 30])
        let ids = try #require(result.objectIDs)
        #expect(ids.count == 30 && ids.allSatisfy { !$0.isTemporaryID })
        #expect(result.changes.inserted == ids)
        #expect(try storedTasks(container).count == 30)
        // Each ID names the object given at its position.
        let reader = container.newBackgroundContext(name: "reader")
        try reader.performAndWait { () throws in
            for (i, id) in ids.enumerated() {
                #expect(try reader.existingObject(with: id).value("title", as: String.self) == "t\(i)")
            }
        }
        // The history records the inserts, one transaction per chunk.
        let history = try container.coordinator.history(after: before, limit: 100)
        #expect(history.count == 5)
        #expect(Set(history.flatMap(\.changes).filter { $0.changeType == .insert }.map(\.objectID)) == Set(ids))
    }

    @Test("a batch insert from a generator stops at nil; the caller's context is left as it was")
    func insertFromGenerator() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        var produced = 0
        let request = BatchInsertRequest(entityName: "Task") { () -> [String: PropertyValue]? in
            guard produced < 2500 else { return nil }
            produced += 1
            return ["title": .attribute(.string("g\(produced)"))]
        }
        let result = try context.performAndWait { () throws -> BatchResult in
            let pending = context.insertNewObject(forEntityName: "Task")
            pending.setValue("unsaved", forKey: "title")
            let result = try context.execute(request)
            // The batch wrote only its own objects; the context's change is still pending.
            #expect(context.hasChanges)
            #expect(context.registeredObjects.count == 1)
            return result
        }
        #expect(result.count == 2500 && result.objectIDs == nil)
        let stored = try storedTasks(container)
        #expect(stored.count == 2500 && stored["unsaved"] == nil)
    }

    @Test("an invalid object in a late chunk leaves the store exactly as it was")
    func insertIsAtomic() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try Fixtures.seedProject(context, name: "P", taskTitles: ["kept"])
        var objects = (0..<25).map { task("ok\($0)") }
        objects[22] = task("bad", priority: 9)  // the model allows 0...5
        var request = BatchInsertRequest(entityName: "Task", objects: objects)
        request.chunkSize = 10
        #expect {
            try context.performAndWait { try context.execute(request) }
        } throws: { error in
            guard case .save(.validation(let errors)) = error as? BatchError else { return false }
            return errors.map(\.code) == [.tooLarge] && errors.first?.property == "priority"
        }
        #expect(try storedTasks(container) == ["kept": 0])
    }

    @Test("unknown properties and values of the wrong kind are typed errors, and nothing is written")
    func insertRefusesBadValues() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let (projectID, taskIDs) = try Fixtures.seedProject(context, name: "P", taskTitles: [])
        _ = taskIDs
        let unknown = BatchInsertRequest(entityName: "Task", objects: [["title": .attribute(.string("x")), "colour": .attribute(.string("red"))]])
        #expect {
            try context.performAndWait { try context.execute(unknown) }
        } throws: { error in
            if case .unknownProperty("colour", entity: "Task") = error as? BatchError { return true }
            return false
        }
        #expect {
            try context.performAndWait { try context.execute(BatchInsertRequest(entityName: "Nope", objects: [])) }
        } throws: { error in
            if case .unknownEntity("Nope") = error as? BatchError { return true }
            return false
        }
        // A relationship to a saved project is set; one to a project that does not exist is refused.
        let good = BatchInsertRequest(entityName: "Task", objects: [["title": .attribute(.string("linked")), "project": .object(projectID)]])
        let linked = try context.performAndWait { try context.execute(good) }
        let missing = try #require(container.coordinator.managedObjectID(entityName: "Project", primaryKey: 999))
        let bad = BatchInsertRequest(entityName: "Task", objects: [["title": .attribute(.string("dangling")), "project": .object(missing)],
                                                                   ["title": .attribute(.string("wrong")), "project": .attribute(.integer(1))]])
        #expect {
            try context.performAndWait { try context.execute(bad) }
        } throws: { error in
            guard case .save(.validation(let errors)) = error as? BatchError else { return false }
            return errors.map(\.code) == [.invalidRelationship, .invalidType]
        }
        #expect(try storedTasks(container).keys.sorted() == ["linked"])
        #expect(linked.changes.updated == [projectID])  // the project's tasks changed through the inverse
    }

    @Test("a batch update sets values on every match; a live context sees them after the merge")
    func updateThenMerge() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let (_, taskIDs) = try Fixtures.seedProject(context, name: "P", taskTitles: (0..<12).map { "t\($0)" })
        try context.performAndWait { () throws in
            for (i, id) in taskIDs.enumerated() { context.object(with: id).setValue(Int64(i % 6), forKey: "priority") }
            try context.save()
        }
        let live = container.newBackgroundContext(name: "live")
        live.performAndWait {
            for id in taskIDs { _ = live.object(with: id).value("done", as: Bool.self) }  // loaded, not faults
            live.object(with: taskIDs[5]).setValue("mine", forKey: "title")  // an unsaved change of its own
        }
        var request = BatchUpdateRequest(entityName: "Task", predicate: .key("priority") >= Int64(3),
                                         propertiesToUpdate: ["done": .attribute(.boolean(true))])
        request.chunkSize = 2
        request.resultType = .objectIDs
        let result = try context.performAndWait { try context.execute(request) }
        let matched = taskIDs.enumerated().filter { $0.offset % 6 >= 3 }.map(\.element)
        #expect(result.count == matched.count && Set(result.objectIDs ?? []) == Set(matched))
        #expect(Set(result.changes.updated) == Set(matched))
        // Before the merge the live context still holds what it read.
        #expect(live.performAndWait { live.object(with: matched[0]).value("done", as: Bool.self) } == false)
        ManagedObjectContext.mergeChanges(fromRemoteContextSave: result.changes, into: [live])
        live.performAndWait {
            for (i, id) in taskIDs.enumerated() {
                #expect(live.object(with: id).value("done", as: Bool.self) == (i % 6 >= 3))
            }
            #expect(live.object(with: taskIDs[5]).value("title", as: String.self) == "mine")
        }
        // The live context's own change saves on top of the batch without a conflict.
        try live.performAndWait { try live.save() }
        let reader = container.newBackgroundContext(name: "reader")
        try reader.performAndWait { () throws in
            let object = try reader.existingObject(with: taskIDs[5])
            #expect(object.value("title", as: String.self) == "mine" && object.value("done", as: Bool.self) == true)
        }
    }

    @Test("a batch update matches what the same change made object by object leaves in the store")
    func updateTwinOfPlainPath() throws {
        func run(batch: Bool) throws -> [String: [String]] {
            let container = try Fixtures.container()
            let context = container.newBackgroundContext()
            try Fixtures.seedProject(context, name: "P", taskTitles: (0..<40).map { "t\($0)" })
            let predicate = try ObjectPredicate(format: "title ENDSWITH \"3\" OR title BEGINSWITH \"t1\"")
            let values: [String: PropertyValue] = ["priority": .attribute(.integer(4)), "estimate": .attribute(.double(1.5))]
            try context.performAndWait { () throws in
                if batch {
                    var request = BatchUpdateRequest(entityName: "Task", predicate: predicate, propertiesToUpdate: values)
                    request.chunkSize = 3
                    _ = try context.execute(request)
                } else {
                    for object in try context.fetch(FetchRequest(entityName: "Task", predicate: predicate)) {
                        object.setValue(Int64(4), forKey: "priority")
                        object.setValue(1.5, forKey: "estimate")
                    }
                    try context.save()
                }
            }
            let reader = container.newBackgroundContext(name: "reader")
            return try reader.performAndWait { () throws -> [String: [String]] in
                var rows: [String: [String]] = [:]
                for object in try reader.fetch(FetchRequest(entityName: "Task")) {
                    rows[object.value("title", as: String.self)!] = object.attributeValues.map { "\($0)" } + ["v\(object.version)"]
                }
                return rows
            }
        }
        let plain = try run(batch: false)
        #expect(plain.values.filter { $0.last == "v2" }.count == 14)  // t1, t10...t19, t3, t23, t33
        #expect(try run(batch: true) == plain)
    }

    @Test("a batch update to an invalid value changes nothing")
    func updateIsAtomic() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try Fixtures.seedProject(context, name: "P", taskTitles: ["a", "b", "c"])
        var request = BatchUpdateRequest(entityName: "Task", predicate: nil, propertiesToUpdate: ["priority": .attribute(.integer(2))])
        request.chunkSize = 1
        _ = try context.performAndWait { try context.execute(request) }
        request.propertiesToUpdate = ["priority": .attribute(.integer(7))]
        #expect(throws: BatchError.self) { try context.performAndWait { try context.execute(request) } }
        #expect(try storedTasks(container) == ["a": 2, "b": 2, "c": 2])
    }

    @Test("a batch delete applies cascades and reports them; merged, live objects become inaccessible")
    func deleteWithCascade() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let (gone, goneTasks) = try Fixtures.seedProject(context, name: "alpha", taskTitles: ["a1", "a2"])
        let (kept, keptTasks) = try Fixtures.seedProject(context, name: "beta", taskTitles: ["b1"])
        let live = container.newBackgroundContext(name: "live")
        live.performAndWait { _ = live.object(with: goneTasks[0]).value("title", as: String.self) }
        var request = BatchDeleteRequest(entityName: "Project", predicate: try ObjectPredicate(format: "name BEGINSWITH \"al\""))
        request.resultType = .objectIDs
        let result = try context.performAndWait { try context.execute(request) }
        #expect(result.count == 1 && result.objectIDs == [gone])
        #expect(Set(result.changes.deleted) == Set([gone] + goneTasks))
        #expect(try storedTasks(container).keys.sorted() == ["b1"])
        ManagedObjectContext.mergeChanges(fromRemoteContextSave: result.changes, into: [live])
        live.performAndWait {
            #expect(live.object(with: goneTasks[0]).isInaccessible)
        }
        try context.performAndWait { () throws in
            #expect(try context.existingObject(with: kept).objectIDs(forKey: "tasks") == keptTasks)
        }
    }

    @Test("a batch delete that reaches a deny rule deletes nothing")
    func deleteDenied() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let (_, tasks) = try Fixtures.seedProject(context, name: "P", taskTitles: ["a"])
        try context.performAndWait { () throws in
            for label in ["free1", "used", "free2"] {
                let tag = context.insertNewObject(forEntityName: "Tag")
                tag.setValue(label, forKey: "label")
                if label == "used" { tag.addObject(context.object(with: tasks[0]), toKey: "tasks") }
            }
            try context.save()
        }
        var request = BatchDeleteRequest(entityName: "Tag", predicate: nil)
        request.chunkSize = 1
        #expect {
            try context.performAndWait { try context.execute(request) }
        } throws: { error in
            guard case .save(.validation(let errors)) = error as? BatchError else { return false }
            return errors.map(\.code) == [.deleteDenied]
        }
        let count = try context.performAndWait { try context.count(for: FetchRequest(entityName: "Tag")) }
        #expect(count == 3)
    }

    @Test("inside a group commit a failing batch rolls back alone, and merging contexts never hear of it")
    func failingBatchInsideGroup() throws {
        let store = TemporaryStore()
        let container = try Fixtures.container(.path(store.url.path))
        let writer = ManagedObjectContext(coordinator: container.coordinator, name: "writer", readsThroughWriter: true)
        let watcher = container.newBackgroundContext(name: "watcher")
        watcher.performAndWait { watcher.automaticallyMergesChangesFromParent = true }
        let told = try writer.performAndWait { () throws -> [Int] in
            try container.coordinator.performGroupCommit(in: writer) { group in
                var told: [Int] = []
                let unit = writer.insertNewObject(forEntityName: "Task")
                unit.setValue("unit", forKey: "title")
                try writer.save()
                told.append(group.committedSaves.count)
                var bad = BatchInsertRequest(entityName: "Task", objects: [task("b1"), task("b2"), task("b3", priority: 8)])
                bad.chunkSize = 1
                #expect(throws: BatchError.self) { try writer.execute(bad) }
                told.append(group.committedSaves.count)
                var good = BatchUpdateRequest(entityName: "Task", predicate: nil, propertiesToUpdate: ["priority": .attribute(.integer(1))])
                good.chunkSize = 1
                #expect(try writer.execute(good).count == 1)
                told.append(group.committedSaves.count)
                return told
            }
        }
        // b1 and b2 were saved in the group before b3 failed: undone, and never to be merged.
        #expect(told == [1, 1, 2])
        #expect(try storedTasks(container) == ["unit": 1])
    }
}
