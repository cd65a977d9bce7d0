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
}
