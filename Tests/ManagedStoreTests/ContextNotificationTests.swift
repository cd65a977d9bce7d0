import Foundation
import Synchronization
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite

/// Collects a context's notifications (observers run on the context's queue; tests read on theirs).
final class NotificationLog: Sendable {
    private let entries = Mutex<[ContextNotification]>([])
    var all: [ContextNotification] { entries.withLock { $0 } }
    func append(_ notification: ContextNotification) { entries.withLock { $0.append(notification) } }
    func clear() { entries.withLock { $0 = [] } }
    var objectChanges: [ObjectChanges] {
        all.compactMap { if case .objectsDidChange(let changes) = $0 { return changes } else { return nil } }
    }
}

/// Reads `stream` until `isLast` says a notification is the last one wanted, or until
/// `seconds` pass (then the reading task is cancelled, which ends the stream): a notification
/// that never comes fails the test instead of hanging it.
func collect(_ stream: AsyncStream<ContextNotification>, within seconds: Double = 10,
             until isLast: @escaping @Sendable (ContextNotification) -> Bool) async -> [ContextNotification] {
    await withTaskGroup(of: [ContextNotification]?.self) { group in
        group.addTask {
            var received: [ContextNotification] = []
            for await notification in stream {
                received.append(notification)
                if isLast(notification) { return received }
            }
            return received
        }
        group.addTask {
            try? await Task.sleep(for: .seconds(seconds))
            return nil
        }
        var result: [ContextNotification] = []
        for await finished in group {
            if let finished { result = finished }
            group.cancelAll()
            break
        }
        return result
    }
}

@Suite("Context notifications and merging saves")
struct ContextNotificationTests {
    @Test("objects-did-change tells a block's inserts, updates and deletes once, at the end of the block")
    func objectsDidChange() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let (projectID, taskIDs) = try Fixtures.seedProject(context, name: "P", taskTitles: ["a", "b"])
        let log = NotificationLog()
        let observation = context.addObserver { log.append($0) }
        let inserted = context.performAndWait { () -> ManagedObjectID in
            let task = context.insertNewObject(forEntityName: "Task")
            task.setValue("new", forKey: "title")
            let scratch = context.insertNewObject(forEntityName: "Task")
            context.delete(scratch)  // inserted and deleted before anyone heard: in no list
            context.object(with: taskIDs[0]).setValue("a2", forKey: "title")
            context.delete(context.object(with: taskIDs[1]))
            #expect(log.all.isEmpty, "nothing is told in the middle of a block")
            return task.objectID
        }
        var expected = ObjectChanges()
        expected.inserted = [inserted]
        expected.updated = [projectID, taskIDs[0]]  // the project loses task b (nullify)
        expected.deleted = [taskIDs[1]]
        #expect(log.all == [.objectsDidChange(expected)])

        log.clear()
        context.performAndWait {
            context.object(with: taskIDs[0]).setValue("a3", forKey: "title")
            context.processPendingChanges()
            var updated = ObjectChanges()
            updated.updated = [taskIDs[0]]
            #expect(log.all == [.objectsDidChange(updated)], "processPendingChanges tells at once")
            context.processPendingChanges()
        }
        #expect(log.all.count == 1, "nothing new, nothing told")

        observation.cancel()
        context.performAndWait { context.object(with: taskIDs[0]).setValue("a4", forKey: "title") }
        #expect(log.all.count == 1, "a cancelled observation hears nothing")
    }

    @Test("a save tells pending changes, then will-save, then did-save with what the save returned")
    func saveNotifications() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let log = NotificationLog()
        context.addObserver { log.append($0) }
        let saved = try context.performAndWait { () throws -> SavedChanges in
            let task = context.insertNewObject(forEntityName: "Task")
            task.setValue("t", forKey: "title")
            return try context.save()
        }
        #expect(saved.inserted.count == 1 && saved.token != nil)
        #expect(log.all.count == 3)
        guard log.all.count == 3 else { return }
        guard case .objectsDidChange(let changes) = log.all[0] else { Issue.record("first: \(log.all[0])"); return }
        #expect(changes.inserted.count == 1 && changes.inserted[0].isTemporaryID)
        #expect(log.all[1] == .willSave)
        #expect(log.all[2] == .didSave(saved))

        log.clear()
        try context.performAndWait { try context.save() }
        #expect(log.all.isEmpty, "a save with nothing to save tells nothing")
    }

    @Test("a refused save tells will-save but no did-save, and reset invalidates everything")
    func refusedSaveAndReset() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let log = NotificationLog()
        context.addObserver { log.append($0) }
        context.performAndWait {
            let task = context.insertNewObject(forEntityName: "Task")
            task.setValue(Int64(99), forKey: "priority")  // out of the model's range: validation refuses
            #expect(throws: SaveError.self) { try context.save() }
        }
        #expect(log.all.contains(.willSave))
        #expect(!log.all.contains { if case .didSave = $0 { true } else { false } })

        log.clear()
        context.performAndWait { context.reset() }
        var invalidated = ObjectChanges()
        invalidated.invalidatedAll = true
        #expect(log.all == [.objectsDidChange(invalidated)])
    }

    @Test("notifications as an async sequence")
    func asyncSequence() async throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let stream = context.notifications()
        let saved = try await context.perform { () throws -> SavedChanges in
            let task = context.insertNewObject(forEntityName: "Task")
            task.setValue("t", forKey: "title")
            return try context.save()
        }
        let received = await collect(stream) { if case .didSave = $0 { true } else { false } }
        #expect(received.count == 3)
        #expect(received.last == .didSave(saved))
    }

    @Test("mergeChanges(fromContextDidSave:) takes in updates under unsaved changes, and invalidates deletions")
    func mergeDidSave() throws {
        let container = try Fixtures.container()
        let reader = container.viewContext
        let writer = container.newBackgroundContext()
        let (_, taskIDs) = try Fixtures.seedProject(writer, name: "P", taskTitles: ["a", "b"])
        reader.performAndWait {
            let a = reader.object(with: taskIDs[0])
            _ = a.value("title", as: String.self)  // loaded at version 1
            a.setValue(Int64(3), forKey: "priority")  // an unsaved change of the reader's own
            _ = reader.object(with: taskIDs[1]).value("title", as: String.self)
        }
        let saved = try writer.performAndWait { () throws -> SavedChanges in
            writer.object(with: taskIDs[0]).setValue("a by writer", forKey: "title")
            writer.delete(writer.object(with: taskIDs[1]))
            return try writer.save()
        }
        let log = NotificationLog()
        reader.addObserver { log.append($0) }
        try reader.performAndWait {
            reader.mergeChanges(fromContextDidSave: saved)
            let a = reader.object(with: taskIDs[0])
            #expect(a.value("title", as: String.self) == "a by writer")
            #expect(a.value("priority", as: Int64.self) == 3, "the reader's unsaved change stays on top")
            #expect(a.version == 2)
            #expect(reader.object(with: taskIDs[1]).isInaccessible)
            try reader.save()  // based on version 2 now: no conflict
        }
        var expected = ObjectChanges()
        expected.refreshed = [taskIDs[0]]
        expected.invalidated = [taskIDs[1]]
        #expect(log.objectChanges.first == expected)
        try writer.performAndWait {
            writer.reset()
            let a = try writer.existingObject(with: taskIDs[0])
            #expect(a.value("title", as: String.self) == "a by writer" && a.value("priority", as: Int64.self) == 3)
        }
    }

    @Test("a remote change set, known by IDs only, merges into several live contexts")
    func remoteMerge() throws {
        let container = try Fixtures.container()
        let (_, taskIDs) = try Fixtures.seedProject(container.viewContext, name: "P", taskTitles: ["a"])
        let contexts = [container.newBackgroundContext(name: "one"), container.newBackgroundContext(name: "two")]
        for context in contexts {
            context.performAndWait { _ = context.object(with: taskIDs[0]).value("title", as: String.self) }
        }
        let other = container.newBackgroundContext()
        try other.performAndWait {
            other.object(with: taskIDs[0]).setValue("changed", forKey: "title")
            try other.save()
        }
        ManagedObjectContext.mergeChanges(fromRemoteContextSave: SavedChanges(updated: [taskIDs[0]]), into: contexts)
        for context in contexts {
            context.performAndWait { #expect(context.object(with: taskIDs[0]).value("title", as: String.self) == "changed") }
        }
    }

    @Test("automaticallyMergesChangesFromParent merges other contexts' committed saves, and only committed ones")
    func automaticMerging() async throws {
        let store = TemporaryStore()
        let container = try Fixtures.container(.path(store.url.path))
        let (_, taskIDs) = try Fixtures.seedProject(container.newBackgroundContext(), name: "P", taskTitles: ["a", "b"])
        let view = container.viewContext
        let stream = view.notifications()
        view.performAndWait {
            view.automaticallyMergesChangesFromParent = true
            for id in taskIDs { _ = view.object(with: id).value("title", as: String.self) }
        }
        let writer = container.newBackgroundContext(name: "writer")
        // A group that fails after a save writes nothing: the view must never hear of it.
        struct Abandon: Error {}
        #expect(throws: Abandon.self) {
            try writer.performAndWait {
                try container.coordinator.performGroupCommit(in: writer) {
                    writer.object(with: taskIDs[0]).setValue("never", forKey: "title")
                    try writer.save()
                    throw Abandon()
                }
            }
        }
        try writer.performAndWait {
            writer.rollback()
            try container.coordinator.performGroupCommit(in: writer) {
                writer.object(with: taskIDs[1]).setValue("b2", forKey: "title")
                try writer.save()
            }
        }
        let received = await collect(stream) { if case .objectsDidChange(let changes) = $0 { !changes.refreshed.isEmpty } else { false } }
        guard case .objectsDidChange(let first) = received.last else { Issue.record("no merge within 10 s: \(received)"); return }
        #expect(first.refreshed == [taskIDs[1]], "the abandoned group's save is never merged; the committed one is")
        view.performAndWait {
            #expect(view.object(with: taskIDs[1]).value("title", as: String.self) == "b2")
            #expect(view.object(with: taskIDs[0]).value("title", as: String.self) == "a")
            view.automaticallyMergesChangesFromParent = false
        }
    }
}
