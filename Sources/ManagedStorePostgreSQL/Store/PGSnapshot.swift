import Foundation
import ManagedStoreCore

/// A snapshot held open across calls: a connection of its own in a `REPEATABLE READ READ ONLY`
/// transaction, begun at the first read and ended when the snapshot goes.
///
/// `@unchecked Sendable`: `connection` and `taken` are only touched under `lock`.
final class PGSnapshot: StoreSnapshot, @unchecked Sendable {
    private let lock = NSLock()
    private var connection: PGConnection?
    private var taken: Int?
    private let location: PostgresLocation
    private let commitCount: @Sendable () -> Int
    private let makeSession: (PGConnection) -> PGSession

    init(location: PostgresLocation, commitCount: @escaping @Sendable () -> Int, session: @escaping (PGConnection) -> PGSession) {
        self.location = location
        self.commitCount = commitCount
        self.makeSession = session
    }

    deinit { _ = try? connection?.execute("ROLLBACK") }

    var commit: Int? { lock.withLock { taken } }

    /// The snapshot's connection; the first call begins its transaction and takes the snapshot
    /// (PostgreSQL takes it at the transaction's first statement).
    private func begun() throws(StoreError) -> PGConnection {
        if let connection { return connection }
        let opened = try PGConnection(location)
        let count = commitCount()
        try opened.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        try opened.execute("SELECT 1")
        connection = opened
        taken = count
        return opened
    }

    func read<T>(_ body: (any StoreReadSession) throws -> T) throws -> T {
        try lock.withLock { try body(makeSession(try begun())) }
    }

    func openKeyStream(_ fetch: StoreFetch) throws(FetchError) -> any StoreKeyStream {
        lock.lock()
        defer { lock.unlock() }
        let connection: PGConnection
        do { connection = try begun() } catch { throw .store(error) }
        return ListedKeyStream(keys: try makeSession(connection).fetchKeys(fetch))
    }
}
