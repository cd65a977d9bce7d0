import Foundation

/// What became of one unit of work submitted to a `WriteQueue`.
public enum WriteOutcome<Result: Sendable>: Sendable {
    /// The work ran, and what it wrote (if anything) is committed.
    case completed(Result)
    /// The work ran and saved, but SQLite then rolled the whole group's transaction back on its
    /// own (a full disk, an I/O error): nothing of it was written. It may be submitted again.
    case undone
    /// The queue was stopped before the work ran: nothing of it was written.
    case notRun
}

/// The store's one serialized write queue [the seed articles' "one background queue for
/// writes"]: a thread of its own with one context, where submitted work runs in the order it
/// arrived. While work runs, the work that arrives waits; then everything waiting runs in one
/// SQLite transaction (group commit), each unit's saves in savepoints of their own so a failing
/// unit rolls back alone, and each completion hears its outcome only once the COMMIT is
/// durable, so a completion never reports a write that a crash could still lose.
///
/// Readers are never blocked by it (WAL). The queue's context reads through the writer, so
/// work sees what earlier units of the same group wrote.
///
/// This file holds the whole of a write's way through the library's side: the queue (here),
/// the group's transaction with its BEGIN and COMMIT (`performGroupCommit`, below) and each
/// save's savepoint, called by name (`GroupCommit.inSavepoint`, below), which
/// `PersistentStoreCoordinator.write` enters when a save runs inside the group.
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
    /// each completion runs on its queue after the merge of its change: the seed articles' "one
    /// write queue, and a completion once the reading context shows the change".
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
            let undone = execute(batch)
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

    /// Runs a batch in one group commit; returns, per unit, whether its writes were undone.
    /// When SQLite rolls the whole transaction back by itself (after one unit's savepoint failed
    /// with a full disk or an I/O error), the units before it that wrote were undone too, and
    /// the rest of the batch runs in a new transaction. If the COMMIT itself fails, every unit
    /// that wrote since the transaction began was undone.
    private func execute(_ batch: [Job]) -> [Bool] {
        context.performAndWait {
            var undone = [Bool](repeating: false, count: batch.count)
            var wrote = [Bool](repeating: false, count: batch.count)
            var transactionStart = 0
            var ran = 0
            func undoSince(_ start: Int) {
                for i in start..<ran where wrote[i] { undone[i] = true }
            }
            do {
                try coordinator.performGroupCommit { group in
                    for (i, job) in batch.enumerated() {
                        group.markUnit()
                        job.run(context)
                        wrote[i] = group.wroteSinceMark
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
            return undone
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

// MARK: The group's transaction

/// One transaction that several saves share, each in a savepoint of its own called by name
/// (`PersistentStoreCoordinator.performGroupCommit`), so that a failing save rolls back alone.
///
/// After some failures inside a savepoint (disk full, an I/O error, out of memory, a busy
/// store) SQLite may roll back the whole transaction on its own: then every save of the group
/// since it began (or since `restart`) is undone, although each returned normally. `isIntact`
/// says whether that happened; `restart` begins a new transaction for the saves still to come;
/// `wroteSinceMark` tells whether anything was written since the caller last looked, to know
/// which of its units of work the rollback undid.
///
/// Not Sendable: it is used only inside `performGroupCommit`'s body, on the writer's thread.
public final class GroupCommit {
    let connection: SQLiteConnection
    /// Savepoints released (writes kept) since `markUnit`.
    private(set) var released = 0
    /// Saves written into the transaction, for the contexts that merge automatically: told
    /// after the COMMIT (`PersistentStoreCoordinator.announceSave`).
    var committedSaves: [(saved: SavedChanges, origin: ObjectIdentifier)] = []
    /// The rowid of the first idempotency record the transaction stored, if it stored one:
    /// the records it stored are those from there up (`IdempotencyTable.store`), and a unit
    /// that replays one of them stands or falls with this transaction's COMMIT, as the unit
    /// that stored it does.
    var firstStoredIdempotencyRowid: Int64?

    init(connection: SQLiteConnection) { self.connection = connection }

    /// False once SQLite has rolled the group's transaction back by itself.
    public var isIntact: Bool { connection.isInTransaction }

    /// Begins a new transaction, after SQLite ended the last one, for the saves still to come.
    /// Does nothing while the transaction is intact.
    public func restart() throws(StoreError) {
        guard !connection.isInTransaction else { return }
        committedSaves = []  // undone with the transaction SQLite rolled back
        firstStoredIdempotencyRowid = nil
        try connection.cachedStatement("BEGIN IMMEDIATE").execute()
    }

    /// Starts counting the writes of a new unit of work.
    public func markUnit() { released = 0 }

    /// Rolls the transaction back, for a unit whose writes are in it but cannot stand (an
    /// idempotent write whose record could not be stored with them): `isIntact` turns false,
    /// and the caller undoes the group's units as when SQLite rolls back on its own.
    func abandonTransaction() {
        if connection.isInTransaction { try? connection.cachedStatement("ROLLBACK").execute() }
        committedSaves = []
        firstStoredIdempotencyRowid = nil
    }

    /// Whether a save wrote something (released its savepoint) since `markUnit`.
    public var wroteSinceMark: Bool { released > 0 }

    /// Counts the current unit as one that wrote: what it answers rests on writes of this
    /// transaction (a replay of an idempotency record stored earlier in it), so if the COMMIT
    /// fails it must be told it was undone too.
    func dependsOnTransaction() { released += 1 }

    /// Runs `body` in the savepoint `name` of the group's transaction: its writes are kept when
    /// it returns and rolled back alone when it throws.
    func inSavepoint<T>(_ name: String, _ body: () throws -> T) throws -> T {
        let result = try connection.inSavepoint(name, body)
        released += 1
        return result
    }

    /// Runs `body`, which may save several times, in one savepoint of the group: if it throws,
    /// none of its saves is kept, counted as written, or told to merging contexts.
    func inAtomicSection<T>(_ body: () throws -> T) throws -> T {
        let releasedBefore = released
        let savesBefore = committedSaves.count
        do {
            return try connection.inSavepoint("section", body)
        } catch {
            released = releasedBefore
            if committedSaves.count > savesBefore { committedSaves.removeSubrange(savesBefore...) }
            throw error
        }
    }
}

extension PersistentStoreCoordinator {
    /// Group commit: runs `body` inside one write transaction that every save made on this
    /// thread during `body` joins, each as a savepoint of its own (a failing save rolls back
    /// alone). Returns once the COMMIT is durable; if `body` or the COMMIT throws, nothing of
    /// it is written. Saves of other threads wait for the transaction to end.
    ///
    /// Run it inside the saving context's `performAndWait`, so that the saves happen on the
    /// thread that holds the transaction. After a save fails, check `group.isIntact`: SQLite
    /// may have rolled back the whole transaction (see `GroupCommit`).
    public func performGroupCommit<T>(_ body: (GroupCommit) throws -> T) throws -> T {
        try writer.withConnection { connection in
            let group = GroupCommit(connection: connection)
            try connection.cachedStatement("BEGIN IMMEDIATE").execute()
            do {
                let result = try writer.withGroup(group) { try body(group) }
                if connection.isInTransaction {
                    try connection.cachedStatement("COMMIT").execute()
                    didCommit(connection)
                    for save in group.committedSaves { deliverSave(save.saved, from: save.origin) }
                }
                return result
            } catch {
                if connection.isInTransaction { try? connection.cachedStatement("ROLLBACK").execute() }
                throw error
            }
        }
    }

    /// `performGroupCommit` for a body that does not need the group.
    public func performGroupCommit<T>(_ body: () throws -> T) throws -> T {
        try performGroupCommit { (_: GroupCommit) in try body() }
    }
}
