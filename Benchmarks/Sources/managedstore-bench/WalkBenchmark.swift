import Foundation
import ManagedStore

/// Walking a long result (`--walk-only`), every variant in one run on one store:
/// - a fetch of every Task, ordered by title, walked reading each title: plain; with a fetch
///   batch size of 500 (every object made with the fetch, rows read a batch at a time as
///   walked); and `fetchBatched` (only IDs with the fetch, objects and rows a batch at a time);
/// - the same IDs from `fetchObjectIDs(_:)` run as one block on the context's queue, and from an
///   asynchronous fetch in pages of 1,000, with `ReaderTicker` fetching on that queue every
///   10 ms meanwhile: its longest stall is how long the queue was held.
enum WalkBenchmark {
    static func run(directory: URL, _ workload: Workload) throws {
        let url = directory.appendingPathComponent("walk.sqlite")
        let container = try PersistentContainer(model: .taskTracker(), store: .sqlite(url, durability: .normal))
        let writer = container.newBackgroundContext(name: "writer")
        step("importing \(grouped(workload.count)) Tasks...")
        for start in stride(from: 0, to: workload.count, by: workload.batchSize) {
            try writer.performAndWait {
                StacksBenchmark.insert(start..<min(start + workload.batchSize, workload.count), workload, into: writer)
                try writer.save()
                writer.reset()
            }
        }
        let request = FetchRequest(entityName: "Task", sortDescriptors: [ObjectSortDescriptor("title")])
        var batched = request
        batched.fetchBatchSize = 500

        say()
        say("| Walk of \(grouped(workload.count)) Tasks by title | fetch | walk (read every title) | total | heap held after the fetch | after the walk (result still held) |")
        say("|---|---:|---:|---:|---:|---:|")
        for variant in ["fetch, plain", "fetch, fetchBatchSize 500", "fetchBatched, batches of 500, retainsRegisteredObjects false"] {
            let context = container.newBackgroundContext(name: variant)
            let heapBefore = Memory.heapInUseMB()
            try context.performAndWait {
                let start = DispatchTime.now().uptimeNanoseconds
                var characters = 0
                let fetched: UInt64, afterFetch: Double, count: Int
                if variant.hasPrefix("fetchBatched") {
                    context.retainsRegisteredObjects = false
                    let result = try context.fetchBatched(batched)
                    fetched = DispatchTime.now().uptimeNanoseconds
                    afterFetch = Memory.heapInUseMB() - heapBefore
                    for object in result { characters += object.value("title", as: String.self)?.count ?? 0 }
                    count = result.count
                } else {
                    let objects = try context.fetch(variant.hasSuffix("plain") ? request : batched)
                    fetched = DispatchTime.now().uptimeNanoseconds
                    afterFetch = Memory.heapInUseMB() - heapBefore
                    for object in objects { characters += object.value("title", as: String.self)?.count ?? 0 }
                    count = objects.count
                }
                let walked = DispatchTime.now().uptimeNanoseconds
                let afterWalk = Memory.heapInUseMB() - heapBefore
                precondition(count == workload.count && characters > 0, "the walk must see every Task")
                say("| \(variant) | \(seconds(fetched - start)) | \(seconds(walked - fetched)) | \(seconds(walked - start)) "
                    + "| \(fixed(afterFetch, 1)) MB | \(fixed(afterWalk, 1)) MB |")
            }
            context.performAndWait { context.reset() }
        }

        say()
        say("| IDs of \(grouped(workload.count)) Tasks by title | time | longest stall of a 10 ms fetch on the same queue | fetches that ran meanwhile |")
        say("|---|---:|---:|---:|")
        let context = container.newBackgroundContext(name: "ids")
        let expected = try context.performAndWait { try context.fetchObjectIDs(request) }
        for name in ["fetchObjectIDs, one block", "asynchronous fetch, pages of 1,000"] {
            let ticker = ReaderTicker(context)
            let start = DispatchTime.now().uptimeNanoseconds
            let ids: [ManagedObjectID]
            if name.hasPrefix("asynchronous") {
                ids = try blocking { try await context.fetchObjectIDs(AsynchronousFetchRequest(request, pageSize: 1000)) }
            } else {
                ids = try blocking { try await context.perform { try context.fetchObjectIDs(request) } }
            }
            let took = DispatchTime.now().uptimeNanoseconds - start
            let (stall, fetches) = ticker.stop()
            precondition(ids == expected, "both must answer the same IDs")
            say("| \(name) | \(seconds(took)) | \(grouped(stall * 1000)) ms | \(grouped(fetches)) |")
        }
    }

    private static func seconds(_ nanoseconds: UInt64) -> String { fixed(Double(nanoseconds) / 1e9, 3) + " s" }

    /// Runs `body` in a task and waits for it on this thread (the benchmark has no event loop).
    private static func blocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
        let box = ResultBox<T>()
        let done = DispatchSemaphore(value: 0)
        Task {
            do { box.set(.success(try await body())) } catch { box.set(.failure(error)) }
            done.signal()
        }
        done.wait()
        return try box.get()
    }
}

/// `@unchecked Sendable`: written once by the task, read once after the semaphore that the
/// task signals after writing.
private final class ResultBox<T>: @unchecked Sendable {
    private var result: Result<T, any Error>?
    func set(_ value: Result<T, any Error>) { result = value }
    func get() throws -> T { try result!.get() }
}
