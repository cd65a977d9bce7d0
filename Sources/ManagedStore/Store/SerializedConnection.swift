#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// The store's single writer connection, used by one thread at a time, and never re-entered.
///
/// A thread that holds it and asks for it again has made a mistake (a save inside a save); that
/// traps with a message instead of deadlocking or silently nesting. The one sanctioned way for
/// several saves to share a transaction is a group commit (`GroupCommit`), which the holding
/// thread installs here: while it runs, saves on that thread join its transaction, each in a
/// savepoint called by name.
///
/// `@unchecked Sendable`: the connection is only reached inside `withConnection` (or through the
/// group installed by the thread that holds the lock); `group` is only touched by that thread.
final class SerializedConnection: @unchecked Sendable {
    private let connection: SQLiteConnection
    private let lock = NSLock()
    /// The group commit the holding thread runs, if any.
    private var group: GroupCommit?

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

    /// The group commit in progress on the current thread, if it holds the writer for one.
    var currentGroup: GroupCommit? { isHeldByCurrentThread ? group : nil }

    /// Runs `body` with exclusive use of the connection, waiting for any other user to finish.
    func withConnection<T>(_ body: (SQLiteConnection) throws -> T) rethrows -> T {
        precondition(!isHeldByCurrentThread, "ManagedStore: the store's writer was asked for again by the thread that holds it "
            + "(a save inside a save, or a store call from inside a write). It cannot be re-entered; inside a group commit, "
            + "saves join the group's transaction.")
        lock.lock()
        pthread_setspecific(Self.holderKey, Unmanaged.passUnretained(self).toOpaque())
        defer {
            pthread_setspecific(Self.holderKey, nil)
            lock.unlock()
        }
        return try body(connection)
    }

    /// Runs `body` holding the writer with `group` installed: saves made on this thread during
    /// `body` join the group.
    func withGroup<T>(_ group: GroupCommit, _ body: () throws -> T) rethrows -> T {
        precondition(isHeldByCurrentThread && self.group == nil, "a group commit runs inside withConnection, one at a time")
        self.group = group
        defer { self.group = nil }
        return try body()
    }
}
