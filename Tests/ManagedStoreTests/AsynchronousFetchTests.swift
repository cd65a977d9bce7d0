import Dispatch
import Foundation
import Synchronization
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite

@Suite("Asynchronous fetch")
struct AsynchronousFetchTests {
    static func container(tasks: Int) throws -> (TemporaryStore, PersistentContainer) {
        let store = TemporaryStore()
        let container = try Fixtures.container(.path(store.url.path))
        try LongResultFixture.seed(container.newBackgroundContext(), count: tasks)
        return (store, container)
    }

    /// The twin of the plain fetch: same IDs, same order, for every request shape and page
    /// size, with and without unsaved changes, in a root context and in a child.
    /// A store file streams one statement in a snapshot; an in-memory store pages by cursor.
    @Test("an asynchronous fetch answers what fetchObjectIDs answers", arguments: [true, false])
    func twinOfPlainFetch(storeFile: Bool) async throws {
        let store = TemporaryStore()
        defer { withExtendedLifetime(store) {} }  // the store's folder goes with it
        let container = try Fixtures.container(storeFile ? .path(store.url.path) : .inMemory)
        for context in try LongResultFixture.twinContexts(container) {
            for request in try LongResultFixture.requests {
                let expected = try context.performAndWait { try context.fetchObjectIDs(request) }
                for pageSize in [1, 7, 1000] {
                    let ids = try await context.fetchObjectIDs(AsynchronousFetchRequest(request, pageSize: pageSize))
                    #expect(ids == expected, "\(context.name) \(request) page \(pageSize)")
                }
            }
        }
    }

    @Test("a cursor in the request is where the asynchronous fetch starts")
    func startsAfterCursor() async throws {
        let (store, container) = try Self.container(tasks: 40)
        defer { withExtendedLifetime(store) {} }  // the store's folder goes with it
        let context = container.newBackgroundContext()
        var request = FetchRequest(entityName: "Task", sortDescriptors: [ObjectSortDescriptor("estimate"), ObjectSortDescriptor("title")])
        let expected = try context.performAndWait { () throws -> [ManagedObjectID] in
            let first = try context.fetch(request)
            request.after = try context.cursor(after: first[11], for: request)
            return Array(first.dropFirst(12).map(\.objectID))
        }
        #expect(try await context.fetchObjectIDs(AsynchronousFetchRequest(request, pageSize: 5)) == expected)
    }

    @Test("progress is reported after each page, ending at the total")
    func progressPerPage() async throws {
        let (store, container) = try Self.container(tasks: 25)
        defer { withExtendedLifetime(store) {} }  // the store's folder goes with it
        let context = container.newBackgroundContext()
        let reports = Mutex<[FetchProgress]>([])
        let ids = try await context.fetchObjectIDs(AsynchronousFetchRequest(FetchRequest(entityName: "Task"), pageSize: 10)) { progress in
            reports.withLock { $0.append(progress) }
        }
        #expect(ids.count == 25)
        #expect(reports.withLock { $0 }.map(\.description) == ["0 of 25", "10 of 25", "20 of 25", "25 of 25"])
        #expect(reports.withLock { $0 }.last?.fractionCompleted == 1)
    }

    @Test("other blocks of the context run between pages")
    func queueIsFreeBetweenPages() async throws {
        let (store, container) = try Self.container(tasks: 30)
        defer { withExtendedLifetime(store) {} }  // the store's folder goes with it
        let context = container.newBackgroundContext()
        let log = Mutex<[String]>([])
        let otherQueued = DispatchSemaphore(value: 0)
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            context.execute(AsynchronousFetchRequest(FetchRequest(entityName: "Task"), pageSize: 10), progress: { progress in
                log.withLock { $0.append("page \(progress.completedCount)") }
                // The first page ends only once the other block is queued (or 10 s have passed).
                if progress.completedCount == 10 { _ = otherQueued.wait(timeout: .now() + 10) }
            }, completion: { _ in
                log.withLock { $0.append("done") }
                done.resume()
            })
            // Queued while the first page runs (the queue is first in, first out): ahead of the second.
            context.queue.async { log.withLock { $0.append("other block") } }
            otherQueued.signal()
        }
        let entries = log.withLock { $0 }
        #expect(entries == ["page 0", "page 10", "other block", "page 20", "page 30", "done"])
    }

    /// Pages of a context reading a store file come from one snapshot: what another context
    /// saves after the first page is not seen, and nothing is skipped or repeated.
    @Test("every page reads the snapshot the fetch began with")
    func oneSnapshot() async throws {
        let (store, container) = try Self.container(tasks: 30)
        defer { withExtendedLifetime(store) {} }  // the store's folder goes with it
        let reader = container.newBackgroundContext(name: "reader")
        let request = FetchRequest(entityName: "Task", sortDescriptors: [ObjectSortDescriptor("title")])
        let before = try reader.performAndWait { try reader.fetchObjectIDs(request) }
        let writer = container.newBackgroundContext(name: "writer")
        let wrote = Mutex(false)
        let ids = try await reader.fetchObjectIDs(AsynchronousFetchRequest(request, pageSize: 10)) { progress in
            guard progress.completedCount == 10, !wrote.withLock({ $0 }) else { return }
            wrote.withLock { $0 = true }
            // Between the first and second page: delete the first two, add one at the front.
            try? writer.performAndWait {
                let all = try writer.fetch(request)
                writer.delete(all[0])
                writer.delete(all[15])
                let task = writer.insertNewObject(forEntityName: "Task")
                task.setValue("AAA first", forKey: "title")
                try writer.save()
            }
        }
        #expect(wrote.withLock { $0 })
        #expect(ids == before)
        // A new fetch sees the writer's save.
        let after = try reader.performAndWait { try reader.fetchObjectIDs(request) }
        #expect(after.count == 29)
    }

    @Test("cancel() stops the fetch before its next page")
    func cancelThroughHandle() async throws {
        let (store, container) = try Self.container(tasks: 50)
        defer { withExtendedLifetime(store) {} }  // the store's folder goes with it
        let context = container.newBackgroundContext()
        let handle = Mutex<AsynchronousFetch?>(nil)
        let pages = Mutex(0)
        let ready = DispatchSemaphore(value: 0)
        let result = await withCheckedContinuation { (done: CheckedContinuation<Result<Int, FetchError>, Never>) in
            let fetch = context.execute(AsynchronousFetchRequest(FetchRequest(entityName: "Task"), pageSize: 10), progress: { progress in
                guard progress.completedCount > 0 else { return }
                pages.withLock { $0 += 1 }
                _ = ready.wait(timeout: .now() + 10)  // the handle is stored before the first page ends
                handle.withLock { $0?.cancel() }
            }, completion: { result in done.resume(returning: result.map(\.count)) })
            handle.withLock { $0 = fetch }
            ready.signal()
        }
        #expect(result == .failure(.cancelled))
        #expect(pages.withLock { $0 } == 1)
        #expect(handle.withLock { $0 }?.progress.completedCount == 10)
    }

    @Test("cancelling the calling task stops the fetch with FetchError.cancelled")
    func cancelThroughTask() async throws {
        let (store, container) = try Self.container(tasks: 50)
        defer { withExtendedLifetime(store) {} }  // the store's folder goes with it
        let context = container.newBackgroundContext()
        // The task is cancelled from the first page's progress, on the context's queue, before
        // the next page. (Cancelled from the test's own task, it once was not in time: with the
        // pool's two threads busy in other tests, the test's task was not resumed for a minute,
        // and the fetch went on to its end.)
        let cancelling = TaskCanceller()
        let task = Task { () async throws(FetchError) -> [ManagedObjectID] in
            try await context.fetchObjectIDs(AsynchronousFetchRequest(FetchRequest(entityName: "Task"), pageSize: 10)) { progress in
                guard progress.completedCount == 10 else { return }
                cancelling.cancelWhenKnown()
            }
        }
        cancelling.know { task.cancel() }
        do {
            let ids = try await task.value
            Issue.record("the fetch ended with \(ids.count) IDs instead of being cancelled")
        } catch {
            #expect(error as? FetchError == .cancelled)
        }
    }

    @Test("the completion hands over objects on the context's queue, read a batch at a time")
    func completionWithObjects() async throws {
        let (store, container) = try Self.container(tasks: 30)
        defer { withExtendedLifetime(store) {} }  // the store's folder goes with it
        let context = container.newBackgroundContext()
        var request = FetchRequest(entityName: "Task", predicate: try ObjectPredicate(format: "priority >= 2"),
                                   sortDescriptors: [ObjectSortDescriptor("title")])
        request.fetchBatchSize = 4
        let other = container.newBackgroundContext(name: "other")
        let expected = try other.performAndWait { LongResultFixture.describe(try other.fetch(request)) }
        let seen = await withCheckedContinuation { (done: CheckedContinuation<[String], Never>) in
            context.execute(AsynchronousFetchRequest(request, pageSize: 3)) { result in
                #expect(context.isOnQueue)
                let objects = (try? result.get()) ?? []
                #expect(objects.count > 4 && objects.dropFirst(4).allSatisfy { $0.isFault })
                done.resume(returning: LongResultFixture.describe(objects))
            }
        }
        #expect(seen == expected)
    }

    @Test("bad requests fail with the fetch's typed error")
    func badRequests() async throws {
        let (store, container) = try Self.container(tasks: 3)
        defer { withExtendedLifetime(store) {} }  // the store's folder goes with it
        let context = container.newBackgroundContext()
        await #expect(throws: FetchError.unknownEntity("Nope")) {
            try await context.fetchObjectIDs(AsynchronousFetchRequest(FetchRequest(entityName: "Nope")))
        }
        await #expect(throws: FetchError.self) {
            try await context.fetchObjectIDs(AsynchronousFetchRequest(FetchRequest(entityName: "Task"), pageSize: 0))
        }
        await #expect(throws: FetchError.self) {
            try await context.fetchObjectIDs(AsynchronousFetchRequest(FetchRequest(entityName: "Task", predicate: try ObjectPredicate(format: "nope == 1"))))
        }
    }
}

/// Cancels a task from another thread once the task is known: `cancelWhenKnown` waits (on its
/// own thread, not the test's pool) until `know` has said how.
///
/// `@unchecked Sendable`: `cancel` is written once, before `known` is signalled, and read only
/// after waiting for that signal.
private final class TaskCanceller: @unchecked Sendable {
    private var cancel: (@Sendable () -> Void)?
    private let known = DispatchSemaphore(value: 0)

    func know(_ cancel: @escaping @Sendable () -> Void) {
        self.cancel = cancel
        known.signal()
    }

    func cancelWhenKnown() {
        known.wait()
        cancel?()
    }
}
