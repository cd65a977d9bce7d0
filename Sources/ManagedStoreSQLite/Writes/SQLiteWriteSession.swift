import Foundation
import ManagedStoreCore

// The writer's connection as a store write session: lent inside a write transaction
// (`SQLiteStore.write`, a group commit's savepoint), never on a reader.

extension SQLiteConnection: StoreWriteSession {
    func write(_ changes: ChangeSet) throws(ChangeSetRejection) -> WrittenChanges {
        do {
            return try ChangeSetWriter(connection: self, model: model, storeIdentifier: storeIdentifier).write(changes)
        } catch let rejection as ChangeSetRejection {
            throw rejection
        } catch {
            throw .store(StoreError(wrapping: error))
        }
    }

    func allocateKeys(of entity: Entity, count: Int) throws(StoreError) -> Int64 {
        try ChangeSetWriter.allocatePrimaryKeys(self, entity: entity, count: count)
    }

    /// The newest save's row stays (without its changes, and never listed again): the next
    /// token is the largest one plus one, so it must not go (`StoreSchema.historyStatements`).
    func deleteHistory(before token: PersistentHistoryToken) throws(StoreError) -> Int {
        let alreadyPruned = try HistoryReader.prunedThrough(self)
        let newest = try scalarInt(#"SELECT max("token") FROM "_history_transaction""#) ?? alreadyPruned
        let deleted = try scalarInt(#"SELECT count(*) FROM "_history_transaction" WHERE "token" < ? AND "token" > ?"#,
                                    [.integer(token.rawValue), .integer(alreadyPruned)]) ?? 0
        try withStatement(#"DELETE FROM "_history_change" WHERE "token" < ?"#) { s throws(StoreError) in
            s.bind(token.rawValue, at: 1)
            try s.execute()
        }
        try withStatement(#"DELETE FROM "_history_transaction" WHERE "token" < ?"#) { s throws(StoreError) in
            s.bind(min(token.rawValue, newest), at: 1)
            try s.execute()
        }
        // Nothing after the newest save was pruned: a later save must not start out pruned.
        let pruned = max(alreadyPruned, min(token.rawValue - 1, newest))
        try withStatement(#"INSERT OR REPLACE INTO "_metadata" ("key", "value") VALUES ('history_pruned_through', ?)"#) { s throws(StoreError) in
            s.bindText(String(pruned), at: 1)
            try s.execute()
        }
        return Int(deleted)
    }

    func storeIdempotencyRecord(_ record: IdempotencyRecord) throws(StoreError) {
        try IdempotencyTable.store(record, self)
    }

    func deleteIdempotencyRecords(createdBefore cutoff: Date, limit: Int) throws(StoreError) -> Int {
        try IdempotencyTable.deleteExpired(before: cutoff, limit: limit, self)
    }
}
