import CSQLite
import ManagedStoreCore

// A fetch without sort keys is ordered by primary key. Given a LIMIT, SQLite's planner still
// prefers an index that serves the predicate, then sorts every match by key to return the
// first few: a page of 20 tasks where a predicate matched most of a large table sorted every
// match. Scanning the table in key order instead stops at the 20th match, after a few rows
// more, unless matches are rare. Which plan wins depends on the
// data, so both run, one after the other: first the key-order scan with a budget of SQLite
// steps; if it runs out, SQLite's own plan finds the rest, after the last key the scan
// returned. Both read in one snapshot and only the plan differs, never the rows. When SQLite's
// plan reads rows in key order already (an index whose equality terms leave them in key
// order, or a scan of the table), it runs alone: it stops at the limit by itself.

extension SQLiteFetch {
    /// Whether `runKeyOrdered` applies: ordered by key alone, a limit and no offset, and a
    /// predicate (without one, SQLite already scans in key order and stops at the limit). Not
    /// on the writer's connection: a stopped statement there would be inside a group commit.
    /// (The scan's budget, `SQLitePlanOptions.keyOrderScanBudget`, is about a thousand rows of a
    /// simple predicate: what a fetch whose matches are rare pays before its index plan takes over.)
    var fetchesInKeyOrder: Bool {
        prepared.sorts.isEmpty && prepared.predicate != nil && fetch.limit > 0 && fetch.offset == 0 && !fetch.insideWriteTransaction
    }

    /// The rows of the fetch (ordered by key, at most its limit), read with `read`; `key` gives
    /// a row's primary key.
    func runKeyOrdered<T>(columns: String, key: (T) -> Int64, read: (SQLiteStatement) -> T) throws(FetchError) -> [T] {
        let limit = fetch.limit
        var query = SQLQueryBuilder(model: model, root: prepared.entity, tables: connection.schema)
        let condition = Self.whereCondition(prepared, &query)
        let order = query.orderBy([])
        let bindings = query.bindings
        let plainSQL = "SELECT \(columns) FROM \(query.fromClause) WHERE \(condition) ORDER BY \(order) LIMIT \(limit)"
        let sorts: Bool
        do {
            sorts = try connection.sortsForOrderBy(plainSQL)
        } catch {
            throw Self.fetchError(error, sql: plainSQL, prepared: prepared, limits: prepared.limits())
        }
        if !sorts { return try run(plainSQL, bindings, read) }
        let scanSQL = "SELECT \(columns) FROM \(query.fromClauseScanningInKeyOrder) WHERE \(condition) ORDER BY \(order) LIMIT \(limit)"
        // The plain query's LIMIT, written out: SQLite weighs a literal LIMIT when it
        // chooses between scanning in key order and an index (a bound one it cannot see), and
        // stepping stops once the page is full.
        let restSQL = "SELECT \(columns) FROM \(query.fromClause) WHERE (\(condition)) AND t0.\"_pk\" > ?\(bindings.count + 1) "
            + "ORDER BY \(order) LIMIT \(limit)"
        let scanLimits = prepared.limits(steps: connection.planOptions.keyOrderScanBudget)
        let restLimits = prepared.limits()
        let connection = self.connection
        do {
            return try { () throws -> [T] in
                var rows: [T] = []
                do throws(StoreError) {
                    try connection.withLimits(scanLimits) { () throws(StoreError) in
                        try connection.withStatement(scanSQL) { statement throws(StoreError) in
                            for (i, value) in bindings.enumerated() { statement.bind(value, at: Int32(i + 1)) }
                            while try statement.step() { rows.append(read(statement)) }
                        }
                    }
                    return rows  // the scan finished within its budget: these are all the rows
                } catch {
                    // Stopped by the budget, not the deadline: SQLite's plan takes over.
                    guard error.isInterrupt, !scanLimits.deadlinePassed else { throw error }
                }
                // Out of budget: every key up to the last row found was looked at.
                try connection.withLimits(restLimits) { () throws(StoreError) in
                    try connection.withStatement(restSQL) { statement throws(StoreError) in
                        for (i, value) in bindings.enumerated() { statement.bind(value, at: Int32(i + 1)) }
                        statement.bind(rows.last.map(key) ?? Int64.min, at: Int32(bindings.count + 1))
                        while rows.count < limit, try statement.step() { rows.append(read(statement)) }
                    }
                }
                return rows
            }()
        } catch {
            let limits = scanLimits.deadlinePassed ? scanLimits : restLimits
            throw Self.fetchError(error, sql: scanSQL, prepared: prepared, limits: limits)
        }
    }
}
