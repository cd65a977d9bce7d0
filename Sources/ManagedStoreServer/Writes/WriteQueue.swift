import Foundation
import ManagedStore

/// The one serialized write queue: a thread of its own that drains every waiting request into
/// one SQLite transaction (group commit), each request a savepoint of its own so a failing
/// request rolls back alone, and answers each request only once the COMMIT is durable, with
/// what really happened to it. Requests are applied in the order they arrived.
///
/// `@unchecked Sendable`: `pending`, `running`, `started`, `exited` and the counters are only
/// touched while holding `condition`'s lock; `context` is used only on the queue's thread,
/// inside its own performAndWait.
final class WriteQueue: @unchecked Sendable {
    private let condition = NSCondition()
    private var pending: [WriteJob] = []
    private var running = true
    private var started = false
    private var exited = false
    private let context: ManagedObjectContext
    private let coordinator: PersistentStoreCoordinator
    private let groupCommit: Bool
    private let executor: WriteExecutor

    /// Requests answered, and transactions committed for them (fewer when group commit works).
    private var requestCount = 0
    private var batchCount = 0

    init(coordinator: PersistentStoreCoordinator, groupCommit: Bool, layouts: JSONLayouts) {
        self.coordinator = coordinator
        self.groupCommit = groupCommit
        self.context = ManagedObjectContext(coordinator: coordinator, name: "writer", readsThroughWriter: true)
        self.executor = WriteExecutor(context: context, layouts: layouts)
    }

    func start() {
        condition.lock()
        started = true
        condition.unlock()
        let thread = Thread { [self] in self.run() }
        thread.name = "ManagedStore.write-queue"
        thread.start()
    }

    /// Takes no more requests (later ones are answered 503 at once: nothing is written), waits
    /// until `deadline` for those already queued to be answered, and lets the thread end.
    /// Returns whether the queue finished in time; stopping a stopped queue returns at once.
    @discardableResult
    func stop(deadline: DispatchTime = .distantFuture) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        running = false
        condition.broadcast()
        guard started else { return true }
        while !exited {
            let now = DispatchTime.now()
            guard now < deadline else { return false }
            let seconds = Double(deadline.uptimeNanoseconds - now.uptimeNanoseconds) / 1e9
            _ = condition.wait(until: Date(timeIntervalSinceNow: min(seconds, 3600)))
        }
        return true
    }

    func submit(_ job: WriteJob) {
        condition.lock()
        if !running {
            condition.unlock()
            job.deferred.complete(Problem.unavailable("the server is shutting down; nothing was written").response)
            return
        }
        pending.append(job)
        condition.broadcast()
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
                exited = true
                condition.broadcast()
                condition.unlock()
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

    /// The answer of a request whose save SQLite undid with the rest of its transaction.
    private static let lost = Problem.unavailable("the store rolled the transaction back (disk full or an I/O error); nothing was written").response

    /// Runs a batch in one group commit and returns each request's true answer. When SQLite
    /// rolls the whole transaction back by itself (after one request's savepoint failed with
    /// a full disk or an I/O error), the requests before it that seemed to succeed were undone
    /// too: they are answered 503, and the rest of the batch runs in a new transaction. If
    /// the COMMIT itself fails, none of the requests since the transaction began was written.
    private func execute(_ batch: [WriteJob]) -> [HTTPResponse] {
        context.performAndWait {
            var responses: [HTTPResponse] = []
            responses.reserveCapacity(batch.count)
            // Answers since the current transaction began: the ones its fate decides.
            var transactionStart = 0
            func undoSince(_ start: Int) {
                for i in start..<responses.count where (200..<300).contains(responses[i].status) { responses[i] = Self.lost }
            }
            do {
                try coordinator.performGroupCommit { group in
                    for job in batch {
                        responses.append(executor.run(job.operation))
                        guard !group.isIntact else { continue }
                        undoSince(transactionStart)
                        // The context's objects hold what the undone saves committed: start over.
                        context.reset()
                        transactionStart = responses.count
                        if responses.count < batch.count { try group.restart() }
                    }
                }
            } catch {
                ServerLog.error("a group commit failed: \(error)")
                undoSince(transactionStart)
                while responses.count < batch.count { responses.append(Self.lost) }
            }
            // The next batch starts from the store, not from what this one left in memory.
            context.reset()
            return responses
        }
    }
}
