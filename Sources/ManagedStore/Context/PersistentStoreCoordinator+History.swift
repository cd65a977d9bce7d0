import Foundation

// Reading and pruning the persistent history [NSPersistentHistoryChangeRequest].

extension PersistentStoreCoordinator {
    /// Up to `limit` recorded saves after `token`, oldest first [fetchHistory(after:)]. With
    /// `entities`, only the changes of objects of those entities, and only the saves that have
    /// one. Throws `StoreError.historyPruned` when the history no longer reaches `token`: saves
    /// after it were deleted, and a reader that goes on from there would miss them.
    public func history(after token: PersistentHistoryToken, limit: Int = 100, entities: Set<String>? = nil) throws(StoreError) -> [PersistentHistoryTransaction] {
        do {
            return try read { connection in
                let oldest = try Self.oldestReadableToken(connection)
                guard token >= oldest else { throw StoreError.historyPruned(requested: token, oldest: oldest) }
                return try HistoryReader(connection: connection, model: model, storeIdentifier: storeIdentifier)
                    .transactions(after: token, limit: max(0, limit), entities: entities)
            }
        } catch {
            throw StoreError(wrapping: error)
        }
    }

    /// The token of the newest recorded save ([currentPersistentHistoryToken]); `zero` before any.
    public func lastHistoryToken() throws(StoreError) -> PersistentHistoryToken {
        do {
            return try read { connection in
                PersistentHistoryToken(rawValue: try connection.scalarInt(#"SELECT max("token") FROM "_history_transaction""#)
                    ?? Self.prunedThrough(connection))
            }
        } catch {
            throw StoreError(wrapping: error)
        }
    }

    /// The oldest token `history(after:)` still takes: every save after it is retained.
    public func oldestHistoryToken() throws(StoreError) -> PersistentHistoryToken {
        do {
            return try read { connection in try Self.oldestReadableToken(connection) }
        } catch {
            throw StoreError(wrapping: error)
        }
    }

    /// Deletes the recorded saves before `token` [deleteHistory(before:)]; returns how many.
    /// The store works on without them: a merge policy that needs the history of a version no
    /// longer kept counts every property as changed, and `history(after:)` of a deleted token
    /// throws `historyPruned`.
    ///
    /// The newest save's row stays (without its changes, and never listed again): the next
    /// token is the largest one plus one, so it must not go (`StoreSchema.historyStatements`).
    @discardableResult
    public func deleteHistory(before token: PersistentHistoryToken) throws(StoreError) -> Int {
        do {
            return try write { connection in
                let alreadyPruned = try Self.prunedThrough(connection)
                let newest = try connection.scalarInt(#"SELECT max("token") FROM "_history_transaction""#) ?? alreadyPruned
                let deleted = try connection.scalarInt(#"SELECT count(*) FROM "_history_transaction" WHERE "token" < ? AND "token" > ?"#,
                                                       [.integer(token.rawValue), .integer(alreadyPruned)]) ?? 0
                try connection.withStatement(#"DELETE FROM "_history_change" WHERE "token" < ?"#) { s throws(StoreError) in
                    s.bind(token.rawValue, at: 1)
                    try s.execute()
                }
                try connection.withStatement(#"DELETE FROM "_history_transaction" WHERE "token" < ?"#) { s throws(StoreError) in
                    s.bind(min(token.rawValue, newest), at: 1)
                    try s.execute()
                }
                // Nothing after the newest save was pruned: a later save must not start out pruned.
                let pruned = max(alreadyPruned, min(token.rawValue - 1, newest))
                try connection.withStatement(#"INSERT OR REPLACE INTO "_metadata" ("key", "value") VALUES ('history_pruned_through', ?)"#) { s throws(StoreError) in
                    s.bindText(String(pruned), at: 1)
                    try s.execute()
                }
                return Int(deleted)
            }
        } catch {
            throw StoreError(wrapping: error)
        }
    }

    /// Deletes the recorded saves made before `date` (a retention period); returns how many.
    @discardableResult
    public func deleteHistory(olderThan date: Date) throws(StoreError) -> Int {
        let newestToGo: Int64?
        do {
            newestToGo = try read { connection in
                try connection.scalarInt(#"SELECT max("token") FROM "_history_transaction" WHERE "timestamp" < ?"#, [.double(date.timeIntervalSince1970)])
            }
        } catch {
            throw StoreError(wrapping: error)
        }
        guard let newestToGo else { return 0 }
        return try deleteHistory(before: PersistentHistoryToken(rawValue: newestToGo + 1))
    }

    /// Deletes, oldest first, at most `limit` of the recorded saves made before `date`;
    /// returns how many went. A retention runs this until it returns less than `limit`: each
    /// call is one short write, so saves waiting for the writer are not held behind a long
    /// prune. Only the oldest `limit` saves are looked at (by token, without a scan of the
    /// whole history). History is cut at a token: if the clock jumped, a save stamped after
    /// `date` may go with older saves recorded after it.
    @discardableResult
    public func deleteHistory(olderThan date: Date, limit: Int) throws(StoreError) -> Int {
        let newestToGo: Int64?
        do {
            newestToGo = try read { connection in
                try connection.scalarInt(#"""
                    SELECT max("token") FROM (SELECT "token", "timestamp" FROM "_history_transaction" ORDER BY "token" LIMIT ?) WHERE "timestamp" < ?
                    """#, [.integer(Int64(max(1, limit))), .double(date.timeIntervalSince1970)])
            }
        } catch {
            throw StoreError(wrapping: error)
        }
        guard let newestToGo else { return 0 }
        return try deleteHistory(before: PersistentHistoryToken(rawValue: newestToGo + 1))
    }

    /// The number of recorded saves the history holds.
    public func historyTransactionCount() throws(StoreError) -> Int {
        do {
            return try read { connection in
                Int(try connection.scalarInt(#"SELECT count(*) FROM "_history_transaction" WHERE "token" > ?"#,
                                             [.integer(Self.prunedThrough(connection))]) ?? 0)
            }
        } catch {
            throw StoreError(wrapping: error)
        }
    }

    /// The highest token deleted by pruning (0 when none was).
    static func prunedThrough(_ connection: SQLiteConnection) throws(StoreError) -> Int64 {
        try connection.withStatement(#"SELECT "value" FROM "_metadata" WHERE "key" = 'history_pruned_through'"#) { s throws(StoreError) in
            try s.step() ? Int64(s.text(0)) ?? 0 : 0
        }
    }

    static func oldestReadableToken(_ connection: SQLiteConnection) throws(StoreError) -> PersistentHistoryToken {
        PersistentHistoryToken(rawValue: try prunedThrough(connection))
    }
}
