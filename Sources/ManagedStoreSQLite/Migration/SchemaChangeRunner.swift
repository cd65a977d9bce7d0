import ManagedStoreCore

/// Carries out a lightweight migration's `SchemaChanges` on SQLite, on the writer's connection, inside
/// the transaction that opens the store: a failure at any step (a unique index the data
/// breaks, say) rolls all of it back, and the file is as it was.
///
/// SQLite 3.35 and later alter columns in place (ADD, DROP, RENAME COLUMN), so a table is
/// never copied whole. The order avoids every clash of names: indexes go first (SQLite will
/// not drop a column an index uses); then the removed tables; every rename goes through a
/// temporary name (so that names can be swapped, or change only in case, which SQLite
/// compares without); columns to drop are first renamed out of the way, and dropped only
/// after the new columns are filled (a one-to-one's moved links are read from them).
struct SchemaChangeRunner {
    let connection: SQLiteConnection

    func run(_ changes: SchemaChanges) throws(StoreError) {
        for entity in changes.dropIndexes {
            for index in StoreSchema.indexes(entity) { try connection.execute("DROP INDEX IF EXISTS \(index.name)") }
        }
        for table in changes.dropJoinTables { try connection.execute("DROP TABLE \(quoteIdentifier(table))") }
        for entity in changes.dropTables {
            try connection.execute("DROP TABLE \(quoteIdentifier(entity))")
            // Its history goes too: the objects are gone, and an entity of the same name added
            // later must not read their changes as its own. Its `_sequence` row stays, so
            // such an entity never hands out a key that named one of them.
            try run(#"DELETE FROM "_history_change" WHERE "entity" = ?"#, [.string(entity)])
        }
        let movedJoinTables = try moveJoinTablesAside(changes.moveJoinTables)
        try renameEntities(changes.renameEntities)
        var aside: [String: String] = [:]  // "table.column" of a column to drop -> its name until then
        for (i, (table, column)) in changes.dropColumns.enumerated() {
            let temporary = "_ms_drop_\(i)"
            try connection.execute("ALTER TABLE \(quoteIdentifier(table)) RENAME COLUMN \(quoteIdentifier(column)) TO \(quoteIdentifier(temporary))")
            aside["\(table).\(column)"] = temporary
        }
        for (i, (table, from, _)) in changes.renameColumns.enumerated() {
            try connection.execute("ALTER TABLE \(quoteIdentifier(table)) RENAME COLUMN \(quoteIdentifier(from)) TO \(quoteIdentifier("_ms_rename_\(i)"))")
        }
        for (i, (table, _, to)) in changes.renameColumns.enumerated() {
            try connection.execute("ALTER TABLE \(quoteIdentifier(table)) RENAME COLUMN \(quoteIdentifier("_ms_rename_\(i)")) TO \(quoteIdentifier(to))")
        }
        for (table, column, kind) in changes.addColumns {
            let type = switch kind {
            case .attribute(let type): StoreSchema.columnType(type)
            case .key: "INTEGER"
            }
            try connection.execute("ALTER TABLE \(quoteIdentifier(table)) ADD COLUMN \(quoteIdentifier(column)) \(type)")
        }
        for entity in changes.createTables { try connection.execute(StoreSchema.createTable(entity, named: entity.table)) }
        for fill in changes.fills { try run(fill, aside: aside) }
        for (temporary, table) in movedJoinTables {
            try connection.execute("ALTER TABLE \(temporary) RENAME TO \(quoteIdentifier(table))")
            try connection.execute(StoreSchema.createJoinTableIndex(quoteIdentifier(table)))
        }
        for (table, positions) in changes.createJoinTables {
            try connection.execute(StoreSchema.createJoinTable(named: quoteIdentifier(table), positions: positions))
            try connection.execute(StoreSchema.createJoinTableIndex(quoteIdentifier(table)))
        }
        for fill in changes.linkFills {
            // Columns about to be dropped are read under the names they were set aside under.
            func column(_ name: String) -> String { quoteIdentifier(aside["\(fill.fromTable).\(name)"] ?? name) }
            let key = column(fill.keyColumn)
            let into = [fill.ownColumn, fill.otherColumn] + (fill.place.map { [$0.joinColumn] } ?? [])
            let values = ["\"_pk\"", key] + (fill.place.map { [column($0.fromColumn)] } ?? [])
            try connection.execute("INSERT INTO \(quoteIdentifier(fill.table)) (\(into.map(quoteIdentifier).joined(separator: ", "))) "
                                   + "SELECT \(values.joined(separator: ", ")) FROM \(quoteIdentifier(fill.fromTable)) WHERE \(key) IS NOT NULL")
        }
        for (table, column) in changes.dropColumns {
            try connection.execute("ALTER TABLE \(quoteIdentifier(table)) DROP COLUMN \(quoteIdentifier(aside["\(table).\(column)"] ?? column))")
        }
        for entity in changes.createIndexes {
            for statement in StoreSchema.createIndexes(entity) { try connection.execute(statement) }
        }
        try HistoryPropertyNames(connection: connection).rename(changes.historyProperties)
    }

    /// Moves each join table to a temporary name, its columns swapped where the other side
    /// now names it (a copy: SQLite cannot swap two columns in place); returns the temporary
    /// names with the final ones, for after the entities are renamed.
    private func moveJoinTablesAside(_ moves: [(from: String, to: String, swapsColumns: Bool)]) throws(StoreError) -> [(String, String)] {
        var moved: [(String, String)] = []
        for (i, move) in moves.enumerated() {
            let temporary = quoteIdentifier("_ms_join_\(i)"), from = quoteIdentifier(move.from)
            if move.swapsColumns {
                try connection.execute(StoreSchema.createJoinTable(named: temporary))
                try connection.execute("INSERT INTO \(temporary) (\"a\", \"b\") SELECT \"b\", \"a\" FROM \(from)")
                try connection.execute("DROP TABLE \(from)")
            } else {
                // The index keeps its name through a rename: it goes, and is made under the new one.
                try connection.execute("DROP INDEX IF EXISTS \(StoreSchema.joinTableIndexName(from))")
                try connection.execute("ALTER TABLE \(from) RENAME TO \(temporary)")
            }
            moved.append((temporary, move.to))
        }
        return moved
    }

    /// Renames entities' tables, and the rows that name them: `_sequence` and the history's
    /// changes. Through temporary names, since two entities may swap names; an entity renamed
    /// to the name of a removed one takes over its `_sequence` row, keeping the larger key.
    private func renameEntities(_ renames: [(from: String, to: String)]) throws(StoreError) {
        let temporary = renames.indices.map { "_ms_entity_\($0)" }
        for (i, rename) in renames.enumerated() {
            try connection.execute("ALTER TABLE \(quoteIdentifier(rename.from)) RENAME TO \(quoteIdentifier(temporary[i]))")
            try run(#"UPDATE "_sequence" SET "entity" = ?2 WHERE "entity" = ?1"#, [.string(rename.from), .string(temporary[i])])
            try run(#"UPDATE "_history_change" SET "entity" = ?2 WHERE "entity" = ?1"#, [.string(rename.from), .string(temporary[i])])
        }
        for (i, rename) in renames.enumerated() {
            try connection.execute("ALTER TABLE \(quoteIdentifier(temporary[i])) RENAME TO \(quoteIdentifier(rename.to))")
            // The WHERE makes the SELECT's end plain to SQLite's parser before ON CONFLICT.
            try run(#"""
                INSERT INTO "_sequence" ("entity", "max") SELECT ?2, "max" FROM "_sequence" WHERE "entity" = ?1
                ON CONFLICT ("entity") DO UPDATE SET "max" = max("max", excluded."max")
                """#, [.string(temporary[i]), .string(rename.to)])
            try run(#"DELETE FROM "_sequence" WHERE "entity" = ?"#, [.string(temporary[i])])
            try run(#"UPDATE "_history_change" SET "entity" = ?2 WHERE "entity" = ?1"#, [.string(temporary[i]), .string(rename.to)])
        }
    }

    private func run(_ fill: SchemaChanges.Fill, aside: [String: String]) throws(StoreError) {
        switch fill {
        case let .value(table, column, value, onlyNulls):
            let column = quoteIdentifier(column)
            try run("UPDATE \(quoteIdentifier(table)) SET \(column) = ?" + (onlyNulls ? " WHERE \(column) IS NULL" : ""), [value])
        case let .links(table, column, fromTable, fromColumn):
            // One-to-one: at most one row points at each object (max() picks one if a damaged
            // store had more). Inside the subquery the table is `d`, so `table` itself names
            // the outer row even when both sides are one entity.
            let from = quoteIdentifier(aside["\(fromTable).\(fromColumn)"] ?? fromColumn)
            let table = quoteIdentifier(table)
            try connection.execute("UPDATE \(table) SET \(quoteIdentifier(column)) = "
                                   + "(SELECT max(d.\"_pk\") FROM \(quoteIdentifier(fromTable)) AS d WHERE d.\(from) = \(table).\"_pk\")")
        }
    }

    private func run(_ sql: String, _ arguments: [AttributeValue]) throws(StoreError) {
        try connection.withStatement(sql) { s throws(StoreError) in
            for (i, argument) in arguments.enumerated() { s.bind(argument, at: Int32(i + 1)) }
            try s.execute()
        }
    }
}
