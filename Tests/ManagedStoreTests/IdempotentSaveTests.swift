import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite

/// Saves under an idempotency key, without HTTP: a sync client or a job queue that saves again
/// after losing track writes once.
@Suite("Idempotent saves")
struct IdempotentSaveTests {
    static func key(_ text: String) throws -> IdempotencyKey { try #require(IdempotencyKey(text)) }

    static func taskCount(_ container: PersistentContainer) throws -> Int {
        let context = container.newBackgroundContext()
        return try context.performAndWait { try context.count(for: FetchRequest(entityName: "Task")) }
    }

    @Test("keys are 1 to 255 visible ASCII characters")
    func keyRules() {
        #expect(IdempotencyKey("a") != nil)
        #expect(IdempotencyKey(String(repeating: "x", count: 255)) != nil)
        #expect(IdempotencyKey("!~0123-abc_XYZ") != nil)
        for bad in ["", String(repeating: "x", count: 256), "a b", "a\tb", "é", "a\u{7F}"] {
            #expect(IdempotencyKey(bad) == nil, "\(bad.debugDescription)")
        }
    }

    @Test("the same save twice under a key: written once, the retry replays the first save's changes and discards its own")
    func saveOnce() throws {
        let store = TemporaryStore()
        let container = try Fixtures.container(.sqlite(store.url))
        let context = container.newBackgroundContext()
        let key = try Self.key("job-17")
        let first = try context.performAndWait { () throws -> IdempotentSave in
            context.insertNewObject(forEntityName: "Task").setValue("report", forKey: "title")
            return try context.save(idempotencyKey: key, fingerprint: Array("job-17 v1".utf8))
        }
        #expect(!first.isReplay)
        #expect(first.changes.inserted.count == 1)
        // The job runs again (it was handed out twice): the same change, the same key.
        let retry = try context.performAndWait { () throws -> (IdempotentSave, Bool) in
            context.insertNewObject(forEntityName: "Task").setValue("report", forKey: "title")
            let saved = try context.save(idempotencyKey: key, fingerprint: Array("job-17 v1".utf8))
            return (saved, context.hasChanges)
        }
        #expect(retry.0.isReplay)
        #expect(retry.0.changes.inserted == first.changes.inserted, "the first save's object IDs")
        #expect(retry.0.changes.token == first.changes.token)
        #expect(!retry.1, "the retry's own changes were discarded")
        #expect(try Self.taskCount(container) == 1)
        #expect(try container.coordinator.idempotencyRecordCount() == 1)
        #expect(try container.coordinator.history(after: .zero).count == 1, "one save in the history")
    }

    @Test("another fingerprint under a used key throws idempotencyKeyReused and keeps the context's changes")
    func keyReused() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let key = try Self.key("k")
        try context.performAndWait { () throws in
            context.insertNewObject(forEntityName: "Task").setValue("a", forKey: "title")
            _ = try context.save(idempotencyKey: key, fingerprint: [1])
            context.insertNewObject(forEntityName: "Task").setValue("b", forKey: "title")
            #expect(throws: SaveError.self) { try context.save(idempotencyKey: key, fingerprint: [2]) }
            do throws(SaveError) {
                _ = try context.save(idempotencyKey: key, fingerprint: [2])
            } catch {
                guard case SaveError.idempotencyKeyReused(let reused) = error else { Issue.record("\(error)"); return }
                #expect(reused == key)
            }
            #expect(context.hasChanges, "the refused save's changes are kept")
        }
        #expect(try Self.taskCount(container) == 1)
    }

    @Test("a child context cannot save under a key: a typed error, its changes kept, nothing recorded or written")
    func childContextRefused() throws {
        let container = try Fixtures.container()
        let parent = container.newBackgroundContext()
        let child = ManagedObjectContext(parent: parent, name: "child")
        let key = try Self.key("child")
        try child.performAndWait { () throws in
            child.insertNewObject(forEntityName: "Task").setValue("a", forKey: "title")
            do throws(SaveError) {
                _ = try child.save(idempotencyKey: key)
                Issue.record("the child's keyed save went through")
            } catch {
                guard case .idempotencyKeyInChildContext = error else { Issue.record("\(error)"); return }
            }
            #expect(child.hasChanges, "the refused save's changes are kept")
        }
        #expect(!parent.performAndWait { parent.hasChanges }, "nothing reached the parent")
        #expect(try Self.taskCount(container) == 0)
        #expect(try container.coordinator.idempotencyRecordCount() == 0)
    }

    @Test("a save that fails records nothing: the next save under the key is carried out")
    func failureNotRecorded() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let key = try Self.key("retry-after-fix")
        try context.performAndWait { () throws in
            let task = context.insertNewObject(forEntityName: "Task")
            task.setValue(Int64(99), forKey: "priority")  // out of range, and no title
            #expect(throws: SaveError.self) { try context.save(idempotencyKey: key) }
            #expect(try context.coordinator.idempotencyRecord(for: key) == nil)
            task.setValue(Int64(2), forKey: "priority")
            task.setValue("fixed", forKey: "title")
            #expect(try !context.save(idempotencyKey: key).isReplay)
        }
        #expect(try Self.taskCount(container) == 1)
    }

    @Test("the record and the write are one: work that throws after saving keeps neither")
    func recordAndWriteTogether() throws {
        let store = TemporaryStore()
        let container = try Fixtures.container(.sqlite(store.url))
        let context = container.newBackgroundContext()
        struct Interrupted: Error {}
        let key = try Self.key("atomic")
        try context.performAndWait { () throws in
            #expect(throws: Interrupted.self) {
                _ = try context.performOnce(key: key, fingerprint: []) { () throws -> (result: Int, answer: [UInt8]?) in
                    context.insertNewObject(forEntityName: "Task").setValue("half", forKey: "title")
                    try context.save()
                    throw Interrupted()
                }
            }
            context.reset()
        }
        #expect(try Self.taskCount(container) == 0)
        #expect(try container.coordinator.idempotencyRecord(for: key) == nil)
        #expect(try container.coordinator.idempotencyRecordCount() == 0)
    }

    @Test("in a group commit, work that throws after saving undoes the group's transaction: isIntact turns false and nothing of it is kept")
    func throwAfterSavingInGroup() throws {
        let store = TemporaryStore()
        let container = try Fixtures.container(.sqlite(store.url))
        let context = ManagedObjectContext(coordinator: container.coordinator, name: "writer", readsThroughWriter: true)
        struct Interrupted: Error {}
        try context.performAndWait { () throws in
            try container.coordinator.performGroupCommit(in: context) { (group: GroupCommit) throws in
                group.markUnit()
                _ = try context.performOnce(key: try Self.key("first"), fingerprint: []) { () throws -> (result: Int, answer: [UInt8]?) in
                    context.insertNewObject(forEntityName: "Task").setValue("kept until the group fails", forKey: "title")
                    try context.save()
                    return (1, [1])
                }
                #expect(group.isIntact)
                group.markUnit()
                #expect(throws: Interrupted.self) {
                    _ = try context.performOnce(key: try Self.key("second"), fingerprint: []) { () throws -> (result: Int, answer: [UInt8]?) in
                        context.insertNewObject(forEntityName: "Task").setValue("half", forKey: "title")
                        try context.save()
                        throw Interrupted()
                    }
                }
                #expect(!group.isIntact, "the second unit's save could not be undone alone")
                #expect(group.wroteSinceMark)
            }
            context.reset()
        }
        #expect(try Self.taskCount(container) == 0, "the first unit went with the transaction")
        #expect(try container.coordinator.idempotencyRecordCount() == 0)
    }

    @Test("in a group commit, work that throws without writing leaves the group intact: the other units are kept")
    func throwWithoutWritingInGroup() throws {
        let container = try Fixtures.container()
        let context = ManagedObjectContext(coordinator: container.coordinator, name: "writer", readsThroughWriter: true)
        struct Refused: Error {}
        try context.performAndWait { () throws in
            try container.coordinator.performGroupCommit(in: context) { (group: GroupCommit) throws in
                group.markUnit()
                _ = try context.performOnce(key: try Self.key("kept"), fingerprint: []) { () throws -> (result: Int, answer: [UInt8]?) in
                    context.insertNewObject(forEntityName: "Task").setValue("kept", forKey: "title")
                    try context.save()
                    return (1, [1])
                }
                group.markUnit()
                #expect(throws: Refused.self) {
                    _ = try context.performOnce(key: try Self.key("refused"), fingerprint: []) { () throws -> (result: Int, answer: [UInt8]?) in
                        throw Refused()
                    }
                }
                #expect(group.isIntact)
                #expect(!group.wroteSinceMark)
            }
        }
        #expect(try Self.taskCount(container) == 1)
        #expect(try container.coordinator.idempotencyRecordCount() == 1)
    }

    @Test("a record that cannot be stored takes its write with it, alone or in a group (the INSERT made to fail by a trigger)")
    func recordStoreFails() throws {
        let store = TemporaryStore()
        let container = try Fixtures.container(.sqlite(store.url))
        try container.coordinator.sqlite.writer.withConnection { connection in
            try connection.execute(#"CREATE TEMP TRIGGER "refuse_record" BEFORE INSERT ON "_idempotency" WHEN NEW."key" = 'refused' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"#)
        }
        let context = ManagedObjectContext(coordinator: container.coordinator, name: "writer", readsThroughWriter: true)
        func keyedInsert(_ key: String, _ title: String) throws {
            _ = try context.performOnce(key: try Self.key(key), fingerprint: []) { () throws -> (result: Int, answer: [UInt8]?) in
                context.insertNewObject(forEntityName: "Task").setValue(title, forKey: "title")
                try context.save()
                return (1, [1])
            }
        }
        try context.performAndWait { () throws in
            // Alone: its own transaction is rolled back.
            #expect(throws: (any Error).self) { try keyedInsert("refused", "alone") }
            context.reset()
            // In a group after a unit that wrote: the group's transaction goes.
            try container.coordinator.performGroupCommit(in: context) { (group: GroupCommit) throws in
                group.markUnit()
                try keyedInsert("fine", "before")
                group.markUnit()
                #expect(throws: (any Error).self) { try keyedInsert("refused", "in a group") }
                #expect(!group.isIntact)
            }
            context.reset()
            try keyedInsert("after", "after")
        }
        let reader = container.newBackgroundContext()
        let titles = try reader.performAndWait { () throws -> [String] in
            try reader.fetch(FetchRequest(entityName: "Task")).compactMap { $0.value("title", as: String.self) }
        }
        #expect(titles == ["after"])
        #expect(try container.coordinator.idempotencyRecordCount() == 1)
    }

    @Test("two units with one key in one group commit: the first writes, the second replays it")
    func duplicatesInOneGroup() throws {
        let store = TemporaryStore()
        let container = try Fixtures.container(.sqlite(store.url))
        let queue = WriteQueue(coordinator: container.coordinator)
        let key = try Self.key("queued-twice")
        let outcomes = LockedResults()
        let done = DispatchGroup()
        // Both are queued before the queue starts: they run in one group, one transaction.
        for _ in 0..<2 {
            done.enter()
            queue.submit({ context -> String in
                let outcome = try? context.performOnce(key: key, fingerprint: [7]) { () throws -> (result: String, answer: [UInt8]?) in
                    context.insertNewObject(forEntityName: "Task").setValue("queued", forKey: "title")
                    let saved = try context.save()
                    return (saved.inserted[0].description, Array(saved.inserted[0].description.utf8))
                }
                switch outcome {
                case .performed(let id)?: return "performed \(id)"
                case .replayed(let record)?: return "replayed \(String(decoding: record.answer, as: UTF8.self))"
                default: return "failed"
                }
            }, completion: { outcome in
                if case .completed(let text) = outcome { outcomes.add(text) }
                done.leave()
            })
        }
        queue.start()
        #expect(done.wait(timeout: .now() + 10) == .success)
        queue.stop()
        #expect(outcomes.all.sorted() == ["performed Task/1", "replayed Task/1"])
        #expect(queue.counters.transactions == 1, "the duplicates shared one transaction")
        #expect(try Self.taskCount(container) == 1)
    }

    @Test("a replay of a record stored earlier in the same transaction counts as writing: a failed COMMIT must undo it too")
    func replayDependsOnTransaction() throws {
        let container = try Fixtures.container()
        let context = ManagedObjectContext(coordinator: container.coordinator, name: "writer", readsThroughWriter: true)
        let key = try Self.key("in-group")
        try context.performAndWait { () throws in
            try container.coordinator.performGroupCommit(in: context) { (group: GroupCommit) throws in
                func unit() throws -> Bool {
                    group.markUnit()
                    let outcome = try context.performOnce(key: key, fingerprint: []) { () throws -> (result: Int, answer: [UInt8]?) in
                        context.insertNewObject(forEntityName: "Tag").setValue("t", forKey: "label")
                        try context.save()
                        return (1, [1])
                    }
                    if case .replayed = outcome { return true }
                    return false
                }
                #expect(try !unit())
                #expect(group.wroteSinceMark)
                #expect(try unit(), "the second unit replays")
                #expect(group.wroteSinceMark, "and stands or falls with the transaction")
            }
            // Committed now: a replay in a later transaction depends on nothing uncommitted,
            // even after that transaction stored a record of its own (a newer row).
            try container.coordinator.performGroupCommit(in: context) { (group: GroupCommit) throws in
                group.markUnit()
                _ = try context.performOnce(key: try Self.key("later"), fingerprint: []) { () throws -> (result: Int, answer: [UInt8]?) in
                    context.insertNewObject(forEntityName: "Tag").setValue("u", forKey: "label")
                    try context.save()
                    return (2, [2])
                }
                #expect(group.wroteSinceMark)
                group.markUnit()
                _ = try context.performOnce(key: key, fingerprint: []) { () throws -> (result: Int, answer: [UInt8]?) in (0, nil) }
                #expect(!group.wroteSinceMark)
            }
        }
    }

    @Test("a record older than the key lifetime is gone for the save and deleted by expiry; records survive reopening")
    func expiryAndReopen() throws {
        let store = TemporaryStore()
        var description = StoreDescription.sqlite(store.url)
        let key = try Self.key("nightly")
        do {
            let container = try Fixtures.container(description)
            let context = container.newBackgroundContext()
            try context.performAndWait { () throws in
                context.insertNewObject(forEntityName: "Task").setValue("n", forKey: "title")
                _ = try context.save(idempotencyKey: key)
            }
        }
        // Reopened: the key is known.
        do {
            let container = try Fixtures.container(description)
            #expect(try container.coordinator.idempotencyRecord(for: key) != nil)
            #expect(try container.coordinator.deleteExpiredIdempotencyRecords() == 0)
        }
        // Reopened with a lifetime of one second, two seconds later: expired.
        Thread.sleep(forTimeInterval: 1.1)
        description.idempotencyKeyLifetime = .seconds(1)
        let container = try Fixtures.container(description)
        #expect(try container.coordinator.idempotencyRecord(for: key) == nil, "past its lifetime a record is not used")
        let context = container.newBackgroundContext()
        let again = try context.performAndWait { () throws -> IdempotentSave in
            context.insertNewObject(forEntityName: "Task").setValue("n", forKey: "title")
            return try context.save(idempotencyKey: key)
        }
        #expect(!again.isReplay, "an expired key is carried out afresh")
        #expect(try Self.taskCount(container) == 2)
        #expect(try container.coordinator.idempotencyRecordCount() == 1, "the new save replaced the expired record")
        Thread.sleep(forTimeInterval: 1.1)
        #expect(try container.coordinator.deleteExpiredIdempotencyRecords(limit: 10) == 1)
        #expect(try container.coordinator.idempotencyRecordCount() == 0)
    }
}

/// Results gathered from the write queue's thread.
private final class LockedResults: @unchecked Sendable {
    // @unchecked Sendable: `items` is only touched under `lock`.
    private let lock = NSLock()
    private var items: [String] = []
    func add(_ item: String) { lock.lock(); items.append(item); lock.unlock() }
    var all: [String] { lock.lock(); defer { lock.unlock() }; return items }
}
