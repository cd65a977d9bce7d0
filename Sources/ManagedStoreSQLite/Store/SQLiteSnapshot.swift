import Foundation
import ManagedStoreCore

/// The SQLite store's snapshot (a pinned generation, an asynchronous fetch): a read-only
/// connection of its own, outside the reader pool (a pinned context may hold it for long;
/// taking it from the pool would leave fewer readers for everyone else), whose read transaction
/// begins at the first read and stays open until the last user lets go. While it is open the
/// WAL cannot be emptied past it, as with any long read: pin for as long as a consistent view
/// is needed.
///
/// `@unchecked Sendable`: `connection` and `commit` are only touched holding `lock`, so contexts
/// on different queues pinned to one generation take turns on its connection.
final class PinnedSnapshot: StoreSnapshot, @unchecked Sendable {
    private let lock = NSLock()
    private let store: SQLiteStore
    private var connection: SQLiteConnection?
    private var openedAtCommit: Int?

    init(store: SQLiteStore) { self.store = store }

    deinit {
        if let connection, connection.isInTransaction { try? connection.cachedStatement("COMMIT").execute() }
    }

    var commit: Int? { lock.withLock { openedAtCommit } }

    func read<T>(_ body: (any StoreReadSession) throws -> T) throws -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(try begun())
    }

    func openKeyStream(_ fetch: StoreFetch) throws(FetchError) -> any StoreKeyStream {
        lock.lock()
        defer { lock.unlock() }
        let connection: SQLiteConnection
        do { connection = try begun() } catch {
            throw SQLiteFetch.fetchError(error, sql: "BEGIN", prepared: fetch.prepared, limits: fetch.prepared.limits())
        }
        return try SQLiteKeyStream(connection: connection, fetch: fetch, lock: lock)
    }

    /// The snapshot's connection, taking the snapshot first if not yet taken (holding `lock`).
    private func begun() throws -> SQLiteConnection {
        if let connection { return connection }
        let opened = try store.openReader()
        let commit = store.commitCount
        // BEGIN alone takes no snapshot; the first read does. Take it now, so the generation
        // is fixed here and not by whatever the body reads first.
        try opened.cachedStatement("BEGIN DEFERRED").execute()
        try opened.cachedStatement("SELECT count(*) FROM sqlite_schema").execute()
        connection = opened
        openedAtCommit = commit
        return opened
    }
}

/// One statement over a snapshot's connection, stepped a page at a time: SQLite sorts once,
/// and every page sees the same snapshot.
///
/// Not Sendable: an asynchronous fetch uses it on its context's queue, turn after turn.
final class SQLiteKeyStream: StoreKeyStream {
    private let statement: SQLiteStatement
    private let connection: SQLiteConnection
    private let fetch: StoreFetch
    private let lock: NSLock

    init(connection: SQLiteConnection, fetch: StoreFetch, lock: NSLock) throws(FetchError) {
        self.connection = connection
        self.fetch = fetch
        self.lock = lock
        var query = SQLQueryBuilder(model: connection.model, root: fetch.prepared.entity, tables: connection.schema)
        let sql = SQLiteFetch.selectSQL(fetch.prepared, columns: "t0.\"_pk\"", query: &query, limit: fetch.limit, offset: fetch.offset)
        do {
            statement = try SQLiteStatement(connection: connection, sql: sql)
        } catch {
            throw SQLiteFetch.fetchError(error, sql: sql, prepared: fetch.prepared, limits: fetch.prepared.limits())
        }
        for (i, value) in query.bindings.enumerated() { statement.bind(value, at: Int32(i + 1)) }
    }

    func next(_ count: Int) throws(FetchError) -> [Int64] {
        lock.lock()
        defer { lock.unlock() }
        let limits = fetch.prepared.limits()
        do {
            return try connection.withLimits(limits) { () throws(StoreError) -> [Int64] in
                var keys: [Int64] = []
                while keys.count < count, try statement.step() { keys.append(statement.int64(0)) }
                return keys
            }
        } catch {
            throw SQLiteFetch.fetchError(error, sql: "(asynchronous fetch)", prepared: fetch.prepared, limits: limits)
        }
    }
}
