// The SQL the SQLite store runs for a request: for explaining a slow fetch or aggregate (feed
// it to EXPLAIN QUERY PLAN), and for tests.

import ManagedStoreCore

extension ManagedObjectContext {
    /// The SQL and parameters `request` runs as (objects, store only): the request parsed,
    /// checked against the model and compiled, without running it.
    public func compiledSQL(for request: FetchRequest) throws(FetchError) -> (sql: String, bindings: [AttributeValue]) {
        assertOnQueue()
        return try compiledSQL(request)
    }

    func compiledSQL(_ request: FetchRequest) throws(FetchError) -> (sql: String, bindings: [AttributeValue]) {
        let prepared = try prepare(request)
        try prepared.refuseAcrossKinds("compiled SQL")
        var query = SQLQueryBuilder(model: coordinator.model, root: prepared.entity, tables: SQLiteSchema(coordinator.model))
        let sql = SQLiteFetch.selectSQL(prepared, columns: EntityTable(prepared.entity, model: coordinator.model).rowColumnsSQL, query: &query,
                                        limit: request.fetchLimit, offset: request.fetchOffset)
        return (sql, query.bindings)
    }

    /// The SQL and parameters an aggregate request runs as.
    public func compiledSQL(for request: AggregateRequest) throws(AggregateError) -> (sql: String, bindings: [AttributeValue]) {
        assertOnQueue()
        let prepared = try prepare(request)
        do throws(FetchError) { try prepared.fetch.refuseAcrossKinds("compiled SQL") } catch { throw .fetch(error) }
        return SQLiteAggregate.compile(prepared, model: coordinator.model, tables: SQLiteSchema(coordinator.model))
    }
}
