import ManagedStoreCore

// What the PostgreSQL store cannot answer in SQL, nor stream (a predicate, sort or result that
// follows a relationship its SQL does not), the evaluator answers over every row of every
// entity the request reads. Those rows are counted first, up to a limit, and past it the request
// is refused with the reason: memory never grows with the table.

extension PGSession {
    /// Every row of `entities` (and of their kinds) loaded, when they hold at most `limit` rows.
    func loadEveryRow(of entities: Set<Int>, limit: Int) throws(FetchError) -> PGLoadedRows {
        let all = entities.union(entities.flatMap { model.schema[$0].kinds }).sorted()
        if !all.isEmpty {
            let rows = all.map { "SELECT 1 FROM \(schema.tables[$0].table)" }.joined(separator: " UNION ALL ")
            let counted: Int64
            do { counted = try connection.execute("SELECT count(*) FROM (\(rows) LIMIT \(limit + 1)) AS rows").int64(0, 0) ?? 0 } catch { throw .store(error) }
            guard counted <= limit else {
                let names = all.map { model.schema[$0].name }.joined(separator: ", ")
                throw .invalidRequest("""
                    on the PostgreSQL store this request is answered in memory over every row of \(names), which hold more than \
                    \(limit) rows, the most one request may read into memory: it follows a relationship in a way SQL does not \
                    answer here (a key path through a relationship with [c], [d], MATCHES, a to-many or SUBQUERY, or a sort \
                    or result through a relationship); compare attributes of the entity itself, or fetch the related objects first
                    """)
            }
        }
        do { return try PGLoadedRows(entities: entities, session: self) } catch { throw .store(error) }
    }
}
