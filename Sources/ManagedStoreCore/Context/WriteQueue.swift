import Foundation

/// What became of one unit of work submitted to a `WriteQueue`.
public enum WriteOutcome<Result: Sendable>: Sendable {
    /// The work ran, and what it wrote (if anything) is committed.
    case completed(Result)
    /// The work ran and saved, but the store then rolled the whole group's transaction back on its
    /// own (a full disk, an I/O error): nothing of it was written. It may be submitted again.
    case undone
    /// The queue was stopped before the work ran: nothing of it was written.
    case notRun
}

/// The store's one serialized write queue (Core Data's common "one background context for
/// writes"): a thread of its own with one context, where submitted work runs in the order it
/// arrived. While work runs, the work that arrives waits; then everything waiting runs in one
/// store transaction (group commit), each unit's saves in savepoints of their own so a failing
/// unit rolls back alone, and each completion hears its outcome only once the COMMIT is
/// durable, so a completion never reports a write that a crash could still lose.
///
/// Readers are never blocked by it (WAL). The queue's context reads through the writer, so
/// work sees what earlier units of the same group wrote.
///
/// A write's way through the library's side: the queue (here) runs each batch in a group
/// commit on its context (`PersistentStoreCoordinator.performGroupCommit(in:)`, GroupCommit.swift);
/// the context's saves go into the group's transaction, each in a savepoint of its own
/// (`GroupCommit.inSavepoint`), and the store writes them (`StoreWriteSession.write`).
///
/// `@unchecked Sendable`: `pending`, `running`, `started`, `exited` and the counters are only
/// touched under `condition`'s lock; `context` only on the queue's thread.
public final class WriteQueue: @unchecked Sendable {
    /// One unit: the work (run on the queue's context) and what to do with its outcome.
    private struct Job {
        let run: (ManagedObjectContext) -> Void
        let finish: @Sendable (_ undone: Bool) -> Void
        let notRun: () -> Void
    }

    private let condition = NSCondition()
    private var pending: [Job] = []
    private var running = true
    private var started = false
    private var exited = false
    private let context: ManagedObjectContext
    private let coordinator: PersistentStoreCoordinator
    private let groupCommit: Bool
    /// The context whose queue hears every outcome, after the change is merged into it.
    private let readingContext: ManagedObjectContext?
    private var unitCount = 0
    private var transactionCount = 0
    private var groupSizes = Histogram(bounds: Histogram.groupSizeBounds)

    /// A queue writing to `coordinator`'s store. With `groupCommit` off, every unit commits
    /// alone (for comparison: that is what group commit saves).
    ///
    /// With `readingContext` (an application's view context, say), that context merges every
    /// committed change automatically (`automaticallyMergesChangesFromParent` is turned on), and
    /// each completion runs on its queue after the merge of its change: one write queue, and a
    /// completion once the reading context shows the change.
    public init(coordinator: PersistentStoreCoordinator, name: String = "writer", groupCommit: Bool = true,
                mergingInto readingContext: ManagedObjectContext? = nil) {
        self.coordinator = coordinator
        self.groupCommit = groupCommit
        self.context = ManagedObjectContext(coordinator: coordinator, name: name, readsThroughWriter: true)
        self.readingContext = readingContext
        readingContext?.performAndWait { readingContext?.automaticallyMergesChangesFromParent = true }
    }

    /// Starts the queue's thread.
    public func start() {
        condition.lock()
        started = true
        condition.unlock()
        let thread = Thread { [self] in self.run() }
        thread.name = "ManagedStore.\(context.name)"
        thread.start()
    }

    /// Takes no more work (what is submitted later completes `.notRun` at once), waits until
    /// `deadline` for the work already submitted to finish, and lets the thread end. Returns
    /// whether the queue finished in time; stopping a stopped queue returns at once.
    @discardableResult
    public func stop(deadline: DispatchTime = .distantFuture) -> Bool {
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

    /// Queues `work`, to run on the queue's context (its one parameter) inside the queue's
    /// group commit; `completion` gets its outcome once it is committed (or undone), on the
    /// queue's thread: keep it short (hand heavy work, such as encoding an answer, elsewhere).
    ///
    /// The work saves the context as usual (`context.save(mergePolicy:)`); its saves join the
    /// group. A unit that fails should `rollback()` the context, so that the next one starts
    /// clean. The context is reset after every group.
    public func submit<T: Sendable>(_ work: @escaping @Sendable (ManagedObjectContext) -> T,
                                    completion: @escaping @Sendable (WriteOutcome<T>) -> Void) {
        // The result is kept here between running and finishing, on the queue's thread only.
        let box = ResultBox<T>()
        let job = Job(run: { context in box.value = work(context) },
                      finish: { undone in completion(undone ? .undone : box.value.map(WriteOutcome.completed) ?? .undone) },
                      notRun: { completion(.notRun) })
        enqueue(job)
    }

    /// Adds `job` to what waits, or tells it at once that it will not run (a stopped queue).
    private func enqueue(_ job: Job) {
        condition.lock()
        guard running else {
            condition.unlock()
            job.notRun()
            return
        }
        pending.append(job)
        condition.broadcast()
        condition.unlock()
    }

    /// Queues `work` as `submit(_:completion:)` does, for work that may throw: the work runs in
    /// a savepoint of its own, so when it throws, nothing it saved is kept and the context is
    /// reset (the next unit starts clean). `result` gets the work's
    /// value once it is committed, and merged into the reading context when the queue has one;
    /// or the error it threw; or `WriteQueueError` when it was undone or never ran.
    public func submit<T: Sendable>(_ work: @escaping @Sendable (ManagedObjectContext) throws -> T,
                                    result: @escaping @Sendable (Result<T, any Error>) -> Void) {
        let box = ResultBox<Result<T, any Error>>()
        let job = Job(run: { context in
                          do {
                              // Always set: a queue runs its units inside a group commit.
                              let group = context.activeGroup!
                              box.value = .success(try group.inAtomicSection { try work(context) })
                          } catch {
                              // Not just rollback(): a save the section undid left its objects
                              // registered as saved; the next unit must start from the store.
                              context.reset()
                              box.value = .failure(error)
                          }
                      },
                      finish: { undone in result(undone ? .failure(WriteQueueError.undone) : box.value ?? .failure(WriteQueueError.undone)) },
                      notRun: { result(.failure(WriteQueueError.notRun)) })
        enqueue(job)
    }

    /// Runs `work` on the queue and returns its value once its saves are committed (and merged
    /// into the reading context, when the queue has one): Core Data's `performBackgroundTask`,
    /// in an async, throwing form, on one queue. If `work` throws, nothing it saved
    /// is kept, its context is reset, and the error is thrown here; a unit the store
    /// undid, or that never ran because the queue stopped, throws `WriteQueueError`.
    ///
    ///     let id = try await writeQueue.perform { context in
    ///         let task = context.insertNewObject(forEntityName: "Task")
    ///         task.setValue("Ship", forKey: "title")
    ///         try context.save()
    ///         return task.objectID
    ///     }
    public func perform<T: Sendable>(_ work: @escaping @Sendable (ManagedObjectContext) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            submit(work, result: { continuation.resume(with: $0) })
        }
    }

    /// Units of work run, and the transactions they took (fewer when group commit works).
    public var counters: (units: Int, transactions: Int) {
        condition.lock()
        defer { condition.unlock() }
        return (unitCount, transactionCount)
    }

    /// How many units each group so far ran in its transaction.
    public var groupSizeHistogram: Histogram {
        condition.lock()
        defer { condition.unlock() }
        return groupSizes
    }

    /// Work waiting to run.
    public var depth: Int {
        condition.lock()
        defer { condition.unlock() }
        return pending.count
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
            let batch: [Job]
            if groupCommit {
                batch = pending
                pending = []
            } else {
                batch = [pending.removeFirst()]
            }
            condition.unlock()
            let undone = executeRetryingBusyUnits(batch)
            condition.lock()
            unitCount += batch.count
            transactionCount += 1
            groupSizes.record(Double(batch.count))
            condition.unlock()
            let finishes = zip(batch, undone).map { job, undone in
                let finish = job.finish
                return { finish(undone) } as @Sendable () -> Void
            }
            if let readingContext {
                // The group's saves were handed to the reading context's queue at the COMMIT
                // (automatic merging): outcomes queued behind them run after the merge.
                readingContext.performLater { finishes.forEach { $0() } }
            } else {
                finishes.forEach { $0() }
            }
        }
    }

    /// How many more times a unit that met a busy store and wrote nothing runs, each in a later
    /// transaction than the last.
    static let busyRetries = 3

    /// Runs a batch (`execute`); then the units whose saves failed only because the store was
    /// busy, and that wrote nothing, run again in a transaction of their own, after the batch's
    /// has committed and let go of its locks: a lock cycle with another server's transaction
    /// (PostgreSQL ends one of them) cannot form again around locks this batch no longer holds.
    /// Returns, per unit, whether its writes were undone; a unit run again reports its last run.
    private func executeRetryingBusyUnits(_ batch: [Job]) -> [Bool] {
        var (undone, busy) = execute(batch)
        var retry = batch.indices.filter { busy[$0] && !undone[$0] }
        var attempts = 0
        while !retry.isEmpty && attempts < Self.busyRetries {
            attempts += 1
            let (retryUndone, retryBusy) = execute(retry.map { batch[$0] })
            for (k, i) in retry.enumerated() { undone[i] = retryUndone[k] }
            retry = retry.enumerated().filter { retryBusy[$0.offset] && !retryUndone[$0.offset] }.map(\.element)
        }
        return undone
    }

    /// Runs a batch in one group commit; returns, per unit, whether its writes were undone, and
    /// whether it met a busy store and wrote nothing (so it may run again).
    /// When the store rolls the whole transaction back by itself (after one unit's savepoint failed
    /// with a full disk or an I/O error), the units before it that wrote were undone too, and
    /// the rest of the batch runs in a new transaction. If the COMMIT itself fails, every unit
    /// that wrote since the transaction began was undone.
    private func execute(_ batch: [Job]) -> (undone: [Bool], busy: [Bool]) {
        context.performAndWait {
            var undone = [Bool](repeating: false, count: batch.count)
            var wrote = [Bool](repeating: false, count: batch.count)
            var busy = [Bool](repeating: false, count: batch.count)
            var transactionStart = 0
            var ran = 0
            func undoSince(_ start: Int) {
                for i in start..<ran where wrote[i] { undone[i] = true }
            }
            do {
                try coordinator.performGroupCommit(in: context) { group in
                    for (i, job) in batch.enumerated() {
                        group.markUnit()
                        job.run(context)
                        wrote[i] = group.wroteSinceMark
                        busy[i] = group.wasBusySinceMark && !wrote[i]
                        ran = i + 1
                        guard !group.isIntact else { continue }
                        undoSince(transactionStart)
                        // The context's objects hold what the undone saves committed: start over.
                        context.reset()
                        transactionStart = ran
                        if ran < batch.count { try group.restart() }
                    }
                }
            } catch {
                undoSince(transactionStart)
                // Units not run because the transaction could not begin again wrote nothing;
                // they are told they were undone, so that they can be submitted again.
                for i in ran..<batch.count { undone[i] = true }
            }
            // The next batch starts from the store, not from what this one left in memory.
            context.reset()
            return (undone, busy)
        }
    }
}

/// Why a unit of work submitted to a `WriteQueue` did not take effect, though it did not throw.
public enum WriteQueueError: Error, Sendable, Equatable, CustomStringConvertible {
    /// It ran and saved, but the store then rolled back the group's whole transaction on its
    /// own (a full disk, an I/O error, a statement the database refused when the transaction
    /// ended): nothing of it was written. It may be submitted again.
    case undone
    /// The queue was stopped before it ran: nothing of it was written.
    case notRun

    public var description: String {
        switch self {
        case .undone: return "the store rolled the write back (a full disk, an I/O error, or a statement the database refused at the transaction's end): nothing of it was written"
        case .notRun: return "the write queue was stopped before the work ran"
        }
    }
}

/// A unit's result between its run and its completion, on the queue's thread.
///
/// `@unchecked Sendable`: written by the unit's run and read by its finish, both on the queue's
/// thread, one after the other.
private final class ResultBox<T>: @unchecked Sendable {
    var value: T?
}
