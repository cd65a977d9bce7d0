import Foundation
import ManagedStore
import Synchronization

/// The seed articles' "performance shootout": the same import through three Core Data stacks,
/// with a reading context fetching every 10 ms meanwhile. Reports the import time and the
/// reader's longest stall (the longest a fetch waited to run and finish).
///
/// - nested: a background context, child of a main (reading) context, child of a root context
///   that saves to the store; each batch is saved up the chain from main's queue;
/// - independent: a writing and a reading context on one coordinator, the reader merging every
///   did-save (`automaticallyMergesChangesFromParent`);
/// - two coordinators on the same file: the writer's did-save merged into the reader on the
///   other coordinator by its object IDs (`mergeChanges(fromRemoteContextSave:into:)`).
enum StacksBenchmark {
    enum Stack: String, CaseIterable {
        case nested = "nested contexts (background → main → root)"
        case independent = "independent contexts, one coordinator, did-save merging"
        case twoCoordinators = "two coordinators on the same file"
    }

    struct Result {
        var stack: Stack
        var importSeconds: Double
        var longestStall: Double
        var readerFetches: Int
        /// How many Tasks the reader counts once the import is over.
        var readerSees: Int
    }

    static func run(_ stack: Stack, directory: URL, _ workload: Workload) throws -> Result {
        let url = directory.appendingPathComponent("stack-\(Stack.allCases.firstIndex(of: stack)!).sqlite")
        let store = StoreDescription.sqlite(url, durability: .normal)
        let container = try PersistentContainer(model: .taskTracker(), store: store)
        let reader: ManagedObjectContext
        let importBatch: (Range<Int>) throws -> Void
        switch stack {
        case .nested:
            let root = container.newBackgroundContext(name: "root")
            let main = ManagedObjectContext(parent: root, name: "main")
            let background = ManagedObjectContext(parent: main, name: "background")
            for context in [root, main] { context.performAndWait { context.retainsRegisteredObjects = false } }
            reader = main
            importBatch = { batch in
                try background.performAndWait {
                    insert(batch, workload, into: background)
                    try background.save()
                    background.reset()
                }
                try main.performAndWait {
                    try main.save()
                    try root.performAndWait { try root.save() }
                }
            }
        case .independent:
            let writer = container.newBackgroundContext(name: "writer")
            reader = container.newBackgroundContext(name: "reader")
            reader.performAndWait { reader.automaticallyMergesChangesFromParent = true }
            importBatch = { batch in
                try writer.performAndWait {
                    insert(batch, workload, into: writer)
                    try writer.save()
                    writer.reset()
                }
            }
        case .twoCoordinators:
            let importCoordinator = try PersistentStoreCoordinator(model: .taskTracker(), store: store)
            let writer = ManagedObjectContext(coordinator: importCoordinator, name: "writer")
            reader = container.newBackgroundContext(name: "reader")
            importBatch = { batch in
                let saved = try writer.performAndWait {
                    insert(batch, workload, into: writer)
                    let saved = try writer.save()
                    writer.reset()
                    return saved
                }
                ManagedObjectContext.mergeChanges(fromRemoteContextSave: saved, into: [reader])
            }
        }
        let ticker = ReaderTicker(reader)
        let (_, seconds) = try measure {
            for start in stride(from: 0, to: workload.count, by: workload.batchSize) {
                try importBatch(start..<min(start + workload.batchSize, workload.count))
            }
        }
        let (longest, fetches) = ticker.stop()
        let sees = try reader.performAndWait { try reader.count(for: FetchRequest(entityName: "Task")) }
        return Result(stack: stack, importSeconds: seconds, longestStall: longest, readerFetches: fetches, readerSees: sees)
    }

    static func insert(_ batch: Range<Int>, _ workload: Workload, into context: ManagedObjectContext) {
        for i in batch { InsertBenchmark.insertTask(i, workload, into: context) }
    }

    static func report(_ results: [Result], _ workload: Workload) {
        say("| Stack (\(grouped(workload.count)) Tasks, save every \(grouped(workload.batchSize))) | import | objects/s | reader's longest stall | reader fetches | reader counts after |")
        say("|---|---:|---:|---:|---:|---:|")
        for result in results {
            say("| \(result.stack.rawValue) | \(fixed(result.importSeconds)) s | \(grouped(Double(workload.count) / result.importSeconds)) "
                + "| \(grouped(result.longestStall * 1000)) ms | \(grouped(result.readerFetches)) | \(grouped(result.readerSees)) |")
        }
    }
}

/// A thread that runs a small fetch on `reader`'s queue every 10 ms (waiting for each), and
/// keeps the longest time one took from being asked to finishing: the reader's longest stall.
final class ReaderTicker: Sendable {
    private let state = Mutex<(stop: Bool, longest: Double, fetches: Int)>((false, 0, 0))
    private let finished = DispatchSemaphore(value: 0)

    init(_ reader: ManagedObjectContext) {
        let request = FetchRequest(entityName: "Task", fetchLimit: 20)
        Thread.detachNewThread { [self] in
            while !state.withLock({ $0.stop }) {
                let start = DispatchTime.now().uptimeNanoseconds
                reader.performAndWait { _ = try? reader.fetch(request) }
                let took = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
                state.withLock { $0.longest = max($0.longest, took); $0.fetches += 1 }
                usleep(10_000)
            }
            finished.signal()
        }
    }

    /// Stops the ticks; returns the longest stall in seconds and how many fetches ran.
    func stop() -> (Double, Int) {
        state.withLock { $0.stop = true }
        finished.wait()
        return state.withLock { ($0.longest, $0.fetches) }
    }
}
