import Foundation
import Synchronization
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore

/// A merged save's inserts reach the merging context as Core Data's do: registered as faults and
/// listed as inserted in its objects-did-change notification, so that a list on screen learns
/// of a new row from the notification alone.
@Suite("Merged saves report their inserts")
struct MergedInsertTests {
    /// A writer's save of a project with two tasks.
    static func insertProject(_ writer: ManagedObjectContext, name: String) throws -> SavedChanges {
        try writer.performAndWait {
            let project = writer.insertNewObject(forEntityName: "Project")
            project.setValue(name, forKey: "name")
            for title in ["\(name) 1", "\(name) 2"] {
                let task = writer.insertNewObject(forEntityName: "Task")
                task.setValue(title, forKey: "title")
                task.setObject(project, forKey: "project")
            }
            return try writer.save()
        }
    }

    @Test("mergeChanges(fromContextDidSave:) registers each inserted object as a fault and lists it as inserted, once")
    func insertsRegisteredAndListed() throws {
        let container = try Fixtures.container()
        let reader = container.viewContext
        let saved = try Self.insertProject(container.newBackgroundContext(), name: "Apollo")
        #expect(saved.inserted.count == 3)
        let log = NotificationLog()
        reader.addObserver { log.append($0) }
        reader.performAndWait {
            reader.mergeChanges(fromContextDidSave: saved)
            for id in saved.inserted {
                let object = reader.registeredObject(for: id)
                #expect(object?.isFault == true, "\(id) is registered as a fault")
            }
            // Used, the faults read what the writer saved.
            let titles = saved.inserted.filter { $0.entityName == "Task" }.compactMap { reader.object(with: $0).value("title", as: String.self) }
            #expect(titles.sorted() == ["Apollo 1", "Apollo 2"])
        }
        #expect(log.objectChanges.map(\.inserted) == [saved.inserted.sortedByEntityAndKey()])
        // The same save again: nothing is new to the reader, so nothing is listed.
        log.clear()
        reader.performAndWait { reader.mergeChanges(fromContextDidSave: saved) }
        #expect(log.objectChanges.allSatisfy { $0.inserted.isEmpty }, "\(log.objectChanges)")
    }

    @Test("a context that does not retain its objects lists merged inserts without keeping faults nobody holds")
    func notRetainedListedOnly() throws {
        let container = try Fixtures.container()
        let reader = container.newBackgroundContext(name: "lean")
        reader.performAndWait { reader.retainsRegisteredObjects = false }
        let saved = try Self.insertProject(container.newBackgroundContext(), name: "Gemini")
        let log = NotificationLog()
        reader.addObserver { log.append($0) }
        reader.performAndWait {
            reader.mergeChanges(fromContextDidSave: saved)
            #expect(saved.inserted.allSatisfy { reader.registeredObject(for: $0) == nil })
        }
        #expect(log.objectChanges.map(\.inserted) == [saved.inserted.sortedByEntityAndKey()])
    }

    @Test("a list kept current from notifications alone follows every write of a write queue")
    func listFollowsWriteQueue() async throws {
        let container = try Fixtures.container()
        let view = container.viewContext
        let queue = WriteQueue(coordinator: container.coordinator, mergingInto: view)
        queue.start()
        defer { queue.stop() }
        // The list: every task's title by ID, changed only by the view's notifications.
        let shown = Mutex<[ManagedObjectID: String]>([:])
        view.addObserver { notification in
            guard case .objectsDidChange(let changes) = notification else { return }
            for id in changes.inserted + changes.refreshed where id.entityName == "Task" {
                let title = view.object(with: id).value("title", as: String.self) ?? ""
                shown.withLock { $0[id] = title }
            }
            for id in changes.invalidated { _ = shown.withLock { $0.removeValue(forKey: id) } }
        }
        func fetched() throws -> [ManagedObjectID: String] {
            try view.performAndWait {
                Dictionary(uniqueKeysWithValues: try view.fetch(FetchRequest(entityName: "Task")).map {
                    ($0.objectID, $0.value("title", as: String.self) ?? "")
                })
            }
        }
        var generator = PredicateFuzzTests.SplitMix64(seed: 44)
        var written = 0
        for step in 0..<30 {
            let existing = Array(shown.withLock { $0.keys })
            let choice = existing.isEmpty ? 0 : generator.below(3)
            let target = existing.isEmpty ? nil : existing.sorted(by: ManagedObjectID.precedesByEntityAndKey)[generator.below(existing.count)]
            try await queue.perform { context in
                switch (choice, target) {
                case (1, let id?): context.object(with: id).setValue("renamed \(step)", forKey: "title")
                case (2, let id?): context.delete(context.object(with: id))
                default:
                    for n in 0..<2 {
                        let task = context.insertNewObject(forEntityName: "Task")
                        task.setValue("task \(step).\(n)", forKey: "title")
                    }
                }
                try context.save()
            }
            written += 1
            // perform returned: the save is merged into the view, and the list took it in.
            let expected = try fetched()
            #expect(shown.withLock { $0 } == expected, "after step \(step) (\(choice))")
        }
        #expect(written == 30 && !shown.withLock { $0.isEmpty })
    }

    @Test("the notifications' async stream carries a merged save's inserts")
    func asyncStreamCarriesInserts() async throws {
        let container = try Fixtures.container()
        let view = container.viewContext
        view.performAndWait { view.automaticallyMergesChangesFromParent = true }
        let stream = view.notifications()
        let saved = try Self.insertProject(container.newBackgroundContext(), name: "Mercury")
        let received = await collect(stream) { if case .objectsDidChange(let changes) = $0 { !changes.inserted.isEmpty } else { false } }
        guard case .objectsDidChange(let changes) = received.last else { Issue.record("no merge within 10 s: \(received)"); return }
        #expect(changes.inserted == saved.inserted.sortedByEntityAndKey())
        view.performAndWait {
            #expect(view.object(with: saved.inserted[0]).value("name", as: String.self) == "Mercury")
            view.automaticallyMergesChangesFromParent = false
        }
    }

    @Test("a child that merges its parent's changes hears of a sibling's pushed inserts, by their temporary IDs, and reads them")
    func childHearsSiblingInserts() throws {
        let container = try Fixtures.container()
        let parent = container.newBackgroundContext(name: "parent")
        let listening = ManagedObjectContext(parent: parent, name: "listening")
        let writing = ManagedObjectContext(parent: parent, name: "writing")
        listening.performAndWait { listening.automaticallyMergesChangesFromParent = true }
        let log = NotificationLog()
        listening.addObserver { log.append($0) }
        let pushed = try writing.performAndWait {
            let tag = writing.insertNewObject(forEntityName: "Tag")
            tag.setValue("pushed", forKey: "label")
            return try writing.save()
        }
        #expect(pushed.inserted.count == 1 && pushed.inserted[0].isTemporaryID)
        // The merge is queued on the listening child's queue: a block after it sees it done.
        let label = listening.performAndWait { () -> String? in
            listening.registeredObject(for: pushed.inserted[0])?.value("label", as: String.self)
        }
        #expect(label == "pushed")
        #expect(log.objectChanges.contains { $0.inserted == pushed.inserted })
        listening.performAndWait { listening.automaticallyMergesChangesFromParent = false }
    }
}
