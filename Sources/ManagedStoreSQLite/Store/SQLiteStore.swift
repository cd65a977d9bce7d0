import CSQLite
import Foundation
import Synchronization
import ManagedStoreCore

/// The SQLite store: one file in WAL mode (or a private in-memory database), one writer
/// connection that every write goes through, serialized, and a pool of read-only readers that
/// never wait for it [NSSQLiteStoreType].
///
/// Everything SQLite lives behind it: connections and their statement caches, the schema and
/// its migration, the SQL compiled from predicates and aggregates, WAL bookkeeping, the
/// history and idempotency tables.
package final class SQLiteStore: PersistentStore {
    package let identifier: UUID
    package let model: ManagedObjectModel
    package let storeDescription: StoreDescription
    package let appliedMigration: MigrationPlan
    /// The tables of the model's entities, shared by every connection.
    let schema: SQLiteSchema
    /// The budgets of its fetch plans, shared by its connections (tests lower them).
    package let planOptions = SQLitePlanOptions()

    let writer: SerializedConnection
    /// The one pool of readers. An in-memory store's readers have no connection (its one
    /// connection, the writer's, serves reads too).
    let readers: ReaderPool
    /// The writer's WAL bookkeeping; nil for an in-memory store.
    private let wal: WriteAheadLog?
    private let commits = Atomic<Int>(0)
    /// Called after every COMMIT (`addCommitObserver`).
    private let commitObservers = Mutex<[@Sendable () -> Void]>([])

    /// Opens (or creates) the store. A store made from another model is migrated to this one
    /// when the changes can be inferred (`StoreDescription.shouldInferMappingModelAutomatically`),
    /// in the transaction that opens it; otherwise it is refused, unchanged.
    package init(model: ManagedObjectModel, description: StoreDescription) throws(StoreError) {
        self.model = model
        self.storeDescription = description
        let path: String
        switch description.location {
        case .inMemory:
            path = ":memory:"
        case .file(let url):
            path = url.path
            let directory = url.deletingLastPathComponent()
            try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        case .postgres:
            throw .cannotOpen(path: "postgres://", message: "a PostgreSQL database is opened by PostgreSQLStore, not the SQLite store")
        }
        let connection = try SQLiteConnection(path: path)
        if description.location != .inMemory {
            // The writer reads through its own page cache: mapped, a growing file is mapped
            // again and again as it grows, which slowed bulk inserts (Benchmarks/RESULTS.md).
            try Self.configureWriter(connection, durability: description.durability)
            let wal = WriteAheadLog()
            try wal.attach(to: connection)
            self.wal = wal
        } else {
            self.wal = nil
        }
        (self.identifier, self.appliedMigration) = try StoreOpening.prepare(
            connection, model: model, path: path, infersMigration: description.shouldInferMappingModelAutomatically)
        let schema = SQLiteSchema(model)
        self.schema = schema
        connection.belong(to: model, schema: schema, storeIdentifier: identifier, planOptions: planOptions)
        self.writer = SerializedConnection(connection)
        var readers: [SQLiteConnection?] = []
        for _ in 0..<description.readerCount {
            guard description.location != .inMemory else { readers.append(nil); continue }
            let reader = try Self.openReader(path: path, description: description)
            reader.belong(to: model, schema: schema, storeIdentifier: identifier, planOptions: planOptions)
            readers.append(reader)
        }
        self.readers = ReaderPool(readers)
    }

    /// A read-only connection to the store file.
    static func openReader(path: String, description: StoreDescription) throws(StoreError) -> SQLiteConnection {
        let reader = try SQLiteConnection(path: path, flags: SQLITE_OPEN_READWRITE)
        try reader.execute("PRAGMA query_only = ON; PRAGMA mmap_size = \(description.memoryMapSize)")
        return reader
    }

    /// A new read-only connection of this store's (a snapshot's).
    func openReader() throws(StoreError) -> SQLiteConnection {
        guard case .file(let url) = storeDescription.location else { throw .cannotOpen(path: ":memory:", message: "no file to read") }
        let reader = try Self.openReader(path: url.path, description: storeDescription)
        reader.belong(to: model, schema: schema, storeIdentifier: identifier, planOptions: planOptions)
        return reader
    }

    private static func configureWriter(_ connection: SQLiteConnection, durability: StoreDescription.Durability) throws(StoreError) {
        let mode = try connection.withStatement("PRAGMA journal_mode = WAL") { s throws(StoreError) in
            try s.step() ? s.text(0) : ""
        }
        guard mode.lowercased() == "wal" else {
            throw .cannotOpen(path: connection.path, message: "could not switch to WAL mode (got \(mode))")
        }
        // Debian's SQLite defaults WAL to FULL; say which one is meant either way.
        try connection.execute("PRAGMA synchronous = \(durability == .full ? "FULL" : "NORMAL")")
    }

    private var isInMemory: Bool { storeDescription.location == .inMemory }

    // MARK: Reading

    package func read<T>(throughWriter: Bool, _ body: (any StoreReadSession) throws -> T) throws -> T {
        if !throughWriter, !isInMemory {
            return try readers.withReader(currentCommit: { commitCount }) { reader in
                if let connection = try ReaderPool.beginSnapshot(reader, now: commitCount) { return try body(connection) }
                return try readThroughWriter(body)
            }
        }
        return try readThroughWriter(body)
    }

    package var readerCount: Int { storeDescription.readerCount }

    package func withPooledReader<T>(_ body: (_ reader: Int, _ session: any StoreReadSession) throws -> T) throws -> T {
        try readers.withReader(currentCommit: { commitCount }) { reader in
            if let connection = try ReaderPool.beginSnapshot(reader, now: commitCount) { return try body(reader.number, connection) }
            return try readThroughWriter { session in try body(reader.number, session) }  // in memory
        }
    }

    /// `body` on the writer's connection, in a read transaction. A thread that holds the writer
    /// for a group commit reads in the group's transaction: the writer cannot be taken twice,
    /// and for an in-memory store it is the only connection there is.
    private func readThroughWriter<T>(_ body: (any StoreReadSession) throws -> T) throws -> T {
        if let held = writer.connectionHeldByCurrentThread { return try body(held) }
        return try writer.withConnection { connection in try connection.readTransaction { try body(connection) } }
    }

    package func makeSnapshot() -> (any StoreSnapshot)? {
        isInMemory ? nil : PinnedSnapshot(store: self)
    }

    package var readerWaitHistogram: Histogram { readers.waitHistogram }

    // MARK: Writing

    package func write<T>(_ body: (any StoreWriteSession) throws -> T) throws -> T {
        try writer.withConnection { connection in
            let result = try connection.inTransaction { try body(connection) }
            didCommit(connection)
            return result
        }
    }

    package func performGroupCommit<T>(_ body: (any StoreTransaction) throws -> T) throws -> T {
        try writer.withConnection { connection in
            let transaction = SQLiteTransaction(connection)
            try transaction.begin()
            do {
                let result = try body(transaction)
                if try transaction.commit() { didCommit(connection) }
                return result
            } catch {
                transaction.rollBack()
                throw error
            }
        }
    }

    package var commitCount: Int { commits.load(ordering: .sequentiallyConsistent) }

    package func addCommitObserver(_ observer: @escaping @Sendable () -> Void) {
        commitObservers.withLock { $0.append(observer) }
    }

    /// What follows every COMMIT of the writer (on its thread, holding it).
    private func didCommit(_ connection: SQLiteConnection) {
        // Counted before the caller can acknowledge the write: readers compare their
        // snapshot with this count (ReaderPool), so a read after the answer sees it.
        let count = commits.add(1, ordering: .sequentiallyConsistent).newValue
        readers.endStaleSnapshots(current: count)
        for observer in commitObservers.withLock({ $0 }) { observer() }
        if let wal, wal.needsCheckpoint {
            // Idle readers' snapshots end first: a WAL still in use cannot be emptied
            // (WriteAheadLog.swift). A checkpoint that fails leaves the WAL as it was, every
            // change in it safe; the next commit tries again.
            _ = try? wal.truncate(connection) { readers.endIdleSnapshots() }
        }
    }

    // MARK: Upkeep

    /// Settling is a checkpoint: every committed change copied from the WAL into the database
    /// file and the WAL emptied, waiting as long as a busy store is waited for (up to 10 s) for
    /// readers still using it.
    package func settle() throws(StoreError) { try checkpoint() }

    /// Copies every committed change from the WAL into the database file and empties the WAL,
    /// waiting as long as a busy store is waited for (up to 10 s) for readers still using it.
    package func checkpoint() throws(StoreError) {
        guard let wal else { return }
        let emptied: Bool
        do {
            emptied = try writer.withConnection { connection in
                try wal.truncate(connection, waitMilliseconds: SQLiteConnection.busyTimeoutMilliseconds) { readers.endIdleSnapshots() }
            }
        } catch {
            throw StoreError(wrapping: error)
        }
        guard emptied else { throw .busy("readers kept using the WAL; the checkpoint could not empty it") }
    }

    /// The database file's size and its WAL's (0 in memory), as `/v1/metrics` has always named
    /// them; the WAL's is in `/v1/healthz` too.
    package var figures: [StoreFigure] {
        [StoreFigure(metric: "store_bytes", help: "Size of the store's database file.", value: fileSize(suffix: "")),
         StoreFigure(metric: "wal_bytes", healthKey: "walBytes", help: "Size of the store's write-ahead log.", value: fileSize(suffix: "-wal"))]
    }

    private func fileSize(suffix: String) -> Int64 {
        guard case .file(let url) = storeDescription.location else { return 0 }
        let attributes = try? FileManager.default.attributesOfItem(atPath: url.path + suffix)
        return (attributes?[.size] as? NSNumber)?.int64Value ?? 0
    }

    package func checkIntegrity() throws -> [String] {
        try writer.withConnection { connection in try SQLiteIntegrity.problems(connection, model: model) }
    }
}

/// A group commit's transaction on the writer (`SQLiteStore.performGroupCommit`).
///
/// Not Sendable: used on the writer's thread, holding it.
final class SQLiteTransaction: StoreTransaction {
    private let connection: SQLiteConnection

    init(_ connection: SQLiteConnection) { self.connection = connection }

    var session: any StoreWriteSession { connection }

    var isIntact: Bool { connection.isInTransaction }

    func begin() throws(StoreError) { try connection.cachedStatement("BEGIN IMMEDIATE").execute() }

    /// Commits if the transaction is still open; returns whether it committed.
    func commit() throws(StoreError) -> Bool {
        guard connection.isInTransaction else { return false }
        try connection.cachedStatement("COMMIT").execute()
        return true
    }

    func restart() throws(StoreError) {
        guard !connection.isInTransaction else { return }
        try begin()
    }

    func rollBack() {
        if connection.isInTransaction { try? connection.cachedStatement("ROLLBACK").execute() }
    }

    func inSavepoint<T>(_ body: () throws -> T) throws -> T { try connection.inSavepoint("unit", body) }
}
