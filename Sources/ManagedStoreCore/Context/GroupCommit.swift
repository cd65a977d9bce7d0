/// One transaction that several saves share, each in a savepoint of its own, so that a failing
/// save rolls back alone (`PersistentStoreCoordinator.performGroupCommit(in:)`).
///
/// The group is handed to the context that runs it, and to the work that runs in it: a save
/// goes into the group because its context runs the group (`ManagedObjectContext.activeGroup`),
/// never because of the thread it runs on.
///
/// After some failures inside a savepoint (disk full, an I/O error, out of memory, a busy
/// store) the store may roll back the whole transaction on its own: then every save of the
/// group since it began (or since `restart`) is undone, although each returned normally.
/// `isIntact` says whether that happened; `restart` begins a new transaction for the saves
/// still to come; `wroteSinceMark` tells whether anything was written since the caller last
/// looked, to know which of its units of work the rollback undid.
///
/// Not Sendable: it is used only inside `performGroupCommit`'s body, on the context's queue.
public final class GroupCommit {
    let transaction: any StoreTransaction
    /// Savepoints released (writes kept) since `markUnit`.
    private(set) var released = 0
    /// Whether a savepoint since `markUnit` failed because the store was busy (`StoreError.busy`:
    /// other connections held what it needed, such as another server's locks in a cycle with
    /// this transaction's): its writes were rolled back, and running the unit again in a later
    /// transaction, once this one has let go of its locks, may succeed.
    private(set) var wasBusySinceMark = false
    /// Saves written into the transaction, for the contexts that merge automatically: told
    /// after the COMMIT (`PersistentStoreCoordinator.announceSave`).
    var committedSaves: [(saved: SavedChanges, origin: ObjectIdentifier)] = []
    /// The idempotency keys whose records this transaction stored: a unit that replays one of
    /// them stands or falls with this transaction's COMMIT, as the unit that stored it does.
    var storedIdempotencyKeys: Set<IdempotencyKey> = []

    init(_ transaction: any StoreTransaction) { self.transaction = transaction }

    /// What the group's saves write through.
    var session: any StoreWriteSession { transaction.session }

    /// False once the store has rolled the group's transaction back by itself.
    public var isIntact: Bool { transaction.isIntact }

    /// Begins a new transaction, after the store ended the last one, for the saves still to
    /// come. Does nothing while the transaction is intact.
    public func restart() throws(StoreError) {
        guard !transaction.isIntact else { return }
        forgetTransaction()
        try transaction.restart()
    }

    /// Starts counting the writes of a new unit of work.
    public func markUnit() {
        released = 0
        wasBusySinceMark = false
    }

    /// Whether a save wrote something (released its savepoint) since `markUnit`.
    public var wroteSinceMark: Bool { released > 0 }

    /// Rolls the transaction back, for a unit whose writes are in it but cannot stand (an
    /// idempotent write whose record could not be stored with them): `isIntact` turns false,
    /// and the caller undoes the group's units as when the store rolls back on its own.
    func abandonTransaction() {
        transaction.rollBack()
        forgetTransaction()
    }

    /// What belonged to a transaction that is gone.
    private func forgetTransaction() {
        committedSaves = []
        storedIdempotencyKeys = []
    }

    /// Counts the current unit as one that wrote: what it answers rests on writes of this
    /// transaction (a replay of an idempotency record stored earlier in it), so if the COMMIT
    /// fails it must be told it was undone too.
    func dependsOnTransaction() { released += 1 }

    /// Runs `body` in a savepoint of the group's transaction: its writes are kept when it
    /// returns and rolled back alone when it throws.
    func inSavepoint<T>(_ body: (any StoreWriteSession) throws -> T) throws -> T {
        do {
            let result = try transaction.inSavepoint { try body(transaction.session) }
            released += 1
            return result
        } catch {
            if Self.isBusy(error) { wasBusySinceMark = true }
            throw error
        }
    }

    /// Whether `error` says the store was busy, as itself or inside a save's rejection.
    private static func isBusy(_ error: any Error) -> Bool {
        if case .busy? = error as? StoreError { return true }
        if case .store(.busy)? = error as? ChangeSetRejection { return true }
        return false
    }

    /// Runs `body`, which may save several times, in one savepoint of the group: if it throws,
    /// none of its saves is kept, counted as written, or told to merging contexts.
    func inAtomicSection<T>(_ body: () throws -> T) throws -> T {
        let releasedBefore = released
        let savesBefore = committedSaves.count
        do {
            return try transaction.inSavepoint(body)
        } catch {
            released = releasedBefore
            if committedSaves.count > savesBefore { committedSaves.removeSubrange(savesBefore...) }
            throw error
        }
    }
}

extension PersistentStoreCoordinator {
    /// Group commit: runs `body` inside one write transaction, which every save of `context`
    /// during `body` joins, each as a savepoint of its own (a failing save rolls back alone).
    /// Returns once the COMMIT is durable; if `body` or the COMMIT throws, nothing of it is
    /// written. Writes of other contexts wait for the transaction to end.
    ///
    /// Call it on `context`'s queue (inside its `performAndWait`). After a save fails, check
    /// `group.isIntact`: the store may have rolled back the whole transaction (see `GroupCommit`).
    public func performGroupCommit<T>(in context: ManagedObjectContext, _ body: (GroupCommit) throws -> T) throws -> T {
        context.assertOnQueue()
        precondition(context.activeGroup == nil, "performGroupCommit(in:) inside a group commit of the same context")
        var committed: [(saved: SavedChanges, origin: ObjectIdentifier)] = []
        let result = try store.performGroupCommit { transaction in
            let group = GroupCommit(transaction)
            context.activeGroup = group
            defer { context.activeGroup = nil }
            let result = try body(group)
            // The store commits the transaction if it is intact, and these saves with it.
            if group.isIntact { committed = group.committedSaves }
            return result
        }
        for save in committed { deliverSave(save.saved, from: save.origin) }
        return result
    }

    /// `performGroupCommit(in:)` for a body that does not need the group.
    public func performGroupCommit<T>(in context: ManagedObjectContext, _ body: () throws -> T) throws -> T {
        try performGroupCommit(in: context) { (_: GroupCommit) in try body() }
    }
}
