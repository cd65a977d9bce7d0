import Foundation

// Reading and pruning the persistent history [NSPersistentHistoryChangeRequest].

extension PersistentStoreCoordinator {
    /// Up to `limit` recorded saves after `token`, oldest first [fetchHistory(after:)]. With
    /// `entities`, only the changes of objects of those entities, and only the saves that have
    /// one. Throws `StoreError.historyPruned` when the history no longer reaches `token`: saves
    /// after it were deleted, and a reader that goes on from there would miss them.
    public func history(after token: PersistentHistoryToken, limit: Int = 100, entities: Set<String>? = nil) throws(StoreError) -> [PersistentHistoryTransaction] {
        try readStore { session in
            let oldest = try session.oldestHistoryToken()
            guard token >= oldest else { throw StoreError.historyPruned(requested: token, oldest: oldest) }
            return try session.historyTransactions(after: token, limit: max(0, limit), entities: entities)
        }
    }

    /// The token of the newest recorded save ([currentPersistentHistoryToken]); `zero` before any.
    public func lastHistoryToken() throws(StoreError) -> PersistentHistoryToken {
        try readStore { session in try session.lastHistoryToken() }
    }

    /// The oldest token `history(after:)` still takes: every save after it is retained.
    public func oldestHistoryToken() throws(StoreError) -> PersistentHistoryToken {
        try readStore { session in try session.oldestHistoryToken() }
    }

    /// Deletes the recorded saves before `token` [deleteHistory(before:)]; returns how many.
    /// The store works on without them: a merge policy that needs the history of a version no
    /// longer kept counts every property as changed, and `history(after:)` of a deleted token
    /// throws `historyPruned`.
    @discardableResult
    public func deleteHistory(before token: PersistentHistoryToken) throws(StoreError) -> Int {
        try writeStore { session in try session.deleteHistory(before: token) }
    }

    /// Deletes the recorded saves made before `date` (a retention period); returns how many.
    @discardableResult
    public func deleteHistory(olderThan date: Date) throws(StoreError) -> Int {
        guard let newestToGo = try readStore({ session in try session.newestHistoryToken(before: date, amongOldest: nil) }) else { return 0 }
        return try deleteHistory(before: PersistentHistoryToken(rawValue: newestToGo.rawValue + 1))
    }

    /// Deletes, oldest first, at most `limit` of the recorded saves made before `date`;
    /// returns how many went. A retention runs this until it returns less than `limit`: each
    /// call is one short write, so saves waiting for the writer are not held behind a long
    /// prune. Only the oldest `limit` saves are looked at (without a scan of the whole
    /// history). History is cut at a token: if the clock jumped, a save stamped after `date`
    /// may go with older saves recorded after it.
    @discardableResult
    public func deleteHistory(olderThan date: Date, limit: Int) throws(StoreError) -> Int {
        guard let newestToGo = try readStore({ session in try session.newestHistoryToken(before: date, amongOldest: limit) }) else { return 0 }
        return try deleteHistory(before: PersistentHistoryToken(rawValue: newestToGo.rawValue + 1))
    }

    /// The number of recorded saves the history holds.
    public func historyTransactionCount() throws(StoreError) -> Int {
        try readStore { session in try session.historyTransactionCount() }
    }
}
