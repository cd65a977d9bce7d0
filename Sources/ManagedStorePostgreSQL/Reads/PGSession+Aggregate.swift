import ManagedStoreCore

// Aggregates on PostgreSQL, the cheapest way that gives the in-memory results: PostgreSQL
// groups and computes (`PGAggregateSQL`) when it can; else the rows stream through the
// evaluator a batch at a time into the groups, when all it reads is the aggregated objects' own
// rows; else (a key path through a relationship) the rows of every entity read are loaded,
// up to a limit (`loadEveryRow`).

extension PGSession {
    func aggregate(_ aggregate: PreparedAggregate, tuning: FetchTuning) throws(AggregateError) -> [AggregateGroup] {
        try underDeadline(aggregate) { () throws(AggregateError) in try groupsUnderDeadline(aggregate, tuning: tuning) }
    }

    private func groupsUnderDeadline(_ aggregate: PreparedAggregate, tuning: FetchTuning) throws(AggregateError) -> [AggregateGroup] {
        let plan = PGFetchSQL(aggregate.fetch, schema: schema, compiling: tuning.compilesPredicates)
        if tuning.compilesPredicates, let sql = PGAggregateSQL(aggregate, schema: schema, plan: plan, storeIdentifier: storeIdentifier) {
            return try groups(sql, aggregate)
        }
        if tuning.compilesPredicates, Self.readsOwnRows(aggregate, plan) {
            return try streamedGroups(aggregate, plan, batch: max(1, tuning.streamBatchRows))
        }
        let rows: PGLoadedRows
        do throws(FetchError) { rows = try loadEveryRow(of: aggregate.entitiesRead, limit: tuning.rowsInMemoryLimit) } catch { throw .fetch(error) }
        let graph = PGRowGraph(rows: rows, model: model, storeIdentifier: storeIdentifier)
        let entity = aggregate.fetch.entity.index
        let candidates = rows.rows[entity].keys.sorted().map { PGRowGraph.Node(entity: entity, key: $0) }
        return try InMemoryAggregate(graph: graph, model: model).groups(aggregate, candidates: candidates)
    }

    /// The groups PostgreSQL computed, ordered and windowed by it or here.
    private func groups(_ sql: PGAggregateSQL, _ aggregate: PreparedAggregate) throws(AggregateError) -> [AggregateGroup] {
        let result: PGResult
        do {
            result = try connection.execute(sql.sql, sql.parameters)
        } catch {
            // An integer sum past Int64: the bigint cast's error, as the evaluator's overflow.
            if case .engine(let code, _, _) = error, code == PGSQLState.code(PGSQLState.numericValueOutOfRange),
               let name = sql.overflowingResult(aggregate.columns) {
                throw .overflow(name: name)
            }
            throw .fetch(.store(error))
        }
        do throws(FetchError) { try aggregate.fetch.checkDeadline() } catch { throw .fetch(error) }
        let groups = try sql.groups(result, columns: aggregate.columns)
        guard sql.isWindowed else { return AggregateGroups.finish(aggregate, groups) }
        let names = aggregate.columns.map(\.name)
        return groups.map { AggregateGroup(names: names, values: $0) }
    }

    /// Whether the aggregate reads nothing but its objects' own rows: its predicate's rest, and
    /// every result an attribute of its own.
    private static func readsOwnRows(_ aggregate: PreparedAggregate, _ plan: PGFetchSQL) -> Bool {
        !(plan.residual?.followsRelationships ?? false) && aggregate.columns.allSatisfy { $0.keyPath.map(readsOwnRow) ?? true }
    }

    /// The groups over the rows the compiled part of the predicate lets through, read in key
    /// order (the order the in-memory sums add in), a batch at a time: memory is a batch and the groups.
    private func streamedGroups(_ aggregate: PreparedAggregate, _ plan: PGFetchSQL, batch: Int) throws(AggregateError) -> [AggregateGroup] {
        let entity = aggregate.fetch.entity
        let table = schema[entity]
        var groups = AggregateGroups(aggregate)
        do throws(FetchError) {
            try streamRowsByKey(table, plan, batch: batch) { result throws(FetchError) -> Bool in
                let rows = (0..<result.rowCount).map { table.storedRow(result, $0) }
                let loaded: PGLoadedRows
                do throws(StoreError) { loaded = try PGLoadedRows(entity: entity, rows: rows, session: self) } catch { throw .store(error) }
                groups.add(rows.map { PGRowGraph.Node(entity: entity.index, key: $0.key) },
                           of: PGRowGraph(rows: loaded, model: model, storeIdentifier: storeIdentifier), matching: plan.residual)
                return true
            }
        } catch {
            throw .fetch(error)
        }
        return try groups.results()
    }
}
