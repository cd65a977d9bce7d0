import Foundation
import ManagedStoreCore

/// The `_idempotency` table (store format 6): one row per idempotency key whose write
/// committed, with the caller's fingerprint of the request and the answer it was given,
/// written in the same transaction as the write itself, so that a crash keeps both or
/// neither.
///
/// Rows are appended in the order they are written (the rowid `id`), so a commit fills the
/// table's last pages instead of splitting pages all over it: a row holds a whole answer, a
/// few hundred bytes, and keyed by the key itself (WITHOUT ROWID) random keys split pages all
/// over the table, and each keyed insert wrote pages of it to the WAL. Keys are found
/// through a unique index of small entries; expiry takes the oldest rows by `id`.
enum IdempotencyTable {
    static let createStatements = [
        #"CREATE TABLE "_idempotency" ("id" INTEGER PRIMARY KEY, "key" TEXT NOT NULL, "fingerprint" BLOB NOT NULL, "answer" BLOB NOT NULL, "created" REAL NOT NULL)"#,
        #"CREATE UNIQUE INDEX "_idempotency_key" ON "_idempotency" ("key")"#,
    ]

    private static let findSQL = PreparedSQL(#"SELECT "fingerprint", "answer", "created" FROM "_idempotency" WHERE "key" = ?"#)
    private static let storeSQL = PreparedSQL(#"INSERT OR REPLACE INTO "_idempotency" ("key", "fingerprint", "answer", "created") VALUES (?, ?, ?, ?)"#)

    /// The row of `key`, expired or not.
    static func find(_ key: IdempotencyKey, _ connection: SQLiteConnection) throws(StoreError) -> IdempotencyRecord? {
        try connection.withStatement(findSQL) { s throws(StoreError) in
            s.bindText(key.value, at: 1)
            guard try s.step() else { return nil }
            return IdempotencyRecord(key: key, fingerprint: s.bytes(0), answer: s.bytes(1), created: Date(timeIntervalSince1970: s.double(2)))
        }
    }

    /// Stores `record`, replacing an expired row of the same key.
    static func store(_ record: IdempotencyRecord, _ connection: SQLiteConnection) throws(StoreError) {
        try connection.withStatement(storeSQL) { s throws(StoreError) in
            s.bindText(record.key.value, at: 1)
            s.bindBlob(record.fingerprint, at: 2)
            s.bindBlob(record.answer, at: 3)
            s.bind(.double(record.created.timeIntervalSince1970), at: 4)
            try s.execute()
        }
    }

    /// Deletes those of the oldest `limit` rows (in the order they were written) created
    /// before `cutoff`; returns how many. Only those rows are looked at, never the whole table.
    static func deleteExpired(before cutoff: Date, limit: Int, _ connection: SQLiteConnection) throws(StoreError) -> Int {
        try connection.withStatement(#"""
            DELETE FROM "_idempotency" WHERE "created" < ?1 AND "id" IN
                (SELECT "id" FROM "_idempotency" ORDER BY "id" LIMIT ?2)
            """#) { s throws(StoreError) in
            s.bind(.double(cutoff.timeIntervalSince1970), at: 1)
            s.bind(Int64(max(1, limit)), at: 2)
            try s.execute()
            return Int(connection.changes)
        }
    }

    static func count(_ connection: SQLiteConnection) throws(StoreError) -> Int {
        Int(try connection.scalarInt(#"SELECT count(*) FROM "_idempotency""#) ?? 0)
    }
}
