import CSQLite
import Foundation
import Synchronization

/// Owns a store's connections: one writer, serialized, and a pool of readers
/// [NSPersistentStoreCoordinator]. Contexts read through the pool and save through the writer.
public final class PersistentStoreCoordinator: Sendable {
    public let model: ManagedObjectModel
    public let storeDescription: StoreDescription
    /// The UUID recorded in the store when it was created; part of every object ID.
    public let storeIdentifier: UUID
    /// What opening the store changed in it: a file format upgrade, a migration from the model
    /// it was made with. Empty when it matched (or was created).
    public let appliedMigration: MigrationPlan

    let writer: SerializedConnection
    /// The one pool of readers and their read contexts. An in-memory store's readers have no
    /// connection (its one connection, the writer's, serves reads too).
    let readers: ReaderPool
    /// The writer's WAL bookkeeping; nil for an in-memory store.
    private let wal: WriteAheadLog?
    private let commits = Atomic<Int>(0)
    /// Called after every COMMIT (`addCommitObserver`).
    private let commitObservers = Mutex<[@Sendable () -> Void]>([])
    /// Contexts that merge every other context's save (`automaticallyMergesChangesFromParent`).
    let mergingContexts = MergingContexts()

    /// Opens (or creates) the store. A store made from another model is migrated to this one
    /// when the changes can be inferred (`StoreDescription.shouldInferMappingModelAutomatically`,
    /// on by default), in the transaction that opens it; otherwise it is refused, unchanged:
    /// `StoreError.migrationNotInferable` lists every reason.
    public init(model: ManagedObjectModel, store: StoreDescription) throws(StoreError) {
        self.model = model
        self.storeDescription = store
        let path: String
        switch store.location {
        case .inMemory:
            path = ":memory:"
        case .file(let url):
            path = url.path
            let directory = url.deletingLastPathComponent()
            try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        }
        let connection = try SQLiteConnection(path: path)
        if store.location != .inMemory {
            // The writer reads through its own page cache: mapped, a growing file is mapped
            // again and again, and a 1M-object import ran 25% slower (0.50-0.60 of raw SQLite
            // against 0.69-0.81 unmapped).
            try Self.configureWriter(connection, durability: store.durability)
            let wal = WriteAheadLog()
            try wal.attach(to: connection)
            self.wal = wal
        } else {
            self.wal = nil
        }
        (self.storeIdentifier, self.appliedMigration) = try StoreOpening.prepare(
            connection, model: model, path: path, infersMigration: store.shouldInferMappingModelAutomatically)
        connection.model = model
        connection.storeIdentifier = storeIdentifier
        self.writer = SerializedConnection(connection)
        var readers: [SQLiteConnection?] = []
        for _ in 0..<store.readerCount {
            guard store.location != .inMemory else { readers.append(nil); continue }
            let reader = try Self.openReader(path: path, store: store)
            reader.model = model
            reader.storeIdentifier = storeIdentifier
            readers.append(reader)
        }
        self.readers = ReaderPool(readers)
    }

    /// A read-only connection to the store file.
    static func openReader(path: String, store: StoreDescription) throws(StoreError) -> SQLiteConnection {
        let reader = try SQLiteConnection(path: path, flags: SQLITE_OPEN_READWRITE)
        try reader.execute("PRAGMA query_only = ON; PRAGMA mmap_size = \(store.memoryMapSize)")
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

    // MARK: Connections

    /// Runs `body` on a reader (the writer for an in-memory store, or when `throughWriter`)
    /// inside one read transaction.
    func read<T>(throughWriter: Bool = false, _ body: (SQLiteConnection) throws -> T) throws -> T {
        if !throughWriter, storeDescription.location != .inMemory {
            return try readers.withReader(currentCommit: { commitCount }) { reader in
                if let connection = try ReaderPool.beginSnapshot(reader, now: commitCount) { return try body(connection) }
                return try readThroughWriter(body)
            }
        }
        return try readThroughWriter(body)
    }

    /// `body` on the writer's connection, in a read transaction (or in the group commit's, on
    /// its thread).
    private func readThroughWriter<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        // Inside a group commit, on its thread: the group's transaction shows its own writes.
        if let group = writer.currentGroup { return try body(group.connection) }
        return try writer.withConnection { connection in try connection.readTransaction { try body(connection) } }
    }

    /// Runs `body` on the writer inside one write transaction, and commits; rolls back if it
    /// throws. Inside a group commit (on its thread) `body` joins the group's transaction in a
    /// savepoint of its own instead.
    func write<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        if let group = writer.currentGroup {
            return try group.inSavepoint("save") { try body(group.connection) }
        }
        return try writer.withConnection { connection in
            let result = try connection.inTransaction { try body(connection) }
            didCommit(connection)
            return result
        }
    }

    /// What follows every COMMIT of the writer (on its thread, holding it).
    func didCommit(_ connection: SQLiteConnection) {
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

    /// Copies every committed change from the WAL into the database file and empties the WAL,
    /// waiting as long as a busy store is waited for (up to 10 s) for readers still using it
    /// [a checkpoint]. A store file copied after this holds everything, without its `-wal`.
    /// An in-memory store has nothing to do.
    public func checkpoint() throws(StoreError) {
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

    /// The size of the store's `-wal` file in bytes (0 when there is none, or in memory).
    public var walSize: Int64 { fileSize(suffix: "-wal") }

    /// The size of the store's database file in bytes, without its WAL (0 in memory).
    public var storeSize: Int64 { fileSize(suffix: "") }

    private func fileSize(suffix: String) -> Int64 {
        guard case .file(let url) = storeDescription.location else { return 0 }
        let attributes = try? FileManager.default.attributesOfItem(atPath: url.path + suffix)
        return (attributes?[.size] as? NSNumber)?.int64Value ?? 0
    }

    /// How long reads have waited for one of the store's readers so far (a read of an
    /// in-memory store goes through the writer, and is not counted).
    public var readerWaitHistogram: Histogram { readers.waitHistogram }

    /// Calls `observer` after every transaction the store commits (on the committing thread,
    /// holding the writer: hand anything more than a signal to another queue). What a change
    /// feed waits on: read the history after the token you last saw to learn what changed.
    public func addCommitObserver(_ observer: @escaping @Sendable () -> Void) {
        commitObservers.withLock { $0.append(observer) }
    }

    /// How many write transactions have committed since the store was opened (a group commit
    /// counts once, however many saves it held).
    public var commitCount: Int { commits.load(ordering: .sequentiallyConsistent) }

    // MARK: IDs

    /// The object ID a URI names, if it belongs to this store and model.
    public func managedObjectID(forURIRepresentation uri: URL) -> ManagedObjectID? {
        guard let id = ManagedObjectID(uriRepresentation: uri), isValid(id) else { return nil }
        return id
    }

    /// The permanent ID of the object `pk` of `entityName` (the API's `Entity/pk` form).
    public func managedObjectID(entityName: String, primaryKey: Int64) -> ManagedObjectID? {
        guard model.entityIndexByName[entityName] != nil, primaryKey > 0 else { return nil }
        return ManagedObjectID(storeIdentifier: storeIdentifier, entityName: entityName, key: .permanent(primaryKey))
    }

    /// The permanent ID written `Entity/pk` (the form `ManagedObjectID.description` gives, and
    /// the API uses), if it names an entity of this model and a positive key.
    public func managedObjectID(fromDescription text: String) -> ManagedObjectID? {
        guard let id = ManagedObjectID(description: text, storeIdentifier: storeIdentifier), isValid(id) else { return nil }
        return id
    }

    func isValid(_ id: ManagedObjectID) -> Bool {
        id.storeIdentifier == storeIdentifier && model.entityIndexByName[id.entityName] != nil
    }

    // MARK: Integrity

    /// Checks the store: SQLite's own integrity check, every stored link pointing at an existing
    /// object, versions at least 1, and the key sequence ahead of every key. Returns the problems found.
    public func checkIntegrity() throws -> [String] {
        try writer.withConnection { connection in
            var problems: [String] = []
            let verdict = try connection.withStatement("PRAGMA integrity_check") { s throws(StoreError) in try s.step() ? s.text(0) : "" }
            if verdict != "ok" { problems.append("integrity_check: \(verdict)") }
            for entity in model.schema {
                if let n = try connection.scalarInt("SELECT count(*) FROM \(entity.table) WHERE \"_version\" < 1"), n > 0 {
                    problems.append("\(entity.name): \(n) rows with a version below 1")
                }
                let maxKey = try connection.scalarInt("SELECT max(\"_pk\") FROM \(entity.table)") ?? 0
                let sequence = try connection.scalarInt("SELECT \"max\" FROM \"_sequence\" WHERE \"entity\" = ?", [.string(entity.name)]) ?? 0
                if maxKey > sequence { problems.append("\(entity.name): key \(maxKey) is past the sequence (\(sequence))") }
                for relationship in entity.relationships {
                    let destination = model.schema[relationship.destinationIndex]
                    switch relationship.storage {
                    case .foreignKey(let column):
                        let sql = "SELECT count(*) FROM \(entity.table) AS t WHERE t.\(column) IS NOT NULL "
                            + "AND NOT EXISTS (SELECT 1 FROM \(destination.table) AS d WHERE d.\"_pk\" = t.\(column))"
                        if let n = try connection.scalarInt(sql), n > 0 {
                            problems.append("\(entity.name).\(relationship.name): \(n) links to missing \(destination.name) objects")
                        }
                    case let .joinTable(table, ownColumn, _):
                        let sql = "SELECT count(*) FROM \(table) AS j WHERE NOT EXISTS "
                            + "(SELECT 1 FROM \(entity.table) AS e WHERE e.\"_pk\" = j.\(ownColumn))"
                        if let n = try connection.scalarInt(sql), n > 0 {
                            problems.append("\(entity.name).\(relationship.name): \(n) join rows for missing \(entity.name) objects")
                        }
                    case .inverseForeignKey:
                        break  // checked from the side that stores the key
                    }
                }
            }
            return problems
        }
    }
}
