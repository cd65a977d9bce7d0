// Running aggregate requests: one SQL statement that groups the matching rows (GROUP BY),
// computes each result, then keeps, orders and cuts the groups in a query over them.

extension ManagedObjectContext {
    /// The groups `request` asks for, read from the store [executing an NSFetchRequest with
    /// NSDictionaryResultType, propertiesToGroupBy and havingPredicate].
    ///
    /// Like dictionary results, it reads what is saved: this context's unsaved inserts, updates
    /// and deletes are not seen (save first, as with Core Data). Every constant of the
    /// predicates is bound as an SQL parameter.
    public func aggregate(_ request: AggregateRequest) throws(AggregateError) -> [AggregateGroup] {
        assertOnQueue()
        let prepared = try prepare(request)
        let (sql, bindings) = compile(prepared)
        let model = coordinator.model, store = coordinator.storeIdentifier
        let names = prepared.columns.map(\.name)
        let types = prepared.columns.map(\.type)
        do throws(FetchError) {
            return try runQuery(sql, bindings, prepared.fetch) { statement in
                AggregateGroup(names: names, values: types.enumerated().map { i, type in
                    statement.propertyValue(Int32(i), as: type, model: model, storeIdentifier: store)
                })
            }
        } catch {
            // An exact sum that does not fit stops the statement with an error naming its result.
            if case let .store(.sqlite(_, message, _)) = error, let position = AggregateSQLFunctions.overflowedResult(in: message),
               prepared.columns.indices.contains(position) {
                throw .overflow(name: names[position])
            }
            throw .fetch(error)
        }
    }

    /// The SQL and parameters `request` runs as: for explaining a slow aggregate (feed it to
    /// EXPLAIN QUERY PLAN), and for tests.
    public func compiledSQL(for request: AggregateRequest) throws(AggregateError) -> (sql: String, bindings: [AttributeValue]) {
        assertOnQueue()
        return compile(try prepare(request))
    }

    private func prepare(_ request: AggregateRequest) throws(AggregateError) -> PreparedAggregate {
        var fetchRequest = FetchRequest(entityName: request.entityName, predicate: request.predicate,
                                        fetchLimit: request.fetchLimit, fetchOffset: request.fetchOffset)
        fetchRequest.timeout = request.timeout
        let fetch: PreparedFetch
        do throws(FetchError) {
            fetch = try prepare(fetchRequest)
        } catch {
            throw .fetch(error)
        }
        return try PreparedAggregate(request, fetch: fetch, model: coordinator.model, storeIdentifier: coordinator.storeIdentifier)
    }

    /// `SELECT <results> FROM (<the groups>) WHERE <having> ORDER BY … LIMIT …`, the groups being
    /// `SELECT <group keys and functions> AS c0, c1, … FROM <entity and joins> WHERE <predicate>
    /// GROUP BY <group keys>`. Without group keys SQLite answers one group, also over no rows.
    private func compile(_ prepared: PreparedAggregate) -> (sql: String, bindings: [AttributeValue]) {
        var query = SQLQueryBuilder(model: coordinator.model, root: prepared.fetch.entity)
        var results: [String] = []
        var groupKeys: [String] = []
        for (position, column) in prepared.columns.enumerated() {
            let value = column.keyPath.map { query.expression($0) } ?? ""
            let sql = column.computation.sql(value, position: position)
            if column.isGroupKey { groupKeys.append(sql) }
            results.append("\(sql) AS \(SQLQueryBuilder.groupColumnName(position))")
        }
        let condition = whereCondition(prepared.fetch, &query)
        var groups = "SELECT \(results.joined(separator: ", ")) FROM \(query.fromClause) WHERE \(condition)"
        if !groupKeys.isEmpty { groups += " GROUP BY \(groupKeys.joined(separator: ", "))" }
        let having = prepared.having.map { query.condition($0) } ?? "1"
        let columns = prepared.columns.indices.map { "t0.\(SQLQueryBuilder.groupColumnName($0))" }
        let tieBreakers = prepared.columns.indices.filter { prepared.columns[$0].isGroupKey }.map { "\(columns[$0]) ASC" }
        var sql = "SELECT \(columns.joined(separator: ", ")) FROM (\(groups)) AS t0 WHERE \(having)"
        let order = query.orderBy(prepared.sorts, tieBreakers: tieBreakers)
        if !order.isEmpty { sql += " ORDER BY \(order)" }
        if prepared.limit > 0 || prepared.offset > 0 { sql += " LIMIT \(prepared.limit > 0 ? prepared.limit : -1) OFFSET \(prepared.offset)" }
        return (sql, query.bindings)
    }
}

extension SQLQueryBuilder {
    /// The name of the column of the result at `position` in the SQL over an aggregate's groups.
    /// Positions, not the results' names, which are any text; an attribute called "c0" does not
    /// clash with it, as the table's columns are read only inside the groups' query.
    static func groupColumnName(_ position: Int) -> String { "\"c\(position)\"" }
}
