import Foundation
import ManagedStoreCore

/// The store's file format, recorded as `format` in its `_metadata` table, and the in-place
/// upgrade of older formats when a store is opened.
///
/// - Format 1 stored a `decimal` as its plain text ("12.5") in a column declared
///   `TEXT COLLATE MS_DECIMAL`: a custom collation that stock SQLite does not have, so the
///   file failed `PRAGMA integrity_check`, backups' checks and `.recover` in the `sqlite3` CLI.
/// - Format 2 stores a `decimal` as order-preserving text (`DecimalStorage`) in a plain TEXT
///   column: no custom collation or function in any definition.
/// - Format 3 adds the persistent history's tables (`StoreSchema.historyStatements`).
/// - Format 4 gives history tokens without AUTOINCREMENT (pruning keeps the newest
///   transaction's row instead), and leaves a change's `properties` NULL: they are the names
///   of its `previous` values. Format 3 readers would read those rows wrong, hence a new format.
/// - Format 5 chains each object's changes (its row's `_history`, each change's `prior`) in
///   place of the index on (entity, pk, token) that every save wrote a random page of. Format 4
///   writers would leave the chains stale, hence a new format.
/// - Format 6 adds the records of idempotent writes (`IdempotencyTable`). Format 5 writers
///   would let a key's write happen twice, hence a new format.
/// - Format 7 records a run of inserted objects as one history row (`through`, see
///   `StoreSchema.historyChangeTable`). Format 6 readers would see one object where there are
///   many, hence a new format.
enum StoreFormatMigration {
    /// The format this version writes.
    static let currentFormat = "7"
    /// The formats this version opens: older ones are upgraded in place, one step at a time.
    static let readableFormats = ["1", "2", "3", "4", "5", "6", currentFormat]

    /// The store's recorded format (nil when it records none) when this version reads it;
    /// otherwise the store is refused.
    static func readableFormat(_ recorded: String?, path: String) throws(StoreError) -> String {
        guard let recorded, readableFormats.contains(recorded) else {
            throw .unsupportedFormat(path: path, format: recorded ?? "none", readable: readableFormats)
        }
        return recorded
    }

    /// Brings a store of a readable `format`, made from `model`, to the current format. Run it
    /// inside the transaction that opens the store, so that the upgrade is all or nothing.
    static func upgrade(_ connection: SQLiteConnection, model: ManagedObjectModel, from format: String) throws(StoreError) {
        guard format != currentFormat else { return }
        do throws(StoreError) {
            if !["5", "6"].contains(format) { try upgradeToFormat5(connection, model: model, from: format) }
            // 5 -> 6.
            if format != "6" {
                for statement in IdempotencyTable.createStatements { try connection.execute(statement) }
            }
            // 6 -> 7 (a history table made just now, from format 1 or 2, has the column already).
            let hasThrough = try connection.scalarInt(#"SELECT count(*) FROM pragma_table_info('_history_change') WHERE "name" = 'through'"#)
            if hasThrough == 0 { try connection.execute(#"ALTER TABLE "_history_change" ADD COLUMN "through" INTEGER"#) }
            try connection.withStatement("UPDATE \"_metadata\" SET \"value\" = ? WHERE \"key\" = 'format'") { s throws(StoreError) in
                s.bind(.string(currentFormat), at: 1)
                try s.execute()
            }
        } catch {
            // Say what was under way: a bare "table already exists" on opening a store puzzles.
            guard case let .engine(code, message, sql) = error else { throw error }
            throw .engine(code: code, message: "upgrading the store from format \(format) to \(currentFormat): \(message)", sql: sql)
        }
    }

    /// 1, 2, 3 or 4 -> 5.
    private static func upgradeToFormat5(_ connection: SQLiteConnection, model: ManagedObjectModel, from format: String) throws(StoreError) {
        if format == "1" {
            for entity in model.schema where entity.attributes.contains(where: { $0.type == .decimal }) {
                try rebuildWithoutCollation(entity, connection)
            }
        }
        try addHistoryColumns(model, connection)
        if format == "1" || format == "2" {
            // 2 -> 3 (and on): the history starts empty; saves before the upgrade are not in it.
            for statement in StoreSchema.historyStatements { try connection.execute(statement) }
        } else {
            if format == "3" { try rebuildHistoryTransactionsWithoutAutoincrement(connection) }
            try chainHistoryChanges(model, connection)
        }
    }

    /// 3 -> 4: the same transaction rows in a table without AUTOINCREMENT. The largest token
    /// ever handed out (`sqlite_sequence`) stays the largest: when pruning had deleted the rows
    /// up to it, a row with that token (already pruned, so never listed) keeps its place.
    private static func rebuildHistoryTransactionsWithoutAutoincrement(_ connection: SQLiteConnection) throws(StoreError) {
        let replacement = "\"_ms_format4_history_transaction\""
        try connection.execute(StoreSchema.historyTransactionTable(named: replacement))
        try connection.execute("""
            INSERT INTO \(replacement) ("token", "timestamp", "author", "context")
            SELECT "token", "timestamp", "author", "context" FROM "_history_transaction"
            """)
        try connection.execute("""
            INSERT INTO \(replacement) ("token", "timestamp", "author", "context")
            SELECT "seq", 0, NULL, NULL FROM "sqlite_sequence"
            WHERE "name" = '_history_transaction' AND "seq" > coalesce((SELECT max("token") FROM "_history_transaction"), 0)
            """)
        try connection.execute("DROP TABLE \"_history_transaction\"")
        try connection.execute("ALTER TABLE \(replacement) RENAME TO \"_history_transaction\"")
    }

    /// -> 5: every entity table gets its `_history` column (a table rebuilt from format 1 has it already).
    private static func addHistoryColumns(_ model: ManagedObjectModel, _ connection: SQLiteConnection) throws(StoreError) {
        for entity in model.schema {
            let has = try connection.scalarInt(#"SELECT count(*) FROM pragma_table_info(?) WHERE "name" = '_history'"#, [.string(entity.name)])
            if has == 0 { try connection.execute("ALTER TABLE \(entity.table) ADD COLUMN \(StoreSchema.historyColumn) INTEGER") }
        }
    }

    /// 3 or 4 -> 5: each object's changes chained, found through the old (entity, pk, token)
    /// index before it goes: each row's `_history` is its object's newest change, and the change
    /// rows move to a table with `prior`, the object's change before each one.
    private static func chainHistoryChanges(_ model: ManagedObjectModel, _ connection: SQLiteConnection) throws(StoreError) {
        for entity in model.schema {
            try connection.withStatement("""
                UPDATE \(entity.table) SET \(StoreSchema.historyColumn) = (SELECT max("token") FROM "_history_change"
                WHERE "entity" = ? AND "pk" = \(entity.table)."_pk")
                """) { s throws(StoreError) in
                s.bindText(entity.name, at: 1)
                try s.execute()
            }
        }
        let replacement = "\"_ms_format5_history_change\""
        try connection.execute(StoreSchema.historyChangeTable(named: replacement))
        try connection.execute("""
            INSERT INTO \(replacement) ("token", "entity", "pk", "type", "version", "properties", "previous", "prior")
            SELECT "token", "entity", "pk", "type", "version", "properties", "previous",
                (SELECT max(p."token") FROM "_history_change" AS p WHERE p."entity" = c."entity" AND p."pk" = c."pk" AND p."token" < c."token")
            FROM "_history_change" AS c
            """)
        try connection.execute("DROP TABLE \"_history_change\"")
        try connection.execute("ALTER TABLE \(replacement) RENAME TO \"_history_change\"")
        try connection.execute(StoreSchema.historyDeletionIndex)
    }

    /// Replaces a format-1 entity table by one made as `StoreSchema` makes it today. SQLite
    /// cannot change a column's collation in place: create the new table, copy the rows (each
    /// decimal converted), drop the old table with its indexes, rename the new one, and create
    /// the indexes again.
    private static func rebuildWithoutCollation(_ entity: Entity, _ connection: SQLiteConnection) throws(StoreError) {
        let replacement = quoteIdentifier("_ms_format2_" + entity.name)
        try connection.execute(StoreSchema.createTable(entity, named: replacement))
        let names = ["_pk", "_version"] + entity.attributes.map(\.name) + entity.foreignKeyRelationships.map { entity.relationships[$0].name }
        let columns = names.map(quoteIdentifier).joined(separator: ", ")
        try connection.execute("INSERT INTO \(replacement) (\(columns)) SELECT \(columns) FROM \(entity.table)")
        try convertDecimals(entity, from: entity.table, into: replacement, connection)
        try connection.execute("DROP TABLE \(entity.table)")
        try connection.execute("ALTER TABLE \(replacement) RENAME TO \(entity.table)")
        for statement in StoreSchema.createIndexes(entity) { try connection.execute(statement) }
    }

    /// Rewrites every decimal of `replacement` (copied from `table` as format-1 text) in the
    /// current encoding, reading the old text as format 1 read it, so that the store holds the
    /// same values afterwards: text it read as no number (it read those as null) becomes NULL.
    private static func convertDecimals(_ entity: Entity, from table: String, into replacement: String,
                                        _ connection: SQLiteConnection) throws(StoreError) {
        let decimals = entity.attributes.indices.filter { entity.attributes[$0].type == .decimal }
        let names = decimals.map { quoteIdentifier(entity.attributes[$0].name) }
        let read = try SQLiteStatement(connection: connection, sql: "SELECT \"_pk\", \(names.joined(separator: ", ")) FROM \(table)")
        let assignments = names.enumerated().map { "\($1) = ?\($0 + 1)" }.joined(separator: ", ")
        let write = try SQLiteStatement(connection: connection,
                                        sql: "UPDATE \(replacement) SET \(assignments) WHERE \"_pk\" = ?\(names.count + 1)")
        defer { read.reset() }
        let posix = Locale(identifier: "en_US_POSIX")
        while try read.step() {
            for i in names.indices {
                let column = Int32(i + 1)
                let value = read.isNull(column) ? nil : Decimal(string: read.text(column), locale: posix)
                write.bind(value.map(AttributeValue.decimal) ?? .null, at: Int32(i + 1))
            }
            write.bind(read.int64(0), at: Int32(names.count + 1))
            try write.execute()
        }
    }
}
