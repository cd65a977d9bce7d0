import Foundation

/// A connection that one thread at a time may use: the store's single writer.
///
/// The lock is recursive so that a group commit, holding the writer for a whole transaction,
/// can run saves (which take it again, on the same thread) inside that transaction.
///
/// `@unchecked Sendable` because the connection is only reached inside `withConnection`,
/// which holds `lock` for the whole call; nothing else keeps a reference to it.
final class SerializedConnection: @unchecked Sendable {
    private let connection: SQLiteConnection
    private let lock = NSRecursiveLock()

    init(_ connection: SQLiteConnection) { self.connection = connection }

    /// Runs `body` with exclusive use of the connection, waiting for any other user to finish.
    func withConnection<T>(_ body: (SQLiteConnection) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(connection)
    }
}
