import ManagedStoreCore

/// Carries out a lightweight migration's `SchemaChanges` in PostgreSQL, on the writer's
/// connection, inside the transaction that opens the store (PostgreSQL's DDL is
/// transactional): a failure at any step, a unique constraint the data breaks say, rolls all
/// of it back, and every server keeps seeing the store as it was.
///
/// The order is the SQLite store's, for the same reasons: indexes and constraints of changed
/// entities go first; renames go through temporary names (two names may swap); columns to
/// drop are renamed out of the way first and dropped only after the fills (a one-to-one's
/// moved links are read from them).
struct PGSchemaChangeRunner {
    let connection: PGConnection
    /// The destination model's tables.
    let schema: PGSchema

    func run(_ changes: SchemaChanges) throws(StoreError) {
        for entity in changes.dropIndexes { try dropIndexes(of: entity) }
        for table in changes.dropJoinTables { try execute("DROP TABLE \(quote(table))") }
        for entity in changes.dropTables {
            try execute("DROP TABLE \(quote(entity))")
            // Its history goes too: the objects are gone, and an entity of the same name added
            // later must not read their changes as its own. Its key row stays, so such an
            // entity never hands out a key that named one of them.
            try execute("DELETE FROM _managedstore_history_change WHERE entity = $1", [entity])
        }
        let movedJoinTables = try moveJoinTablesAside(changes.moveJoinTables)
        try renameEntities(changes.renameEntities)
        var aside: [String: String] = [:]  // "table.column" of a column to drop -> its name until then
        for (i, (table, column)) in changes.dropColumns.enumerated() {
            let temporary = "_ms_drop_\(i)"
            try execute("ALTER TABLE \(quote(table)) RENAME COLUMN \(quote(column)) TO \(quote(temporary))")
            aside["\(table).\(column)"] = temporary
        }
        for (i, (table, from, _)) in changes.renameColumns.enumerated() {
            try execute("ALTER TABLE \(quote(table)) RENAME COLUMN \(quote(from)) TO \(quote("_ms_rename_\(i)"))")
        }
        for (i, (table, _, to)) in changes.renameColumns.enumerated() {
            try execute("ALTER TABLE \(quote(table)) RENAME COLUMN \(quote("_ms_rename_\(i)")) TO \(quote(to))")
        }
        for (table, column, kind) in changes.addColumns {
            let type = switch kind {
            case .attribute(let type): PGValues.columnType(type)
            case .key: "bigint"
            }
            try execute("ALTER TABLE \(quote(table)) ADD COLUMN \(quote(column)) \(type)")
        }
        for entity in changes.createTables {
            for statement in schema.createTable(entity) { try execute(statement) }
        }
        for fill in changes.fills { try run(fill, aside: aside) }
        for (temporary, table) in movedJoinTables { try execute("ALTER TABLE \(quote(temporary)) RENAME TO \(quote(table))") }
        for (table, _) in changes.createJoinTables {
            for statement in schema.createLinkTable(table) { try execute(statement) }
        }
        for fill in changes.linkFills {
            // Columns about to be dropped are read under the names they were set aside under.
            func column(_ name: String) -> String { quote(aside["\(fill.fromTable).\(name)"] ?? name) }
            let key = column(fill.keyColumn)
            let into = [fill.ownColumn, fill.otherColumn] + (fill.place.map { [$0.joinColumn] } ?? [])
            let values = ["_pk", key] + (fill.place.map { [column($0.fromColumn)] } ?? [])
            try execute("INSERT INTO \(quote(fill.table)) (\(into.map(quote).joined(separator: ", "))) "
                        + "SELECT \(values.joined(separator: ", ")) FROM \(quote(fill.fromTable)) WHERE \(key) IS NOT NULL")
        }
        for (table, column) in changes.dropColumns {
            try execute("ALTER TABLE \(quote(table)) DROP COLUMN \(quote(aside["\(table).\(column)"] ?? column))")
        }
        for entity in changes.createIndexes {
            for statement in schema.createIndexes(entity) { try execute(statement) }
        }
        try renameHistoryProperties(changes.historyProperties)
    }

    /// Drops the indexes and uniqueness constraints of `entity` (a source entity, its table
    /// still under its name): every index on the table but its primary key's.
    private func dropIndexes(of entity: Entity) throws(StoreError) {
        let table = quote(entity.name)
        let constraints = try connection.execute("""
            SELECT conname FROM pg_constraint WHERE conrelid = $1::regclass AND contype = 'u' ORDER BY conname
            """, [table])
        for row in 0..<constraints.rowCount {
            try execute("ALTER TABLE \(table) DROP CONSTRAINT \(quote(constraints.text(row, 0) ?? ""))")
        }
        let indexes = try connection.execute("""
            SELECT c.relname FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indexrelid
            WHERE i.indrelid = $1::regclass AND NOT i.indisprimary ORDER BY c.relname
            """, [table])
        for row in 0..<indexes.rowCount {
            try execute("DROP INDEX \(quote(indexes.text(row, 0) ?? ""))")
        }
    }

    /// Moves each join table to a temporary name, its columns swapped where the other side
    /// now names it; returns the temporary names with the final ones, for after the entities
    /// are renamed.
    private func moveJoinTablesAside(_ moves: [(from: String, to: String, swapsColumns: Bool)]) throws(StoreError) -> [(String, String)] {
        var moved: [(String, String)] = []
        for (i, move) in moves.enumerated() {
            let temporary = "_ms_join_\(i)"
            if move.swapsColumns {
                for statement in schema.createLinkTable(temporary) { try execute(statement) }
                try execute("INSERT INTO \(quote(temporary)) (a, b) SELECT b, a FROM \(quote(move.from))")
                try execute("DROP TABLE \(quote(move.from))")
            } else {
                try execute("ALTER TABLE \(quote(move.from)) RENAME TO \(quote(temporary))")
            }
            moved.append((temporary, move.to))
        }
        return moved
    }

    /// Renames entities' tables, and the rows that name them: the key sequences and the
    /// history's changes. Through temporary names, since two entities may swap names; an entity
    /// renamed to the name of a removed one takes over its key row, keeping the larger key.
    private func renameEntities(_ renames: [(from: String, to: String)]) throws(StoreError) {
        let temporary = renames.indices.map { "_ms_entity_\($0)" }
        for (i, rename) in renames.enumerated() {
            try execute("ALTER TABLE \(quote(rename.from)) RENAME TO \(quote(temporary[i]))")
            try execute("UPDATE _managedstore_keys SET entity = $2 WHERE entity = $1", [rename.from, temporary[i]])
            try execute("UPDATE _managedstore_history_change SET entity = $2 WHERE entity = $1", [rename.from, temporary[i]])
        }
        for (i, rename) in renames.enumerated() {
            try execute("ALTER TABLE \(quote(temporary[i])) RENAME TO \(quote(rename.to))")
            try execute("""
                INSERT INTO _managedstore_keys (entity, last) SELECT $2, last FROM _managedstore_keys WHERE entity = $1
                ON CONFLICT (entity) DO UPDATE SET last = GREATEST(_managedstore_keys.last, excluded.last)
                """, [temporary[i], rename.to])
            try execute("DELETE FROM _managedstore_keys WHERE entity = $1", [temporary[i]])
            try execute("UPDATE _managedstore_history_change SET entity = $2 WHERE entity = $1", [temporary[i], rename.to])
        }
    }

    private func run(_ fill: SchemaChanges.Fill, aside: [String: String]) throws(StoreError) {
        switch fill {
        case let .value(table, column, value, onlyNulls):
            // A fill's table and column are the destination model's (renames have run).
            let type = schema.model.entity(named: table)?.attributes.first { $0.name == column }?.type ?? .string
            let column = quote(column)
            try execute("UPDATE \(quote(table)) SET \(column) = $1::\(PGValues.columnType(type))" + (onlyNulls ? " WHERE \(column) IS NULL" : ""),
                        [try PGValues.text(value)])
        case let .links(table, column, fromTable, fromColumn):
            // One-to-one: at most one row points at each object (max() picks one if a damaged
            // store had more). Inside the subquery the table is `d`, so `table` itself names
            // the outer row even when both sides are one entity.
            let from = quote(aside["\(fromTable).\(fromColumn)"] ?? fromColumn)
            let table = quote(table)
            try execute("UPDATE \(table) SET \(quote(column)) = (SELECT max(d._pk) FROM \(quote(fromTable)) AS d WHERE d.\(from) = \(table)._pk)")
        }
    }

    /// Rewrites the history rows of each entity that name a renamed or removed property
    /// (`HistoryPropertyRenaming`), so that a merge policy asking what changed after a version
    /// finds a renamed property's changes under its new name.
    private func renameHistoryProperties(_ renames: [String: [String: String?]]) throws(StoreError) {
        for (entity, names) in renames.sorted(by: { $0.key < $1.key }) {
            let rows = try connection.execute("SELECT seq, properties, previous FROM _managedstore_history_change WHERE entity = $1 ORDER BY seq", [entity])
            for row in 0..<rows.rowCount {
                let properties = rows.text(row, 1), previous = rows.text(row, 2)
                let newProperties = properties.flatMap { HistoryPropertyRenaming.renamedArray($0, names) } ?? properties
                let newPrevious = previous.flatMap { HistoryPropertyRenaming.renamedObject($0, names) } ?? previous
                guard newProperties != properties || newPrevious != previous else { continue }
                try execute("UPDATE _managedstore_history_change SET properties = $1, previous = $2 WHERE seq = $3",
                            [newProperties, newPrevious, rows.text(row, 0)])
            }
        }
    }

    private func execute(_ sql: String, _ parameters: [String?] = []) throws(StoreError) {
        _ = try connection.execute(sql, parameters)
    }

    private func quote(_ name: String) -> String { PGValues.quote(name) }
}
