import Foundation
import ManagedStoreCore

/// A session on one PostgreSQL transaction: a read session in a `REPEATABLE READ READ ONLY`
/// transaction (one snapshot for all its reads), or the write session of the writer's
/// transaction (it sees what the transaction wrote so far).
///
/// Not Sendable: lent to one caller at a time, as any store session.
final class PGSession: StoreWriteSession {
    let connection: PGConnection
    let schema: PGSchema
    let storeIdentifier: UUID
    /// The session of a write transaction: it locks what it reads to decide a write.
    let isWriter: Bool
    var model: ManagedObjectModel { schema.model }

    init(connection: PGConnection, schema: PGSchema, storeIdentifier: UUID, isWriter: Bool = false) {
        self.connection = connection
        self.schema = schema
        self.storeIdentifier = storeIdentifier
        self.isWriter = isWriter
    }

    func id(_ entity: Entity, _ key: Int64) -> ManagedObjectID {
        ManagedObjectID(storeIdentifier: storeIdentifier, entityName: entity.name, key: .permanent(key))
    }

    // MARK: Rows

    func row(of entity: Entity, key: Int64) throws(StoreError) -> StoredRow? {
        let table = schema[entity]
        let result = try connection.execute("SELECT \(table.selectColumns) FROM \(table.table) WHERE _pk = $1", [String(key)])
        return result.rowCount == 0 ? nil : table.storedRow(result, 0).row
    }

    func rows(of entity: Entity, keys: [Int64]) throws(StoreError) -> [Int64: StoredRow] {
        guard !keys.isEmpty else { return [:] }
        let table = schema[entity]
        let result = try connection.execute("SELECT \(table.selectColumns) FROM \(table.table) WHERE _pk = ANY($1::bigint[])",
                                            [PGValues.keyArray(keys)])
        var found: [Int64: StoredRow] = [:]
        for i in 0..<result.rowCount {
            let (key, row) = table.storedRow(result, i)
            found[key] = row
        }
        return found
    }

    /// Every stored row of `entity`, in ascending key order.
    func allRows(of entity: Entity) throws(StoreError) -> [(Int64, StoredRow)] {
        let table = schema[entity]
        let result = try connection.execute("SELECT \(table.selectColumns) FROM \(table.table) ORDER BY _pk")
        return (0..<result.rowCount).map { table.storedRow(result, $0) }
    }

    /// The SQL that reads the destinations of `relationship`: `owner, destination` pairs for the
    /// owners in `$1` (an array), destinations ascending.
    private func destinationSQL(_ entity: Entity, _ r: Int) -> String {
        let relationship = entity.relationships[r]
        switch relationship.storage {
        case .foreignKey:
            let column = PGValues.quote(relationship.name)
            return "SELECT _pk, \(column) FROM \(schema[entity].table) WHERE _pk = ANY($1::bigint[]) AND \(column) IS NOT NULL"
        case .inverseForeignKey:
            let destination = schema.tables[relationship.destinationIndex].table
            let column = PGValues.quote(relationship.inverseName)
            return "SELECT \(column), _pk FROM \(destination) WHERE \(column) = ANY($1::bigint[]) ORDER BY _pk"
        case let .joinTable(table, isFirstSide):
            let (mine, other) = isFirstSide ? ("a", "b") : ("b", "a")
            return "SELECT \(mine), \(other) FROM \(PGValues.quote(table)) WHERE \(mine) = ANY($1::bigint[]) ORDER BY \(other)"
        }
    }

    func destinationKeys(of entity: Entity, relationship: Int, key: Int64) throws(StoreError) -> [Int64] {
        try destinationKeys(of: entity, relationship: relationship, owners: [key])[key] ?? []
    }

    func destinationKeys(of entity: Entity, relationship: Int, owners: [Int64]) throws(StoreError) -> [Int64: [Int64]] {
        guard !owners.isEmpty else { return [:] }
        let result = try connection.execute(destinationSQL(entity, relationship), [PGValues.keyArray(owners)])
        var found: [Int64: [Int64]] = [:]
        for i in 0..<result.rowCount {
            guard let owner = result.int64(i, 0), let destination = result.int64(i, 1) else { continue }
            found[owner, default: []].append(destination)
        }
        return found
    }

    func visitRow(of entity: Entity, key: Int64, _ body: (any StoredRowSource) throws -> Void) throws {
        guard let row = try row(of: entity, key: key) else { return }
        try body(LentRow(row: row, entity: entity) { [self] relationship in try destinationKeys(of: entity, relationship: relationship, key: key) })
    }

    // MARK: Fetches

    func fetchRows(_ fetch: StoreFetch) throws(FetchError) -> [(Int64, StoredRow)] {
        let (graph, found) = try matches(fetch)
        return found.map { ($0.key, graph.rows.rows[$0.entity][$0.key]!) }
    }

    func fetchKeys(_ fetch: StoreFetch) throws(FetchError) -> [Int64] { try matches(fetch).found.map(\.key) }

    func count(_ fetch: StoreFetch) throws(FetchError) -> Int { try matches(fetch, windowed: false).found.count }

    func fetchValues(_ fetch: StoreFetch, keyPaths: [ResolvedKeyPath]) throws(FetchError) -> [[PropertyValue]] {
        let (graph, found) = try matches(fetch)
        return InMemoryFetch(graph: graph).values(of: found, keyPaths: keyPaths, model: model)
    }

    func fetchKeysAndSortValues(_ fetch: StoreFetch) throws(FetchError) -> [(Int64, [AttributeValue])] {
        let (graph, found) = try matches(fetch)
        let inMemory = InMemoryFetch(graph: graph)
        return found.map { ($0.key, inMemory.sortValues(of: $0, fetch)) }
    }

    /// The groups of `aggregate`, computed in memory over the rows it reads, loaded in this
    /// session's snapshot (`InMemoryAggregate`: the SQLite store's results).
    func aggregate(_ aggregate: PreparedAggregate) throws(AggregateError) -> [AggregateGroup] {
        let rows: PGLoadedRows
        do { rows = try PGLoadedRows(entities: aggregate.entitiesRead, session: self) } catch { throw .fetch(.store(error)) }
        let graph = PGRowGraph(rows: rows, model: model, storeIdentifier: storeIdentifier)
        let entity = aggregate.fetch.entity.index
        let candidates = rows.rows[entity].keys.sorted().map { PGRowGraph.Node(entity: entity, key: $0) }
        return try InMemoryAggregate(graph: graph, model: model).groups(aggregate, candidates: candidates)
    }

    /// The objects `fetch` matches: the rows of every entity it reads, loaded in this session's
    /// snapshot, and the in-memory evaluator over them (the results of the SQLite store's SQL,
    /// by construction; compiling predicates to PostgreSQL's SQL is the next step).
    func matches(_ fetch: StoreFetch, windowed: Bool = true) throws(FetchError) -> (graph: PGRowGraph, found: [PGRowGraph.Node]) {
        let rows: PGLoadedRows
        do { rows = try PGLoadedRows(entities: fetch.prepared.entitiesRead, session: self) } catch { throw .store(error) }
        let graph = PGRowGraph(rows: rows, model: model, storeIdentifier: storeIdentifier)
        let entity = fetch.prepared.entity.index
        let candidates = rows.rows[entity].keys.sorted().map { PGRowGraph.Node(entity: entity, key: $0) }
        return (graph, try InMemoryFetch(graph: graph).matches(fetch, candidates: candidates, windowed: windowed))
    }

    // MARK: Idempotency

    func idempotencyRecord(for key: IdempotencyKey) throws(StoreError) -> IdempotencyRecord? {
        // A write looks a key up to decide whether to run: the key is locked until the
        // transaction ends, so that the same key sent to another server at once waits, then
        // finds this one's record and replays it.
        if isWriter { try connection.execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [key.value]) }
        let result = try connection.execute("SELECT fingerprint, answer, created FROM _managedstore_idempotency WHERE key = $1", [key.value])
        guard result.rowCount == 1 else { return nil }
        return IdempotencyRecord(key: key, fingerprint: [UInt8](PGValues.bytea(result.text(0, 0) ?? "")),
                                 answer: [UInt8](PGValues.bytea(result.text(0, 1) ?? "")),
                                 created: Date(timeIntervalSince1970: Double(result.text(0, 2) ?? "") ?? 0))
    }

    func idempotencyRecordCount() throws(StoreError) -> Int {
        Int(try connection.execute("SELECT count(*) FROM _managedstore_idempotency").int64(0, 0) ?? 0)
    }

    func storeIdempotencyRecord(_ record: IdempotencyRecord) throws(StoreError) {
        // A replaced (expired) record moves to the end of the expiry order, as a new one.
        try connection.execute("""
            INSERT INTO _managedstore_idempotency (key, fingerprint, answer, created) VALUES ($1, $2, $3, $4)
            ON CONFLICT (key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, answer = EXCLUDED.answer,
                created = EXCLUDED.created, seq = nextval(pg_get_serial_sequence('_managedstore_idempotency', 'seq'))
            """, [record.key.value, PGValues.byteaText(Data(record.fingerprint)), PGValues.byteaText(Data(record.answer)),
                  PGValues.doubleText(record.created.timeIntervalSince1970)])
    }

    func deleteIdempotencyRecords(createdBefore cutoff: Date, limit: Int) throws(StoreError) -> Int {
        try connection.execute("""
            DELETE FROM _managedstore_idempotency WHERE key IN (
                SELECT key FROM _managedstore_idempotency ORDER BY seq LIMIT $1) AND created < $2
            """, [String(max(1, limit)), PGValues.doubleText(cutoff.timeIntervalSince1970)]).affectedRows
    }

    // MARK: Keys

    func allocateKeys(of entity: Entity, count: Int) throws(StoreError) -> Int64 {
        let result = try connection.execute("UPDATE _managedstore_keys SET last = last + $2 WHERE entity = $1 RETURNING last",
                                            [entity.name, String(count)])
        guard let last = result.int64(0, 0) else {
            throw .engine(code: -1, message: "no key counter for entity \(entity.name)", sql: nil)
        }
        return last - Int64(count) + 1
    }
}
