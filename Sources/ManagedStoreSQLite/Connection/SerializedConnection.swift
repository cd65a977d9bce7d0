#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import ManagedStoreCore

/// The store's single writer connection, used by one thread at a time, and never re-entered.
///
/// A thread that holds it and asks for it again has made a mistake (a save inside a save); that
/// traps with a message instead of deadlocking or silently nesting. Several saves share a
/// transaction only through a group commit, whose transaction is handed to them
/// (`GroupCommit`); a read on the holding thread is answered in its transaction
/// (`connectionHeldByCurrentThread`).
///
/// `@unchecked Sendable`: the connection is only reached inside `withConnection`, or by the
/// thread that holds the lock.
final class SerializedConnection: @unchecked Sendable {
    private let connection: SQLiteConnection
    private let lock = NSLock()

    /// Marks the thread that holds a writer (the writer's address), to catch re-entry.
    private static let holderKey: pthread_key_t = {
        var key = pthread_key_t()
        let status = pthread_key_create(&key, nil)
        precondition(status == 0, "pthread_key_create failed (\(status))")
        return key
    }()

    init(_ connection: SQLiteConnection) { self.connection = connection }

    /// Whether the current thread holds this writer.
    var isHeldByCurrentThread: Bool {
        let holder: UnsafeMutableRawPointer? = pthread_getspecific(Self.holderKey)
        return holder == Unmanaged.passUnretained(self).toOpaque()
    }

    /// The connection, if the current thread holds it (inside `withConnection`).
    var connectionHeldByCurrentThread: SQLiteConnection? { isHeldByCurrentThread ? connection : nil }

    /// Runs `body` with exclusive use of the connection, waiting for any other user to finish.
    func withConnection<T>(_ body: (SQLiteConnection) throws -> T) rethrows -> T {
        precondition(!isHeldByCurrentThread, "ManagedStore: the store's writer was asked for again by the thread that holds it "
            + "(a save inside a save, or a store call from inside a write). It cannot be re-entered; inside a group commit, "
            + "save the context that runs the group (PersistentStoreCoordinator.performGroupCommit(in:)).")
        lock.lock()
        pthread_setspecific(Self.holderKey, Unmanaged.passUnretained(self).toOpaque())
        defer {
            pthread_setspecific(Self.holderKey, nil)
            lock.unlock()
        }
        return try body(connection)
    }
}
