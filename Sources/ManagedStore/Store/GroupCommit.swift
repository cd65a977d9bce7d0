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
    private var released = 0

    init(connection: SQLiteConnection) { self.connection = connection }

    /// False once SQLite has rolled the group's transaction back by itself.
    public var isIntact: Bool { connection.isInTransaction }

    /// Begins a new transaction, after SQLite ended the last one, for the saves still to come.
    /// Does nothing while the transaction is intact.
    public func restart() throws(StoreError) {
        guard !connection.isInTransaction else { return }
        try connection.cachedStatement("BEGIN IMMEDIATE").execute()
    }

    /// Starts counting the writes of a new unit of work.
    public func markUnit() { released = 0 }

    /// Whether a save wrote something (released its savepoint) since `markUnit`.
    public var wroteSinceMark: Bool { released > 0 }

    /// Runs `body` in the savepoint `name` of the group's transaction: its writes are kept when
    /// it returns and rolled back alone when it throws.
    func inSavepoint<T>(_ name: String, _ body: () throws -> T) throws -> T {
        let result = try connection.inSavepoint(name, body)
        released += 1
        return result
    }
}
