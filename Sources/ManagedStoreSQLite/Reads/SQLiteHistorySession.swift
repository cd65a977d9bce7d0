import Foundation
import ManagedStoreCore

// A session's reads of the persistent history and the idempotency records.

extension SQLiteConnection {
    func historyChanges(ofObject entity: Entity, key: Int64, after version: Int64) throws(StoreError) -> [PersistentHistoryChange]? {
        try HistoryReader(connection: self, model: model, storeIdentifier: storeIdentifier).changes(ofObject: entity, pk: key, after: version)
    }

    func historyTransactions(after token: PersistentHistoryToken, limit: Int, entities: Set<String>?) throws(StoreError) -> [PersistentHistoryTransaction] {
        try HistoryReader(connection: self, model: model, storeIdentifier: storeIdentifier).transactions(after: token, limit: limit, entities: entities)
    }

    func lastHistoryToken() throws(StoreError) -> PersistentHistoryToken {
        if let newest = try scalarInt(#"SELECT max("token") FROM "_history_transaction""#) { return PersistentHistoryToken(rawValue: newest) }
        return PersistentHistoryToken(rawValue: try HistoryReader.prunedThrough(self))
    }

    func oldestHistoryToken() throws(StoreError) -> PersistentHistoryToken {
        PersistentHistoryToken(rawValue: try HistoryReader.prunedThrough(self))
    }

    func historyTransactionCount() throws(StoreError) -> Int {
        // The newest save's row outlives pruning (StoreSchema.historyStatements): only tokens
        // after the pruned ones count.
        Int(try scalarInt(#"SELECT count(*) FROM "_history_transaction" WHERE "token" > ?"#, [.integer(HistoryReader.prunedThrough(self))]) ?? 0)
    }

    func newestHistoryToken(before date: Date, amongOldest limit: Int?) throws(StoreError) -> PersistentHistoryToken? {
        let token: Int64?
        if let limit {
            // Only the oldest `limit` saves are looked at, by token, without a scan of the whole history.
            token = try scalarInt(#"""
                SELECT max("token") FROM (SELECT "token", "timestamp" FROM "_history_transaction" ORDER BY "token" LIMIT ?) WHERE "timestamp" < ?
                """#, [.integer(Int64(max(1, limit))), .double(date.timeIntervalSince1970)])
        } else {
            token = try scalarInt(#"SELECT max("token") FROM "_history_transaction" WHERE "timestamp" < ?"#, [.double(date.timeIntervalSince1970)])
        }
        return token.map(PersistentHistoryToken.init(rawValue:))
    }

    func idempotencyRecord(for key: IdempotencyKey) throws(StoreError) -> IdempotencyRecord? {
        try IdempotencyTable.find(key, self)
    }

    func idempotencyRecordCount() throws(StoreError) -> Int {
        try IdempotencyTable.count(self)
    }
}
