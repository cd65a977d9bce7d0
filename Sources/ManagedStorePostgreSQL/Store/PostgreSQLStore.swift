import Foundation
import ManagedStoreCore
import Synchronization

/// A store in a PostgreSQL database [another NSPersistentStore type behind the same
/// coordinator]: the same model, keys, versions, uniqueness, history and idempotency records as
/// the SQLite store, kept where any number of servers can share them. PostgreSQL does the
/// storage, replication and failover; the store keeps ManagedStore's semantics on top.
///
/// One write connection (writes take turns on it, as on the SQLite store's writer) and a pool
/// of read connections, each read in a `REPEATABLE READ READ ONLY` transaction: one snapshot
/// per read, as a WAL reader's. Checks that must hold against other servers are made in the
/// database (locked rows, versions in the UPDATE's WHERE, unique indexes): see
/// `PGSession+Writing.swift`.
///
/// `@unchecked Sendable`: `writerConnection`, `writerThread` and `currentSession` are only
/// touched by the thread that holds `writerLock` (others read `writerThread` only to learn that
/// they do not hold it); the pool and counters lock themselves.
package final class PostgreSQLStore: PersistentStore, @unchecked Sendable {
    package let identifier: UUID
    package let model: ManagedObjectModel
    package let storeDescription: StoreDescription
    package let appliedMigration: MigrationPlan
    let location: PostgresLocation
    let schema: PGSchema

    private let writerLock = NSLock()
    private var writerConnection: PGConnection
    private var writerThread: pthread_t?
    private var currentSession: PGSession?
    private let readers: PGReaderPool
    /// Whether a save of new objects only leaves its statements waiting for a later save's or
    /// the COMMIT (`PGSession.write`). Off, every save sends its statements when it ends: the
    /// plain path, which tests compare with. Set before the store is used; read by the writer.
    package let defersSaveStatements = Mutex(true)
    private let commits = Mutex<Int>(0)
    private let observers = Mutex<[@Sendable () -> Void]>([])
    /// Started with the first commit observer: other servers' commits call the observers too.
    private let listener = Mutex<PGCommitListener?>(nil)
    /// The channel every commit of this store notifies (`NOTIFY`), named after the store.
    private var channel: String { "managedstore_" + identifier.uuidString.replacingOccurrences(of: "-", with: "").lowercased() }

    /// The lock every server takes while it creates or checks the store's tables, so that one
    /// creates them and the others find them made (`pg_advisory_lock`).
    static let openingLockKey: Int64 = 0x4D53_5354_4F52_45  // "MSSTORE"

    /// Opens the store in the database `description` names (`StoreDescription.Location.postgres`),
    /// creating its tables when the database has none.
    package init(model: ManagedObjectModel, description: StoreDescription) throws(StoreError) {
        guard case .postgres(let uri) = description.location else {
            throw .cannotOpen(path: "\(description.location)", message: "not a PostgreSQL location")
        }
        self.model = model
        self.storeDescription = description
        self.location = PostgresLocation(uri)
        self.schema = PGSchema(model: model)
        let connection = try PGConnection(location)
        self.writerConnection = connection
        (self.identifier, self.appliedMigration) = try PGStoreOpening(connection: connection, schema: schema, location: location)
            .open(creating: description.createsStoreIfMissing, infersMigration: description.shouldInferMappingModelAutomatically)
        self.readers = PGReaderPool(count: description.readerCount, location: location)
    }

    deinit { listener.withLock { $0?.stop() } }

    /// Creates schema `name` in the database `uri` names (a store of its own: name it on the
    /// URI's search path, `?options=-csearch_path%3Dname`). For tests and benchmarks that give
    /// each store a schema in one database.
    package static func createSchema(_ name: String, in uri: String) throws(StoreError) {
        try PGConnection(PostgresLocation(uri)).execute("CREATE SCHEMA IF NOT EXISTS \(PGValues.quote(name))")
    }

    private func session(_ connection: PGConnection, writing: Bool = false) -> PGSession {
        PGSession(connection: connection, schema: schema, storeIdentifier: identifier, isWriter: writing,
                  defersStatements: writing && defersSaveStatements.withLock { $0 })
    }

    private var holdsWriter: Bool { writerThread.map { pthread_equal($0, pthread_self()) != 0 } ?? false }

    // MARK: Reading

    /// Runs `body` in a read-only transaction of one snapshot on `connection`. Its COMMIT is
    /// not waited for (nothing was written): the connection's next command reads its answer.
    /// Its BEGIN goes with its first statement, in one round trip.
    private func inReadTransaction<T>(_ connection: PGConnection, _ body: (PGSession) throws -> T) throws -> T {
        try connection.beginWithNextStatement("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        do {
            let result = try body(session(connection))
            if connection.clearDeferredBegin() { try connection.sendWithoutWaiting("COMMIT") }
            return result
        } catch {
            if connection.clearDeferredBegin() { _ = try? connection.execute("ROLLBACK") }
            throw error
        }
    }

    package func read<T>(throughWriter: Bool, _ body: (any StoreReadSession) throws -> T) throws -> T {
        // The writing thread reads its own transaction, as the SQLite store's writer does.
        if holdsWriter, let currentSession { return try body(currentSession) }
        if throughWriter {
            return try writerLock.withLock { try inReadTransaction(try healthyWriter(), body) }
        }
        return try readers.withReader { _, connection in try inReadTransaction(connection, body) }
    }

    package var readerCount: Int { readers.count }

    /// `body` with a pooled reader's connection, in one read transaction (the store's own
    /// upkeep queries, which need the connection rather than a session).
    private func withReadConnection<T>(_ body: (PGConnection) throws -> T) throws -> T {
        try readers.withReader { _, connection in try inReadTransaction(connection) { try body($0.connection) } }
    }

    package func withPooledReader<T>(_ body: (_ reader: Int, _ session: any StoreReadSession) throws -> T) throws -> T {
        try readers.withReader { slot, connection in try inReadTransaction(connection) { try body(slot, $0) } }
    }

    /// No transaction: the body's one statement runs on its own, and sees one state by itself.
    /// A BEGIN and a COMMIT cost PostgreSQL a wake-up more a read: a GET by key took a third
    /// less time without them. A body that runs more statements than one would read each at its
    /// own later state; debug builds stop there.
    package func withPooledReaderForOneStatement<T>(_ body: (_ reader: Int, _ session: any StoreReadSession) throws -> T) throws -> T {
        try readers.withReader { slot, connection in
            let before = connection.statementCount
            defer { assert(connection.statementCount - before <= 1, "a read lent for one statement ran \(connection.statementCount - before)") }
            return try body(slot, session(connection))
        }
    }

    package func makeSnapshot() -> (any StoreSnapshot)? {
        PGSnapshot(location: location, commitCount: { [weak self] in self?.commitCount ?? 0 }) { [self] in session($0) }
    }

    package var readerWaitHistogram: Histogram { readers.waitHistogram }

    // MARK: Writing

    /// The writer's connection, opened again if the server ended it. Holds `writerLock`.
    private func healthyWriter() throws(StoreError) -> PGConnection {
        if !writerConnection.isHealthy { writerConnection = try PGConnection(location) }
        return writerConnection
    }

    package func write<T>(_ body: (any StoreWriteSession) throws -> T) throws -> T {
        try performGroupCommit { transaction in
            try transaction.inSavepoint { try body(transaction.session) }
        }
    }

    package func performGroupCommit<T>(_ body: (any StoreTransaction) throws -> T) throws -> T {
        precondition(!holdsWriter, "the PostgreSQL store's writer was asked for again by the thread that holds it")
        writerLock.lock()
        writerThread = pthread_self()
        defer {
            currentSession = nil
            writerThread = nil
            writerLock.unlock()
        }
        let connection = try healthyWriter()
        listener.withLock { $0?.addOwnBackend(connection.backendPID) }
        let transaction = try PGTransaction(session: session(connection, writing: true))
        currentSession = transaction.pgSession
        let result: T
        do {
            result = try body(transaction)
        } catch {
            transaction.rollBack()
            throw error
        }
        if transaction.isIntact {
            // Delivered to the listeners of every server when (and only if) this commits; sent
            // with the COMMIT, in one round trip.
            try transaction.commit(notifying: channel)
            let notify = commits.withLock { count -> [@Sendable () -> Void] in
                count += 1
                return observers.withLock { $0 }
            }
            for observer in notify { observer() }
        }
        return result
    }

    package var commitCount: Int { commits.withLock { $0 } }

    package func addCommitObserver(_ observer: @escaping @Sendable () -> Void) {
        observers.withLock { $0.append(observer) }
        listener.withLock { listener in
            guard listener == nil else { return }
            let started = PGCommitListener(channel: channel, location: location) { [weak self] in
                guard let self else { return }
                for observer in self.observers.withLock({ $0 }) { observer() }
            }
            listener = started
            started.start()
        }
    }

    // MARK: Upkeep

    /// PostgreSQL keeps its own log and checkpoints: nothing to do.
    package func settle() throws(StoreError) {}

    /// Stored keys within the keys handed out, versions at least 1, every stored to-one key and
    /// link naming an object that exists (worded as the SQLite store words them).
    package func checkIntegrity() throws -> [String] {
        try withReadConnection { connection in
            var problems: [String] = []
            for table in schema.tables {
                let entity = table.entity
                let keys = try connection.execute("""
                    SELECT (SELECT max(_pk) FROM \(table.table)), (SELECT max(last) FROM _managedstore_keys WHERE entity = ANY($1::text[])),
                           (SELECT count(*) FROM \(table.table) WHERE _version < 1)
                    """, [PGValues.textArray(entity.keySharers.map { model.schema[$0].name })])
                if let highest = keys.int64(0, 0), let last = keys.int64(0, 1), highest > last {
                    problems.append("\(entity.name): key \(highest) is past the keys handed out (\(last))")
                }
                if let belowOne = keys.int64(0, 2), belowOne > 0 { problems.append("\(entity.name): \(belowOne) rows with a version below 1") }
                for (position, r) in entity.foreignKeyRelationships.enumerated() {
                    let relationship = entity.relationships[r]
                    let destination = schema.tables[relationship.destinationIndex]
                    let column = table.foreignKeyColumns[position]
                    let missing = try connection.execute("""
                        SELECT count(*) FROM \(table.table) t WHERE t.\(column) IS NOT NULL
                        AND NOT EXISTS (SELECT 1 FROM \(destination.kindsSource) d WHERE d._pk = t.\(column))
                        """).int64(0, 0) ?? 0
                    if missing > 0 { problems.append("\(entity.name).\(relationship.name): \(missing) links to missing \(destination.entity.name) objects") }
                }
                for relationship in entity.relationships {
                    guard case let .joinTable(link, isFirstSide) = relationship.storage else { continue }
                    let side = isFirstSide ? "a" : "b"
                    let owners = schema.tables[model.linkOwner(of: entity, relationship).index].kindsSource
                    let orphans = try connection.execute("""
                        SELECT count(*) FROM \(PGValues.quote(link)) l WHERE NOT EXISTS (SELECT 1 FROM \(owners) e WHERE e._pk = l.\(side))
                        """).int64(0, 0) ?? 0
                    if orphans > 0 { problems.append("\(entity.name).\(relationship.name): \(orphans) join rows for missing \(entity.name) objects") }
                }
            }
            return problems
        }
    }

    /// The bytes the store's tables and their indexes take in the database. No log of its own:
    /// PostgreSQL's WAL is the database server's, watched with the server's own tools.
    package var figures: [StoreFigure] {
        let size = try? withReadConnection { connection in
            try connection.execute("""
                SELECT COALESCE(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = current_schema() AND c.relkind = 'r'
                """).int64(0, 0) ?? 0
        }
        return [StoreFigure(metric: "store_bytes", help: "Size of the store's tables and their indexes in the database.", value: size ?? 0)]
    }
}
