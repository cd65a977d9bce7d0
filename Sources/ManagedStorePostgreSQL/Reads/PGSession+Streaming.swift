import ManagedStoreCore

// A fetch whose predicate is partly left to the evaluator ([c], [d], MATCHES, ...) but whose
// sorts, cursor and the rest of its predicate are SQL: its candidate rows are read in SQL's
// order in the session's snapshot, a batch at a time (after the last key of the batch before,
// in key order; else through a cursor), each batch checked by
// the evaluator and dropped. Memory is one batch and the matches kept (none for a count), not
// every candidate row; a window stops reading once it is full. What follows relationships
// still loads the rows it reads (`PGSession.matches`).

extension PGSession {
    /// The SQL order to stream `fetch` in, when it can be streamed: a residual that reads the
    /// object's own row only, sorts on its own attributes, all compiled (with the cursor).
    func streamOrder(_ fetch: StoreFetch, _ plan: PGFetchSQL) -> String? {
        guard let residual = plan.residual, !residual.followsRelationships,
              fetch.prepared.sorts.allSatisfy({ $0.keyPath.steps.isEmpty }),
              fetch.prepared.after == nil || plan.cursorCompiled else { return nil }
        return plan.orderBy
    }

    /// The objects `fetch` matches, in its order (`streamOrder`), read a batch at a time:
    /// `windowed`, the fetch's offset and limit apply and reading stops at the limit; `keepsRows`
    /// false, only the count is kept.
    func streamedMatches(_ fetch: StoreFetch, _ plan: PGFetchSQL, orderBy: String, windowed: Bool,
                         keepsRows: Bool) throws(FetchError) -> (count: Int, rows: [(Int64, StoredRow)]) {
        let prepared = fetch.prepared
        let table = schema[prepared.entity]
        let skip = windowed ? fetch.offset : 0
        let wanted = windowed && fetch.limit > 0 ? fetch.limit : Int.max
        var matched = 0
        var kept: [(Int64, StoredRow)] = []
        let batchRows = max(1, fetch.tuning.streamBatchRows)
        /// Checks one batch; false once the window is full.
        func check(_ result: PGResult) throws(FetchError) -> Bool {
            let batch = (0..<result.rowCount).map { table.storedRow(result, $0) }
            let rows: PGLoadedRows
            do throws(StoreError) { rows = try PGLoadedRows(entity: prepared.entity, rows: batch, session: self) } catch { throw .store(error) }
            let graph = PGRowGraph(rows: rows, model: model, storeIdentifier: storeIdentifier)
            let nodes = batch.map { PGRowGraph.Node(entity: prepared.entity.index, key: $0.key) }
            for node in try InMemoryFetch(graph: graph).matches(fetch, candidates: nodes, windowed: false, residual: .some(plan.residual)) {
                matched += 1
                guard matched > skip else { continue }
                if keepsRows { kept.append((node.key, rows.rows[prepared.entity.index][node.key]!)) }
                if matched - skip >= wanted { return false }
            }
            return true
        }
        if orderBy == PGFetchSQL.keyOrder {
            try streamRowsByKey(table, plan, batch: batchRows, check)
        } else {
            // A cursor's plan is made for its first rows (`cursor_tuple_fraction`, 0.1): right for
            // a page, which may stop early; a count reads every row, and a plan for all of them
            // (a scan and a sort rather than an index walk) is the faster.
            let readsAll = !windowed || fetch.limit == 0
            do { try connection.execute("SET LOCAL cursor_tuple_fraction = \(readsAll ? "1.0" : "0.1")") } catch { throw .store(error) }
            let sql = "SELECT \(table.selectColumns) FROM \(table.table) WHERE \(plan.condition) ORDER BY \(orderBy)"
            try streamRows(sql, plan.parameters, batch: batchRows, check)
        }
        return (max(0, min(matched - skip, wanted)), kept)
    }

    /// The rows of `table` that `plan`'s condition lets through, in key order, in batches of
    /// `batch` to `body` until it answers false or the rows run out: each batch one statement
    /// that starts after the last key of the one before (keyset), which PostgreSQL may answer
    /// with parallel workers, as it never answers a cursor. Every statement is in this
    /// session's transaction, so all see one snapshot.
    func streamRowsByKey(_ table: PGSchema.EntityTable, _ plan: PGFetchSQL, batch: Int,
                         _ body: (PGResult) throws(FetchError) -> Bool) throws(FetchError) {
        var after: Int64?
        while true {
            var sql = "SELECT \(table.selectColumns) FROM \(table.table) WHERE \(plan.condition)"
            var parameters = plan.parameters
            if let after {
                parameters.append(String(after))
                sql += " AND _pk > $\(parameters.count)"
            }
            let result: PGResult
            do { result = try connection.execute(sql + " ORDER BY _pk LIMIT \(batch)", parameters) } catch { throw .store(error) }
            guard result.rowCount > 0, try body(result), result.rowCount == batch, let last = result.int64(result.rowCount - 1, 0) else { return }
            after = last
        }
    }

    /// `sql`'s rows in batches of `batch` through a cursor in this session's transaction (its
    /// snapshot), each batch to `body` until it answers false or the rows run out.
    func streamRows(_ sql: String, _ parameters: [String?], batch: Int,
                    _ body: (PGResult) throws(FetchError) -> Bool) throws(FetchError) {
        let cursor = "managedstore_stream"
        do { try connection.execute("DECLARE \(cursor) NO SCROLL CURSOR FOR \(sql)", parameters) } catch { throw .store(error) }
        // Closed however reading ends, so that the session's next stream can open it again (in
        // a transaction PostgreSQL aborted, the close fails too, and the rollback closes it).
        defer { _ = try? connection.execute("CLOSE \(cursor)") }
        while true {
            let result: PGResult
            do { result = try connection.execute("FETCH \(batch) FROM \(cursor)") } catch { throw .store(error) }
            guard result.rowCount > 0, try body(result), result.rowCount == batch else { return }
        }
    }
}
