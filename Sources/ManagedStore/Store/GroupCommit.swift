/// The one transaction that the saves of a group commit share, each in a savepoint of its own
/// (`PersistentStoreCoordinator.performGroupCommit`).
///
/// A failing save normally rolls back its own savepoint and the group goes on. But after some
/// failures inside a savepoint (disk full, an I/O error, out of memory, a busy store) SQLite
/// may roll back the whole transaction on its own: then every save of the group since it began
/// (or since `restart`) is undone, although each of them returned normally. `isIntact` says
/// whether that happened; `restart` begins a new transaction for the saves still to come.
///
/// Not Sendable: it is used only inside `performGroupCommit`'s body, on the writer's thread.
public final class GroupCommit {
    private let connection: SQLiteConnection

    init(connection: SQLiteConnection) { self.connection = connection }

    /// False once SQLite has rolled the group's transaction back by itself.
    public var isIntact: Bool { connection.isInTransaction }

    /// Begins a new transaction, after SQLite ended the last one, for the saves still to come.
    /// Does nothing while the transaction is intact.
    public func restart() throws(StoreError) {
        guard !connection.isInTransaction else { return }
        try connection.cachedStatement("BEGIN IMMEDIATE").execute()
    }
}
