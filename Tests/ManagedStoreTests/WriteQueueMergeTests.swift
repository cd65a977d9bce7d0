import Foundation
import Synchronization
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite

@Suite("A write queue that merges into a reading context")
struct WriteQueueMergeTests {
    @Test("each completion runs on the reading context's queue after its change was merged there")
    func completionAfterMerge() throws {
        let store = TemporaryStore()
        let container = try Fixtures.container(.path(store.url.path))
        let (_, taskIDs) = try Fixtures.seedProject(container.viewContext, name: "P", taskTitles: (0..<20).map { "t\($0)" })
        let view = container.viewContext
        view.performAndWait { for id in taskIDs { _ = view.object(with: id).value("title", as: String.self) } }  // loaded
        let queue = WriteQueue(coordinator: container.coordinator, mergingInto: view)
        queue.start()
        defer { queue.stop() }
        let seen = Mutex<[String?]>([])
        let done = DispatchSemaphore(value: 0)
        for (i, id) in taskIDs.enumerated() {
            queue.submit({ context -> Bool in
                context.object(with: id).setValue("renamed \(i)", forKey: "title")
                do { try context.save(); return true } catch { context.rollback(); return false }
            }, completion: { _ in
                // On the view's queue: its object already shows the change.
                let title = view.registeredObject(for: id)?.value("title", as: String.self)
                seen.withLock { $0.append(title) }
                done.signal()
            })
        }
        for _ in taskIDs { #expect(done.wait(timeout: .now() + 10) == .success) }
        #expect(Set(seen.withLock { $0 }) == Set(taskIDs.indices.map { "renamed \($0)" }))
    }

    /// A failure the work itself throws (not the store's).
    struct NotAllowed: Error, Equatable {}

    @Test("try await perform returns the work's value after its save is merged into the reading context")
    func performReturnsAfterMerge() async throws {
        let container = try Fixtures.container()  // in memory: each store of the test run
        let (projectID, _) = try Fixtures.seedProject(container.viewContext, name: "Apollo", taskTitles: [])
        let view = container.viewContext
        view.performAndWait { _ = view.object(with: projectID).value("name", as: String.self) }  // loaded
        let queue = WriteQueue(coordinator: container.coordinator, mergingInto: view)
        queue.start()
        defer { queue.stop() }
        let returned = try await queue.perform { context -> String in
            context.object(with: projectID).setValue("Artemis", forKey: "name")
            try context.save()
            return "renamed"
        }
        #expect(returned == "renamed")
        // Merged before perform returned: the object the view context holds shows the change.
        let name = view.performAndWait { view.registeredObject(for: projectID)?.value("name", as: String.self) }
        #expect(name == "Artemis")
    }

    @Test("a thrown error leaves the store and the reading context unchanged, even after the work saved; the next unit starts clean",
          arguments: [false, true])
    func thrownErrorChangesNothing(savesFirst: Bool) async throws {
        let container = try Fixtures.container()  // in memory: each store of the test run
        let (projectID, taskIDs) = try Fixtures.seedProject(container.viewContext, name: "P", taskTitles: ["a", "b"])
        let view = container.viewContext
        let queue = WriteQueue(coordinator: container.coordinator, mergingInto: view)
        queue.start()
        defer { queue.stop() }
        await #expect(throws: NotAllowed.self) {
            try await queue.perform { context -> Int in
                context.object(with: taskIDs[0]).setValue("renamed", forKey: "title")
                let extra = context.insertNewObject(forEntityName: "Project")
                extra.setValue("Gemini", forKey: "name")
                if savesFirst { try context.save() }
                context.delete(context.object(with: taskIDs[1]))
                throw NotAllowed()
            }
        }
        // The store: as it was.
        let reader = container.newBackgroundContext()
        let (titles, projects) = try reader.performAndWait {
            (try reader.fetch(FetchRequest(entityName: "Task", sortDescriptors: [ObjectSortDescriptor("title")])).map { $0.value("title", as: String.self) },
             try reader.fetch(FetchRequest(entityName: "Project")).map { $0.value("name", as: String.self) })
        }
        #expect(titles == ["a", "b"] && projects == ["P"])
        // The reading context: nothing merged, nothing changed.
        let (viewTitle, viewHasChanges, viewRegistersGemini) = view.performAndWait {
            (view.object(with: taskIDs[0]).value("title", as: String.self), view.hasChanges,
             view.registeredObjects.contains { $0.entityName == "Project" && $0.objectID != projectID })
        }
        #expect(viewTitle == "a" && !viewHasChanges && !viewRegistersGemini)
        // The next unit starts from the store, not from what the failed one left in memory.
        let count = try await queue.perform { context in try context.count(for: FetchRequest(entityName: "Project")) }
        #expect(count == 1)
        let renamed = try await queue.perform { context -> String? in
            let task = context.object(with: taskIDs[1])
            task.setValue("b2", forKey: "title")
            try context.save()
            return context.object(with: taskIDs[0]).value("title", as: String.self)
        }
        #expect(renamed == "a")
    }

    @Test("submit(_:result:) hands a failed save's error to its result, and the store keeps nothing of it")
    func throwingSubmit() throws {
        let container = try Fixtures.container()  // in memory: each store of the test run
        let queue = WriteQueue(coordinator: container.coordinator)
        queue.start()
        defer { queue.stop() }
        let outcome = Mutex<Result<Int, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        queue.submit({ context -> Int in
            _ = context.insertNewObject(forEntityName: "Project")  // name is mandatory: the save fails
            try context.save()
            return 1
        }, result: { result in
            outcome.withLock { $0 = result }
            done.signal()
        })
        #expect(done.wait(timeout: .now() + 10) == .success)
        let failure = outcome.withLock { value -> (any Error)? in
            if case .failure(let error)? = value { return error } else { return nil }
        }
        #expect(failure is SaveError, "\(String(describing: failure))")
        let context = container.newBackgroundContext()
        #expect(try context.performAndWait { try context.count(for: FetchRequest(entityName: "Project")) } == 0)
        queue.stop()
        // A stopped queue runs nothing: perform throws notRun.
        let stopped = Mutex<(any Error)?>(nil)
        queue.submit({ _ in 1 }, result: { result in if case .failure(let error) = result { stopped.withLock { $0 = error } } })
        #expect(stopped.withLock { $0 as? WriteQueueError } == .notRun)
    }
}
