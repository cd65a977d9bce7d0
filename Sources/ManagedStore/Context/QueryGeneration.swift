import Foundation

/// A generation of the store: its state as of one moment, which a context can be pinned to so
/// that several fetches and faults, across `perform` blocks, see one consistent snapshot while
/// other contexts save [NSQueryGenerationToken].
///
/// `current` pins a context to the generation current when it next reads; a context's own
/// `queryGenerationToken` pins another context to the very same generation.
public final class QueryGenerationToken: Sendable, Equatable, CustomStringConvertible {
    /// Pins a context to the store's current generation (taken at the context's next read).
    public static let current = QueryGenerationToken(snapshot: nil, coordinator: nil)

    /// nil for `current`.
    let snapshot: (any StoreSnapshot)?
    /// The coordinator whose store the snapshot is of (nil for `current`).
    let coordinator: ObjectIdentifier?

    init(snapshot: (any StoreSnapshot)?, coordinator: PersistentStoreCoordinator?) {
        self.snapshot = snapshot
        self.coordinator = coordinator.map(ObjectIdentifier.init)
    }

    public static func == (a: QueryGenerationToken, b: QueryGenerationToken) -> Bool { a.snapshot === b.snapshot }

    public var description: String {
        guard let snapshot else { return "<QueryGenerationToken current>" }
        return snapshot.commit.map { "<QueryGenerationToken after commit \($0)>" } ?? "<QueryGenerationToken not yet read>"
    }
}

/// Why a context cannot be pinned to a query generation.
public enum QueryGenerationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// An in-memory store has one connection, the writer's; it keeps no older states to read.
    case inMemoryStore
    /// The context reads through the writer (a write queue's), so that it sees a group
    /// commit's own writes; it cannot read an older state.
    case readsThroughWriter
    /// The token is another store's.
    case foreignToken
    /// A child context reads its parent, which holds no older states: pin the root context.
    case childContext

    public var description: String {
        switch self {
        case .inMemoryStore: return "query generations need a store file: an in-memory store keeps no older states"
        case .readsThroughWriter: return "a context that reads through the writer cannot be pinned to a query generation"
        case .foreignToken: return "the query generation token belongs to another store"
        case .childContext: return "a child context reads its parent, not the store: pin the root context of its chain to a query generation"
        }
    }
}

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
    private let coordinator: PersistentStoreCoordinator
    private var connection: SQLiteConnection?
    private var openedAtCommit: Int?

    init(coordinator: PersistentStoreCoordinator) { self.coordinator = coordinator }

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
        let opened = try coordinator.openReaderConnection()
        let commit = coordinator.commitCount
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
        var query = SQLQueryBuilder(model: connection.model, root: fetch.prepared.entity)
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

extension ManagedObjectContext {
    /// The generation the context is pinned to; nil when it reads the latest state (the default)
    /// [queryGenerationToken].
    public var queryGenerationToken: QueryGenerationToken? {
        assertOnQueue()
        return pinnedGeneration
    }

    /// Pins the context to a generation of the store, or unpins it with nil
    /// [setQueryGenerationFrom(_:)]. With `.current`, the generation is the store's state at the
    /// context's next read; with another context's `queryGenerationToken`, that context's.
    ///
    /// Until unpinned, every fetch, count and fault of the context reads that state, whatever
    /// other contexts save meanwhile. A pinned context moves on to the current generation when it
    /// saves (a save always compares with, and merges from, the latest state) and on `reset()`.
    /// Objects already registered keep the values they were read with; `refresh` or `reset`
    /// re-reads them.
    public func setQueryGenerationFrom(_ token: QueryGenerationToken?) throws(QueryGenerationError) {
        assertOnQueue()
        guard let token else {
            pinnedGeneration = nil
            return
        }
        guard parent == nil else { throw .childContext }
        guard coordinator.storeDescription.location != .inMemory else { throw .inMemoryStore }
        guard !readsThroughWriter else { throw .readsThroughWriter }
        if token.snapshot != nil {
            guard token.coordinator == ObjectIdentifier(coordinator) else { throw .foreignToken }
            pinnedGeneration = token
        } else {
            pinnedGeneration = QueryGenerationToken(snapshot: coordinator.makeSnapshot(), coordinator: coordinator)
        }
    }

    /// A pinned context's move to the current generation (after a save, on reset).
    func advancePinnedGeneration() {
        guard pinnedGeneration != nil else { return }
        pinnedGeneration = QueryGenerationToken(snapshot: coordinator.makeSnapshot(), coordinator: coordinator)
    }
}

extension PersistentStoreCoordinator {
    /// A new read-only connection to the store file (for a snapshot).
    func openReaderConnection() throws(StoreError) -> SQLiteConnection {
        guard case .file(let url) = storeDescription.location else { throw .cannotOpen(path: ":memory:", message: "no file to read") }
        let connection = try Self.openReader(path: url.path, store: storeDescription)
        connection.model = model
        connection.storeIdentifier = storeIdentifier
        return connection
    }

    /// A snapshot that begins at its first read; nil for a store that keeps no older states
    /// (in memory).
    func makeSnapshot() -> (any StoreSnapshot)? {
        storeDescription.location == .inMemory ? nil : PinnedSnapshot(coordinator: self)
    }
}
