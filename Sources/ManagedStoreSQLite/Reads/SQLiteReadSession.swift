import Foundation
import ManagedStoreCore

// The SQLite store's reads (StoreReadSession): a connection in a read transaction is the
// session itself. Rows and relationship keys come from the statements each entity prepares
// once (`Entity`); fetches compile their checked request to SQL (SQLQueryBuilder) and run it
// with the plans of KeyOrderedFetch.swift and GroupedOrderFetch.swift where those pay.

extension SQLiteConnection: StoreReadSession {
    func row(of entity: Entity, key: Int64) throws(StoreError) -> StoredRow? {
        try withStatement(schema[entity].loadRowSQL) { statement throws(StoreError) in
            statement.bind(key, at: 1)
            return try statement.step() ? RowSQL.readRow(from: statement, entity: entity).1 : nil
        }
    }

    func rows(of entity: Entity, keys: [Int64]) throws(StoreError) -> [Int64: StoredRow] {
        var rows: [Int64: StoredRow] = [:]
        for chunk in keys.chunked(RowSQL.keysPerQuery) {
            let list = Array(repeating: "?", count: chunk.count).joined(separator: ", ")
            let sql = "SELECT \(schema[entity].rowColumnsSQL) FROM \(entity.table) AS t0 WHERE t0.\"_pk\" IN (\(list))"
            try withStatement(sql) { statement throws(StoreError) in
                for (i, key) in chunk.enumerated() { statement.bind(key, at: Int32(i + 1)) }
                while try statement.step() {
                    let (pk, row) = RowSQL.readRow(from: statement, entity: entity)
                    rows[pk] = row
                }
            }
        }
        return rows
    }

    func existingKeys(of entity: Entity, among keys: [Int64]) throws(StoreError) -> Set<Int64> {
        var found: Set<Int64> = []
        for chunk in keys.chunked(RowSQL.keysPerQuery) {
            let list = Array(repeating: "?", count: chunk.count).joined(separator: ", ")
            try withStatement("SELECT \"_pk\" FROM \(entity.table) WHERE \"_pk\" IN (\(list))") { statement throws(StoreError) in
                for (i, key) in chunk.enumerated() { statement.bind(key, at: Int32(i + 1)) }
                while try statement.step() { found.insert(statement.int64(0)) }
            }
        }
        return found
    }

    func destinationKeys(of entity: Entity, relationship r: Int, key: Int64) throws(StoreError) -> [Int64] {
        try withStatement(schema[entity].relatedKeysSQL[r]) { statement throws(StoreError) in
            statement.bind(key, at: 1)
            var keys: [Int64] = []
            while try statement.step() { keys.append(statement.int64(0)) }
            return keys
        }
    }

    func destinationKeys(of entity: Entity, relationship r: Int, owners: [Int64]) throws(StoreError) -> [Int64: [Int64]] {
        let relationship = entity.relationships[r]
        let destination = model.schema[relationship.destinationIndex]
        var result: [Int64: [Int64]] = [:]
        for chunk in owners.chunked(RowSQL.keysPerQuery) {
            let list = Array(repeating: "?", count: chunk.count).joined(separator: ", ")
            let sql: String
            switch relationship.sql {
            case .inverseForeignKey(let column):
                sql = "SELECT \(column), \"_pk\" FROM \(schema[destination].kindsSource) WHERE \(column) IN (\(list)) ORDER BY \(relationship.orderSQL(then: "\"_pk\""))"
            case let .joinTable(table, ownColumn, otherColumn):
                sql = "SELECT \(ownColumn), \(otherColumn) FROM \(table) WHERE \(ownColumn) IN (\(list)) ORDER BY \(relationship.orderSQL(then: otherColumn))"
            case .foreignKey:
                return [:]
            }
            try withStatement(sql) { statement throws(StoreError) in
                for (i, owner) in chunk.enumerated() { statement.bind(owner, at: Int32(i + 1)) }
                while try statement.step() { result[statement.int64(0), default: []].append(statement.int64(1)) }
            }
        }
        return result
    }

    func ownerKeys(of entity: Entity, relationship r: Int, destination: Int64) throws(StoreError) -> [Int64] {
        let sql: String
        switch entity.relationships[r].sql {
        case .foreignKey(let column):
            sql = "SELECT \"_pk\" FROM \(entity.table) WHERE \(column) = ? ORDER BY \"_pk\""
        case let .joinTable(table, ownColumn, otherColumn):
            sql = "SELECT \(ownColumn) FROM \(table) WHERE \(otherColumn) = ? ORDER BY \(ownColumn)"
        case .inverseForeignKey:
            return []  // not one-way: its inverse is kept in step instead
        }
        return try withStatement(sql) { statement throws(StoreError) in
            statement.bind(destination, at: 1)
            var keys: [Int64] = []
            while try statement.step() { keys.append(statement.int64(0)) }
            return keys
        }
    }

    func visitRow(of entity: Entity, key: Int64, _ body: (any StoredRowSource) throws -> Void) throws {
        let statement = try cachedStatement(schema[entity].loadRowSQL)
        defer { statement.reset(clearingBindings: false) }
        statement.bind(key, at: 1)
        guard try statement.step() else { return }
        try body(SQLiteRowSource(statement: statement, connection: self, entity: entity))
    }

    // MARK: Fetches

    func fetchRows(_ fetch: StoreFetch) throws(FetchError) -> [(Int64, StoredRow)] {
        let entity = fetch.prepared.entity
        return try SQLiteFetch(self, fetch).select(columns: schema[entity].rowColumnsSQL, key: \.0) { RowSQL.readRow(from: $0, entity: entity) }
    }

    func fetchKeys(_ fetch: StoreFetch) throws(FetchError) -> [Int64] {
        try SQLiteFetch(self, fetch).select(columns: "t0.\"_pk\"", key: { $0 }) { $0.int64(0) }
    }

    func count(_ fetch: StoreFetch) throws(FetchError) -> Int {
        var query = SQLQueryBuilder(model: model, root: fetch.prepared.entity, tables: schema)
        let condition = SQLiteFetch.whereCondition(fetch.prepared, &query)
        let sql = "SELECT count(*) FROM \(query.fromClause) WHERE \(condition)"
        return Int(try SQLiteFetch(self, fetch).run(sql, query.bindings) { $0.int64(0) }.first ?? 0)
    }

    func fetchValues(_ fetch: StoreFetch, keyPaths: [ResolvedKeyPath]) throws(FetchError) -> [[PropertyValue]] {
        var query = SQLQueryBuilder(model: model, root: fetch.prepared.entity, tables: schema)
        let columns = keyPaths.map { query.expression($0) }.joined(separator: ", ")
        let sql = SQLiteFetch.selectSQL(fetch.prepared, columns: columns, query: &query, limit: fetch.limit, offset: fetch.offset)
        let model = self.model!, store = storeIdentifier!
        let types = keyPaths.map { $0.valueType(model) }
        let values = try SQLiteFetch(self, fetch).run(sql, query.bindings) { statement in
            types.enumerated().map { i, type in statement.propertyValue(Int32(i), as: type, model: model, storeIdentifier: store) }
        }
        do { return try DestinationIDs(model: model, storeIdentifier: store).namingKinds(values, session: self) } catch { throw .store(error) }
    }

    /// The keys `fetch` matches with their sort values: a page and the cursor after it.
    func fetchKeysAndSortValues(_ fetch: StoreFetch) throws(FetchError) -> [(Int64, [AttributeValue])] {
        let prepared = fetch.prepared
        var query = SQLQueryBuilder(model: model, root: prepared.entity, tables: schema)
        let model = self.model!
        let types = prepared.sorts.map { sort -> AttributeType in
            guard case let .attribute(e, a) = sort.keyPath.terminal else { return .string }  // prepare() allows attributes only
            return model.schema[e].attributes[a].type
        }
        let columns = (["t0.\"_pk\""] + prepared.sorts.map { query.expression($0.keyPath) }).joined(separator: ", ")
        let sql = SQLiteFetch.selectSQL(prepared, columns: columns, query: &query, limit: fetch.limit, offset: fetch.offset)
        return try SQLiteFetch(self, fetch).run(sql, query.bindings) { statement in
            (statement.int64(0), types.enumerated().map { statement.value(Int32($0.offset + 1), as: $0.element) })
        }
    }


    func aggregate(_ aggregate: PreparedAggregate, tuning: FetchTuning) throws(AggregateError) -> [AggregateGroup] {
        let (sql, bindings) = SQLiteAggregate.compile(aggregate, model: model, tables: schema)
        let model = self.model!, store = storeIdentifier!
        let names = aggregate.columns.map(\.name)
        let types = aggregate.columns.map(\.type)
        let fetch = StoreFetch(aggregate.fetch, limit: 0, offset: 0, tuning: FetchTuning(), insideWriteTransaction: false)
        do throws(FetchError) {
            let groups = try SQLiteFetch(self, fetch).run(sql, bindings) { statement in
                types.enumerated().map { i, type in statement.propertyValue(Int32(i), as: type, model: model, storeIdentifier: store) }
            }
            let named: [[PropertyValue]]
            do { named = try DestinationIDs(model: model, storeIdentifier: store).namingKinds(groups, session: self) } catch { throw FetchError.store(error) }
            return named.map { AggregateGroup(names: names, values: $0) }
        } catch {
            // An exact sum that does not fit stops the statement with an error naming its result.
            if case let .store(.engine(_, message, _)) = error, let position = AggregateSQLFunctions.overflowedResult(in: message),
               aggregate.columns.indices.contains(position) {
                throw .overflow(name: names[position])
            }
            throw .fetch(error)
        }
    }
}

/// A row lent in place: it reads the columns of the row's statement, which is reset when the
/// lending call returns.
final class SQLiteRowSource: StoredRowSource {
    private let statement: SQLiteStatement
    private let connection: SQLiteConnection
    private let entity: Entity

    init(statement: SQLiteStatement, connection: SQLiteConnection, entity: Entity) {
        self.statement = statement
        self.connection = connection
        self.entity = entity
    }

    var version: Int64 { statement.int64(1) }

    func value(ofAttributeAt index: Int) -> AttributeValue {
        statement.value(Int32(2 + index), as: entity.attributes[index].type)
    }

    func writeJSON(ofAttributeAt index: Int, into writer: inout JSONWriter) {
        writer.write(SQLiteColumn(statement: statement, index: Int32(2 + index)), type: entity.attributes[index].type)
    }

    func storedForeignKey(ofRelationship relationship: Int) -> Int64?? {
        guard let column = connection.schema[entity].foreignKeyColumn[relationship] else { return nil }
        return .some(statement.optionalInt64(column))
    }

    func forEachDestinationKey(ofRelationship relationship: Int, _ body: (Int64) throws -> Void) throws {
        // Another statement on the same connection, so in the same read snapshot as the row.
        let keys = try connection.cachedStatement(connection.schema[entity].relatedKeysSQL[relationship])
        defer { keys.reset(clearingBindings: false) }
        keys.bind(statement.int64(0), at: 1)
        while try keys.step() { try body(keys.int64(0)) }
    }
}

/// One column of a statement's current row, read in place (`JSONWriter.write(_:type:)`).
struct SQLiteColumn: AttributeColumn {
    let statement: SQLiteStatement
    let index: Int32

    var isNull: Bool { statement.isNull(index) }
    var integer: Int64 { statement.int64(index) }
    func withText(_ body: (UnsafeBufferPointer<UInt8>) -> Void) { statement.withText(index, body) }
    func value(as type: AttributeType) -> AttributeValue { statement.value(index, as: type) }
}
