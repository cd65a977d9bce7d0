import Foundation
import ManagedStore

/// The one serialized write queue: a thread of its own that drains every waiting request into
/// one SQLite transaction (group commit), each request a savepoint of its own so a failing
/// request rolls back alone, and answers each request only once the COMMIT is durable.
/// Requests are applied in the order they arrived.
///
/// `@unchecked Sendable`: `pending` and `running` are only touched while holding `condition`'s
/// lock; `context` is used only on the queue's thread, inside its own performAndWait.
final class WriteQueue: @unchecked Sendable {
    private let condition = NSCondition()
    private var pending: [WriteJob] = []
    private var running = true
    private let stopped = DispatchSemaphore(value: 0)
    private let context: ManagedObjectContext
    private let coordinator: PersistentStoreCoordinator
    private let groupCommit: Bool
    private let executor: WriteExecutor

    /// Requests answered, and transactions committed for them (fewer when group commit works).
    private(set) var requestCount = 0
    private(set) var batchCount = 0

    init(coordinator: PersistentStoreCoordinator, groupCommit: Bool, layouts: JSONLayouts) {
        self.coordinator = coordinator
        self.groupCommit = groupCommit
        self.context = ManagedObjectContext(coordinator: coordinator, name: "writer", readsThroughWriter: true)
        self.executor = WriteExecutor(context: context, layouts: layouts)
    }

    private var started = false

    func start() {
        condition.lock()
        started = true
        condition.unlock()
        let thread = Thread { [self] in self.run() }
        thread.name = "ManagedStore.write-queue"
        thread.start()
    }

    /// Waits for the requests already queued to be answered, then ends the thread. Stopping a
    /// stopped queue returns at once.
    func stop() {
        condition.lock()
        let wasRunning = running
        running = false
        condition.signal()
        condition.unlock()
        if wasRunning && started { stopped.wait() }
    }

    func submit(_ job: WriteJob) {
        condition.lock()
        if !running {
            condition.unlock()
            job.deferred.complete(Problem.unavailable("the server is shutting down").response)
            return
        }
        pending.append(job)
        condition.signal()
        condition.unlock()
    }

    var counters: (requests: Int, batches: Int) {
        condition.lock()
        defer { condition.unlock() }
        return (requestCount, batchCount)
    }

    private func run() {
        while true {
            condition.lock()
            while pending.isEmpty && running { condition.wait() }
            if pending.isEmpty {
                condition.unlock()
                stopped.signal()
                return
            }
            let batch: [WriteJob]
            if groupCommit {
                batch = pending
                pending = []
            } else {
                batch = [pending.removeFirst()]
            }
            condition.unlock()

            let responses = execute(batch)
            condition.lock()
            requestCount += batch.count
            batchCount += 1
            condition.unlock()
            for (job, response) in zip(batch, responses) { job.deferred.complete(response) }
        }
    }

    /// Runs a batch in one group commit. If the COMMIT itself fails, no request of the batch
    /// was written, and every one of them is told so.
    private func execute(_ batch: [WriteJob]) -> [HTTPResponse] {
        context.performAndWait {
            var responses: [HTTPResponse] = []
            do {
                try coordinator.performGroupCommit {
                    for job in batch { responses.append(executor.run(job.operation)) }
                }
            } catch {
                responses = batch.map { _ in Problem.unavailable("the store could not commit: \(error)").response }
            }
            // The next batch starts from the store, not from what this one left in memory.
            context.reset()
            return responses
        }
    }
}
