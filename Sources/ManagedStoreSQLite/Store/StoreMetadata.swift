import ManagedStoreCore

/// The store's `_metadata` table: named values about the file as a whole. `format` (the file
/// format, `StoreFormatMigration`), `store_uuid` (part of every object ID), `model_name`,
/// `model_hash` (the model's `versionHash`), `model_json` (the model itself, in its JSON
/// format, so that a later model can be compared with it: `LightweightMigration`), and
/// `history_pruned_through` (the persistent history's pruning).
enum StoreMetadata {
    static func value(_ key: String, _ connection: SQLiteConnection) throws(StoreError) -> String? {
        try connection.withStatement(#"SELECT "value" FROM "_metadata" WHERE "key" = ?"#) { s throws(StoreError) in
            s.bindText(key, at: 1)
            return try s.step() ? s.text(0) : nil
        }
    }

    /// Sets `key` to `value`, adding the key if the store has none.
    static func set(_ key: String, _ value: String, _ connection: SQLiteConnection) throws(StoreError) {
        try connection.withStatement(#"INSERT OR REPLACE INTO "_metadata" ("key", "value") VALUES (?, ?)"#) { s throws(StoreError) in
            s.bindText(key, at: 1)
            s.bindText(value, at: 2)
            try s.execute()
        }
    }

    /// Records `model` as the one the store now holds the objects of.
    static func record(_ model: ManagedObjectModel, _ connection: SQLiteConnection) throws(StoreError) {
        try set("model_hash", model.versionHash, connection)
        try set("model_name", model.name, connection)
        try set("model_json", model.jsonValue.serialized(), connection)
    }
}
