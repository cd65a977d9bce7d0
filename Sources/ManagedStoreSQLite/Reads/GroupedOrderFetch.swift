// A limited fetch sorted by one attribute, descending, with an index on that attribute: the
// contract breaks ties by ascending primary key, and an index walked backwards gives equal
// values in descending key order. SQLite then sorts each group of equal values itself ("USE
// TEMP B-TREE FOR RIGHT PART OF ORDER BY"), and a page of 20 from the top group of a large
// table sorts that whole group first: its cost grows with the store, where the ascending sort
// costs the same at any size.
//
// Walked group by group instead, each group costs two index seeks: the next value in the sort's
// direction (`ORDER BY value DESC LIMIT 1`, one seek), then that value's rows by key
// (`value = ?`: the index's equality leaves them in key order), stopping at the limit. Nulls
// come last descending and first ascending, as in the one statement. After `groupBudget`
// groups, SQLite's own plan takes the rest from the last row read (a page of many small
// groups is not made of hundreds of statements). Every statement reads in one snapshot; only
// the plan differs, never the rows.

import ManagedStoreCore

/// Where a grouped walk is: at the rows of a sort value, of the null value, or past the last.
private enum SortGroup {
    case value(AttributeValue), null, done
}

extension SQLiteFetch {
    /// The sort `runGroupedOrder` would walk: one sort key, an attribute of the fetched entity
    /// of a type whose stored value reads back exactly, without folding options; a limit and no
    /// offset; not on the writer's connection (a stopped statement there would be inside a group
    /// commit). The walk takes at most `SQLitePlanOptions.groupedOrderBudget` groups.
    var groupedOrderSort: (ResolvedSort, AttributeType)? {
        guard connection.planOptions.groupedOrderBudget > 0, prepared.sorts.count == 1, let sort = prepared.sorts.first, sort.options.isEmpty,
              sort.keyPath.steps.isEmpty, case .attribute(_, let index) = sort.keyPath.terminal,
              fetch.limit > 0, fetch.offset == 0, !fetch.insideWriteTransaction else { return nil }
        let type = prepared.entity.attributes[index].type
        switch type {
        case .integer16, .integer32, .integer64, .boolean, .double, .float, .date, .string: return (sort, type)
        case .decimal, .binary, .uuid, .uri: return nil
        }
    }

    /// The rows of `prepared` (at most `limit`), walked group by group when SQLite's plan would
    /// sort the groups itself; nil when it would not (the caller runs the plain statement).
    func runGroupedOrder<T>(sort: ResolvedSort, type: AttributeType, columns: String,
                            key: (T) -> Int64, read: (SQLiteStatement) -> T) throws(FetchError) -> [T]? {
        let limit = fetch.limit
        var plain = SQLQueryBuilder(model: model, root: prepared.entity, tables: connection.schema)
        let plainSQL = Self.selectSQL(prepared, columns: columns, query: &plain, limit: limit, offset: 0)
        let sortsGroups: Bool
        do {
            sortsGroups = try connection.sortsRightPartOfOrderBy(plainSQL)
        } catch {
            throw Self.fetchError(error, sql: plainSQL, prepared: prepared, limits: prepared.limits())
        }
        guard sortsGroups else { return nil }
        connection.planOptions.noteGroupedOrderWalk()

        var query = SQLQueryBuilder(model: model, root: prepared.entity, tables: connection.schema)
        let condition = prepared.predicate.map { query.condition($0) } ?? "1"
        let bindings = query.bindings
        let value = query.expression(sort.keyPath)
        let from = query.fromClause
        // The predicate again, its terms on the sort's attribute written so that SQLite does not
        // pick them for the index: where a statement below bounds the attribute itself (`= ?`,
        // `< ?`), that bound must choose the index range, or SQLite scans the whole group of a
        // range the predicate gives (`priority >= 4`) in place of seeking one value.
        var filtering = SQLQueryBuilder(model: model, root: prepared.entity, tables: connection.schema)
        if case .attribute(let entity, let index) = sort.keyPath.terminal { filtering.unindexedAttribute = (entity, index) }
        let filter = prepared.predicate.map { filtering.condition($0) } ?? "1"
        let direction = sort.ascending ? "ASC" : "DESC"
        let next = bindings.count + 1  // the first parameter after the predicate's
        // The first value of the walk, and the next one after a value, in the sort's direction.
        let firstValueSQL = "SELECT \(value) FROM \(from) WHERE (\(condition)) AND \(value) IS NOT NULL ORDER BY \(value) \(direction) LIMIT 1"
        let nextValueSQL = "SELECT \(value) FROM \(from) WHERE (\(filter)) AND \(value) \(sort.ascending ? ">" : "<") ?\(next) "
            + "ORDER BY \(value) \(direction) LIMIT 1"
        // A group's rows after a key, in key order.
        let groupSQL = "SELECT \(columns) FROM \(from) WHERE (\(filter)) AND \(value) = ?\(next) AND t0.\"_pk\" > ?\(next + 1) "
            + "ORDER BY t0.\"_pk\" LIMIT ?\(next + 2)"
        let nullGroupSQL = "SELECT \(columns) FROM \(from) WHERE (\(filter)) AND \(value) IS NULL AND t0.\"_pk\" > ?\(next) "
            + "ORDER BY t0.\"_pk\" LIMIT ?\(next + 1)"
        let limits = prepared.limits()
        let budget = connection.planOptions.groupedOrderBudget
        let connection = self.connection, prepared = self.prepared

        do {
            return try { () throws -> [T] in
                try connection.withLimits(limits) { () throws(StoreError) -> [T] in
                    var rows: [T] = []
                    func bindPredicate(_ statement: SQLiteStatement) {
                        for (i, value) in bindings.enumerated() { statement.bind(value, at: Int32(i + 1)) }
                    }
                    /// The value after `current` in the walk (nulls first ascending, last descending).
                    func following(_ current: SortGroup?) throws(StoreError) -> SortGroup {
                        switch current {
                        case nil where sort.ascending: return .null
                        case .null? where !sort.ascending, .done?: return .done
                        default: break
                        }
                        var found: AttributeValue?
                        let sql: String
                        if case .value? = current { sql = nextValueSQL } else { sql = firstValueSQL }
                        try connection.withStatement(sql) { statement throws(StoreError) in
                            bindPredicate(statement)
                            if case .value(let bound)? = current { statement.bind(bound, at: Int32(next)) }
                            if try statement.step() { found = statement.value(0, as: type) }
                        }
                        if let found { return .value(found) }
                        return sort.ascending ? .done : .null
                    }
                    /// Appends the rows of `group` after key `after`.
                    func readGroup(_ group: SortGroup, after: Int64) throws(StoreError) {
                        let sql: String
                        switch group {
                        case .value: sql = groupSQL
                        case .null: sql = nullGroupSQL
                        case .done: return
                        }
                        try connection.withStatement(sql) { statement throws(StoreError) in
                            bindPredicate(statement)
                            var parameter = Int32(next)
                            if case .value(let v) = group { statement.bind(v, at: parameter); parameter += 1 }
                            statement.bind(after, at: parameter)
                            statement.bind(Int64(limit - rows.count), at: parameter + 1)
                            while try statement.step() { rows.append(read(statement)) }
                        }
                    }

                    // From the cursor's row, or from the start.
                    var group: SortGroup
                    var afterKey = Int64.min
                    if let cursor = prepared.after {
                        let bound = cursor.values.first ?? .null
                        group = bound.isNull ? .null : .value(bound)
                        afterKey = cursor.primaryKey
                    } else {
                        group = try following(nil)
                    }
                    // The sort value of the last row read, for SQLite's plan to go on from.
                    var lastValue: AttributeValue?
                    for _ in 0..<budget {
                        if case .done = group { return rows }
                        let before = rows.count
                        try readGroup(group, after: afterKey)
                        if rows.count > before {
                            if case .value(let v) = group { lastValue = v } else { lastValue = .null }
                        }
                        if rows.count >= limit { return rows }
                        group = try following(group)
                        afterKey = Int64.min
                    }
                    if case .done = group { return rows }
                    // Out of budget: SQLite's plan for the rest, after the last row read (or,
                    // none read, from the request's own cursor).
                    guard let lastValue, let last = rows.last else {
                        return try Self.plainRows(connection, plainSQL, plain.bindings, read)
                    }
                    var rest = prepared
                    rest.after = FetchCursor(fingerprint: "", values: [lastValue], primaryKey: key(last))
                    var restQuery = SQLQueryBuilder(model: model, root: prepared.entity, tables: connection.schema)
                    let restSQL = Self.selectSQL(rest, columns: columns, query: &restQuery, limit: limit - rows.count, offset: 0)
                    return rows + (try Self.plainRows(connection, restSQL, restQuery.bindings, read))
                }
            }()
        } catch {
            throw Self.fetchError(error, sql: groupSQL, prepared: prepared, limits: limits)
        }
    }

    private static func plainRows<T>(_ connection: SQLiteConnection, _ sql: String, _ bindings: [AttributeValue],
                                     _ read: (SQLiteStatement) -> T) throws(StoreError) -> [T] {
        try connection.withStatement(sql) { statement throws(StoreError) in
            for (i, value) in bindings.enumerated() { statement.bind(value, at: Int32(i + 1)) }
            var rows: [T] = []
            while try statement.step() { rows.append(read(statement)) }
            return rows
        }
    }
}
