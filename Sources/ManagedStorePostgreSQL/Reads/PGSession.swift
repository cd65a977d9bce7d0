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
    /// The counters as the group commit's transaction moved them (a write session's only: a
    /// read session, one a GET, never makes them).
    lazy var counters = PGGroupCounters()
    var model: ManagedObjectModel { schema.model }

    /// Whether a save of new objects only leaves its statements waiting (`write`).
    let defersStatements: Bool

    init(connection: PGConnection, schema: PGSchema, storeIdentifier: UUID, isWriter: Bool = false, defersStatements: Bool = false) {
        self.connection = connection
        self.schema = schema
        self.storeIdentifier = storeIdentifier
        self.isWriter = isWriter
        self.defersStatements = defersStatements
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

    func existingKeys(of entity: Entity, among keys: [Int64]) throws(StoreError) -> Set<Int64> {
        guard !keys.isEmpty else { return [] }
        let result = try connection.execute("SELECT _pk FROM \(schema[entity].table) WHERE _pk = ANY($1::bigint[])", [PGValues.keyArray(keys)])
        return Set((0..<result.rowCount).compactMap { result.int64($0, 0) })
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
        guard let source = schema.destinationSource(entity, r) else {
            let column = PGValues.quote(entity.relationships[r].name)
            return "SELECT _pk, \(column) FROM \(schema[entity].table) WHERE _pk = ANY($1::bigint[]) AND \(column) IS NOT NULL"
        }
        return "SELECT \(source.owner), \(source.destination) FROM \(source.from) WHERE \(source.owner) = ANY($1::bigint[]) ORDER BY \(source.order)"
    }

    func ownerKeys(of entity: Entity, relationship r: Int, destination: Int64) throws(StoreError) -> [Int64] {
        let relationship = entity.relationships[r]
        let sql: String
        switch relationship.storage {
        case .foreignKey:
            sql = "SELECT _pk FROM \(schema[entity].table) WHERE \(PGValues.quote(relationship.name)) = $1 ORDER BY _pk"
        case let .joinTable(table, isFirstSide):
            let (mine, other) = isFirstSide ? ("a", "b") : ("b", "a")
            sql = "SELECT \(mine) FROM \(PGValues.quote(table)) WHERE \(other) = $1 ORDER BY \(mine)"
        case .inverseForeignKey:
            return []  // not one-way: its inverse is kept in step instead
        }
        let result = try connection.execute(sql, [String(destination)])
        return (0..<result.rowCount).compactMap { result.int64($0, 0) }
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

    /// One object's row with the destinations of each relationship the row does not hold
    /// (to-many, and a to-one whose key the other side keeps), in one statement: a GET is one
    /// round trip to PostgreSQL, not one plus one per such relationship.
    func visitRow(of entity: Entity, key: Int64, _ body: (any StoredRowSource) throws -> Void) throws {
        let read = schema.rowsWithDestinations[entity.index]
        let result = try connection.execute(read.sql, [String(key)])
        guard result.rowCount > 0 else { return }
        let row = schema[entity].storedRow(result, 0).row
        let first = result.columnCount - read.relationships.count
        var destinations: [Int: [Int64]] = [:]
        for (i, r) in read.relationships.enumerated() { destinations[r] = PGValues.keys(fromArray: result.text(0, first + i) ?? "{}") }
        try body(LentRow(row: row, entity: entity) { relationship in destinations[relationship] ?? [] })
    }

    // MARK: Fetches

    func fetchRows(_ fetch: StoreFetch) throws(FetchError) -> [(Int64, StoredRow)] {
        try underDeadline(fetch) { () throws(FetchError) in try rowsUnderDeadline(fetch) }
    }

    private func rowsUnderDeadline(_ fetch: StoreFetch) throws(FetchError) -> [(Int64, StoredRow)] {
        let plan = self.plan(fetch)
        if let window = sqlWindow(fetch, plan) {
            let table = schema[fetch.prepared.entity]
            let result = try fetchSQL("SELECT \(table.selectColumns) FROM \(table.table) WHERE \(plan.condition) ORDER BY \(window)", plan.parameters)
            return (0..<result.rowCount).map { table.storedRow(result, $0) }
        }
        if let order = streamOrder(fetch, plan) {
            return try streamedMatches(fetch, plan, orderBy: order, windowed: true, keepsRows: true).rows
        }
        let (graph, found) = try matches(fetch, plan)
        return found.map { ($0.key, graph.rows.rows[$0.entity][$0.key]!) }
    }

    func fetchKeys(_ fetch: StoreFetch) throws(FetchError) -> [Int64] {
        try underDeadline(fetch) { () throws(FetchError) in try keysUnderDeadline(fetch) }
    }

    private func keysUnderDeadline(_ fetch: StoreFetch) throws(FetchError) -> [Int64] {
        let plan = self.plan(fetch)
        if let window = sqlWindow(fetch, plan) {
            let table = schema[fetch.prepared.entity]
            let result = try fetchSQL("SELECT _pk FROM \(table.table) WHERE \(plan.condition) ORDER BY \(window)", plan.parameters)
            return (0..<result.rowCount).compactMap { result.int64($0, 0) }
        }
        if let order = streamOrder(fetch, plan) {
            return try streamedMatches(fetch, plan, orderBy: order, windowed: true, keepsRows: true).rows.map(\.0)
        }
        return try matches(fetch, plan).found.map(\.key)
    }

    func count(_ fetch: StoreFetch) throws(FetchError) -> Int {
        try underDeadline(fetch) { () throws(FetchError) in try countUnderDeadline(fetch) }
    }

    private func countUnderDeadline(_ fetch: StoreFetch) throws(FetchError) -> Int {
        let plan = self.plan(fetch)
        if plan.residual == nil && (fetch.prepared.after == nil || plan.cursorCompiled) {
            let table = schema[fetch.prepared.entity]
            return Int(try fetchSQL("SELECT count(*) FROM \(table.table) WHERE \(plan.condition)", plan.parameters).int64(0, 0) ?? 0)
        }
        if let order = streamOrder(fetch, plan) {
            return try streamedMatches(fetch, plan, orderBy: order, windowed: false, keepsRows: false).count
        }
        return try matches(fetch, plan, windowed: false).found.count
    }

    func fetchValues(_ fetch: StoreFetch, keyPaths: [ResolvedKeyPath]) throws(FetchError) -> [[PropertyValue]] {
        try underDeadline(fetch) { () throws(FetchError) in
            let (graph, found) = try matches(fetch, plan(fetch), readsRelated: keyPaths.contains { !Self.readsOwnRow($0) })
            return InMemoryFetch(graph: graph).values(of: found, keyPaths: keyPaths, model: model)
        }
    }

    func fetchKeysAndSortValues(_ fetch: StoreFetch) throws(FetchError) -> [(Int64, [AttributeValue])] {
        try underDeadline(fetch) { () throws(FetchError) in
            let (graph, found) = try matches(fetch, plan(fetch))
            let inMemory = InMemoryFetch(graph: graph)
            return found.map { ($0.key, inMemory.sortValues(of: $0, fetch)) }
        }
    }

    private func plan(_ fetch: StoreFetch) -> PGFetchSQL {
        PGFetchSQL(fetch.prepared, schema: schema, compiling: fetch.tuning.compilesPredicates)
    }

    /// ORDER BY and the window in SQL, when PostgreSQL answers the whole fetch: every conjunct,
    /// sort and the cursor compiled.
    private func sqlWindow(_ fetch: StoreFetch, _ plan: PGFetchSQL) -> String? {
        guard plan.residual == nil, fetch.prepared.after == nil || plan.cursorCompiled, let orderBy = plan.orderBy else { return nil }
        var window = orderBy
        if fetch.limit > 0 { window += " LIMIT \(fetch.limit)" }
        if fetch.offset > 0 { window += " OFFSET \(fetch.offset)" }
        return window
    }

    private func fetchSQL(_ sql: String, _ parameters: [String?]) throws(FetchError) -> PGResult {
        do { return try connection.execute(sql, parameters) } catch { throw .store(error) }
    }

    /// Whether a key path reads only the fetched object's own row (an attribute of its own).
    static func readsOwnRow(_ keyPath: ResolvedKeyPath) -> Bool {
        guard keyPath.steps.isEmpty, case .attribute = keyPath.terminal else { return false }
        return true
    }

    /// The objects `fetch` matches, by the evaluator over the rows the compiled part of its
    /// predicate lets through (in this session's snapshot): only those rows when nothing else
    /// is read (no relationship followed by the rest of the predicate, the sorts or
    /// `readsRelated`), else every row of every entity it reads, the candidates among them.
    func matches(_ fetch: StoreFetch, _ plan: PGFetchSQL, windowed: Bool = true,
                 readsRelated: Bool = false) throws(FetchError) -> (graph: PGRowGraph, found: [PGRowGraph.Node]) {
        let prepared = fetch.prepared
        let table = schema[prepared.entity]
        let ownRowsOnly = !readsRelated && !(plan.residual?.followsRelationships ?? false) && prepared.sorts.allSatisfy { Self.readsOwnRow($0.keyPath) }
        // Counted (and refused past the limit) before any row is read.
        let everyRow = ownRowsOnly ? nil : try loadEveryRow(of: prepared.entitiesRead, limit: fetch.tuning.rowsInMemoryLimit)
        let result = try fetchSQL("SELECT \(table.selectColumns) FROM \(table.table) WHERE \(plan.condition) ORDER BY _pk", plan.parameters)
        let candidates = (0..<result.rowCount).map { table.storedRow(result, $0) }
        let rows: PGLoadedRows
        if let everyRow {
            rows = everyRow
        } else {
            do throws(StoreError) { rows = try PGLoadedRows(entity: prepared.entity, rows: candidates, session: self) } catch { throw .store(error) }
        }
        let graph = PGRowGraph(rows: rows, model: model, storeIdentifier: storeIdentifier)
        let nodes = candidates.map { PGRowGraph.Node(entity: prepared.entity.index, key: $0.key) }
        // The candidates passed the compiled part: the evaluator checks the rest.
        return (graph, try InMemoryFetch(graph: graph).matches(fetch, candidates: nodes, windowed: windowed, residual: .some(plan.residual)))
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

    /// Keys come from the counter of the entity's hierarchy root (`Entity.keyRoot`), past every
    /// counter of its hierarchy: stores made before keys were shared kept one per entity, and
    /// only the root's moves now, so the others are read as they stand.
    func allocateKeys(of entity: Entity, count: Int) throws(StoreError) -> Int64 {
        let root = model.schema[entity.keyRoot].name
        if isWriter, let first = counters.keys(of: root, count: count) { return first }
        let sharers = entity.keySharers.map { model.schema[$0].name }
        let result = try connection.execute(entity.keySharers.count == 1
            ? "UPDATE _managedstore_keys SET last = last + $2 WHERE entity = $1 RETURNING last"
            : "UPDATE _managedstore_keys SET last = GREATEST(last, (SELECT max(k.last) FROM _managedstore_keys AS k "
                + "WHERE k.entity = ANY($3::text[]))) + $2 WHERE entity = $1 RETURNING last",
            entity.keySharers.count == 1 ? [root, String(count)] : [root, String(count), PGValues.textArray(sharers)])
        guard let last = result.int64(0, 0) else {
            throw .engine(code: -1, message: "no key counter for entity \(entity.name)", sql: nil)
        }
        // The row is locked until the transaction ends: the next keys are counted on from here.
        if isWriter { counters.lockedKeys(of: root, last: last) }
        return last - Int64(count) + 1
    }

    /// Writes the counters counted on since their rows were locked (`PGGroupCounters`), with
    /// the next statement: before one that reads them, and at the latest with the COMMIT.
    func writeCounters() {
        for sql in counters.finalSQL() { connection.queue(sql, []) }
    }
}
