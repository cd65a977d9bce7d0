import Dispatch
import ManagedStoreCore

/// One checked fetch run as SQL on a connection in a read transaction: the statement
/// SQLQueryBuilder compiles, or the plans that beat SQLite's for a limited fetch
/// (KeyOrderedFetch.swift, GroupedOrderFetch.swift). Every constant is a bound parameter.
struct SQLiteFetch {
    let connection: SQLiteConnection
    let fetch: StoreFetch
    var prepared: PreparedFetch { fetch.prepared }
    var model: ManagedObjectModel { connection.model }

    init(_ connection: SQLiteConnection, _ fetch: StoreFetch) {
        self.connection = connection
        self.fetch = fetch
    }

    /// The rows of the fetch as `columns`, read with `read` (`key` gives a row's primary key):
    /// in key order first where that pays, group by group where SQLite would sort each group of
    /// a descending sort, otherwise as compiled.
    func select<T>(columns: String, key: (T) -> Int64, read: (SQLiteStatement) -> T) throws(FetchError) -> [T] {
        if fetchesInKeyOrder {
            return try runKeyOrdered(columns: columns, key: key, read: read)
        }
        if let (sort, type) = groupedOrderSort,
           let rows = try runGroupedOrder(sort: sort, type: type, columns: columns, key: key, read: read) {
            return rows
        }
        var query = SQLQueryBuilder(model: model, root: prepared.entity, tables: connection.schema)
        let sql = Self.selectSQL(prepared, columns: columns, query: &query, limit: fetch.limit, offset: fetch.offset)
        return try run(sql, query.bindings, read)
    }

    /// Runs `sql` (under the fetch's deadline) and reads each row with `read`.
    func run<T>(_ sql: String, _ bindings: [AttributeValue], _ read: (SQLiteStatement) -> T) throws(FetchError) -> [T] {
        let limits = prepared.limits()
        do {
            return try connection.withLimits(limits) { () throws(StoreError) in
                try connection.withStatement(sql) { statement throws(StoreError) in
                    for (i, value) in bindings.enumerated() { statement.bind(value, at: Int32(i + 1)) }
                    var rows: [T] = []
                    while try statement.step() { rows.append(read(statement)) }
                    return rows
                }
            }
        } catch {
            throw Self.fetchError(error, sql: sql, prepared: prepared, limits: limits)
        }
    }

    /// The WHERE condition of `prepared`: its predicate and, after a cursor, the cursor's bound.
    static func whereCondition(_ prepared: PreparedFetch, _ query: inout SQLQueryBuilder) -> String {
        let condition = prepared.predicate.map { query.condition($0) } ?? "1"
        guard let cursor = prepared.after else { return condition }
        return "(\(condition)) AND \(query.after(cursor, sorts: prepared.sorts))"
    }

    static func selectSQL(_ prepared: PreparedFetch, columns: String, query: inout SQLQueryBuilder, limit: Int, offset: Int) -> String {
        let condition = whereCondition(prepared, &query)
        let order = query.orderBy(prepared.sorts)
        var sql = "SELECT \(columns) FROM \(query.fromClause) WHERE \(condition) ORDER BY \(order)"
        if limit > 0 || offset > 0 { sql += " LIMIT \(limit > 0 ? limit : -1) OFFSET \(offset)" }
        return sql
    }

    /// A failure running `sql` as the fetch error it stands for: past the deadline, a timeout.
    static func fetchError(_ error: any Error, sql: String, prepared: PreparedFetch, limits: StatementLimits) -> FetchError {
        let storeError = StoreError(wrapping: error, sql: sql)
        if storeError.isInterrupt, limits.deadlinePassed, let timeout = prepared.request.timeout { return .timedOut(timeout) }
        return refusedAsTooComplex(storeError) ?? .store(storeError)
    }

    /// SQLite refuses, when preparing, SQL nested deeper or with more terms than it can parse.
    /// The checker's limits catch most such predicates first; whatever slips through is still
    /// the predicate's fault, and is reported as one, not as a store failure.
    private static func refusedAsTooComplex(_ error: StoreError) -> FetchError? {
        guard case let .engine(_, message, _) = error else { return nil }
        for sign in ["parser stack overflow", "Expression tree is too large", "too many SQL variables", "too many terms"]
        where message.contains(sign) {
            return .invalidPredicate("the predicate is too complex to run (too deeply nested, or too many terms); simplify it")
        }
        return nil
    }
}

extension PreparedFetch {
    /// Limits for the fetch's statements: its deadline, and `steps` when given.
    func limits(steps: Int32? = nil) -> StatementLimits { StatementLimits(steps: steps, deadline: deadline) }
}
