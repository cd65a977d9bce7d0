import ManagedStoreCore

/// The SQL schema of a model: a table per entity, foreign-key columns for to-one relationships,
/// join tables for many-to-many, indexes and unique indexes, and ManagedStore's own tables.
enum StoreSchema {
    /// Statements that create an empty store for `model`.
    static func createStatements(for model: ManagedObjectModel) -> [String] {
        var statements: [String] = [
            "CREATE TABLE \"_metadata\" (\"key\" TEXT PRIMARY KEY, \"value\" TEXT NOT NULL)",
            // The largest primary key handed out per entity; keys are never reused, so an object
            // ID (and its URI) never comes to name a different object after a delete.
            "CREATE TABLE \"_sequence\" (\"entity\" TEXT PRIMARY KEY, \"max\" INTEGER NOT NULL)",
        ] + historyStatements + IdempotencyTable.createStatements
        var joinTables: Set<String> = []
        for entity in model.schema {
            statements.append(createTable(entity, named: entity.table))
            statements.append(contentsOf: createIndexes(entity))
            for relationship in entity.relationships {
                guard case let .joinTable(table, ownColumn, _) = relationship.sql, ownColumn == "\"a\"" else { continue }
                // A sub-entity shares the join tables of the relationships it inherits.
                guard joinTables.insert(table).inserted else { continue }
                let inverse = relationship.inverseIndex.map { model.schema[relationship.destinationIndex].relationships[$0] }
                let positions = [relationship.positionName, isSelfInverse(relationship, of: entity) ? nil : inverse?.positionName].compactMap { $0 }
                statements += [createJoinTable(named: table, positions: positions), createJoinTableIndex(table)]
            }
        }
        return statements
    }

    /// A relationship that is its own inverse (friends <-> friends) has one side, and one position.
    static func isSelfInverse(_ relationship: Relationship, of entity: Entity) -> Bool {
        relationship.destinationIndex == entity.index && relationship.inverseIndex == relationship.index
    }

    /// The join table `table` (quoted) of a many-to-many relationship: one row per link, the
    /// key of the side that names the table in `a`, the other side's in `b`; and for an
    /// ordered side, the link's place in its order (`positions`, unquoted names).
    static func createJoinTable(named table: String, positions: [String] = []) -> String {
        let extra = positions.map { ", \(quoteIdentifier($0)) INTEGER" }.joined()
        return "CREATE TABLE \(table) (\"a\" INTEGER NOT NULL, \"b\" INTEGER NOT NULL\(extra), PRIMARY KEY (\"a\", \"b\")) WITHOUT ROWID"
    }

    /// The name (quoted) of the index that finds a join table's links from the `b` side.
    static func joinTableIndexName(_ table: String) -> String {
        quoteIdentifier(String(table.dropFirst().dropLast()) + "_b")
    }

    static func createJoinTableIndex(_ table: String) -> String {
        "CREATE INDEX \(joinTableIndexName(table)) ON \(table) (\"b\", \"a\")"
    }

    /// The persistent history (`PersistentHistory.swift`): one row per committed save and one
    /// row per object it changed. Changes are found by token (the change feed) and by object
    /// (which properties the store changed after a version: merge policies).
    ///
    /// A save's token is the largest one so far plus one (SQLite's choice for an unbound
    /// `INTEGER PRIMARY KEY`). It is never handed out again, because pruning never deletes the
    /// newest transaction's row (only its changes): AUTOINCREMENT would promise the same at the
    /// price of a `sqlite_sequence` update in every save.
    ///
    /// An object's changes are chained, newest first: its row's `_history` holds the token of
    /// its last recorded change, and each change row the token of the one before (`prior`). An
    /// index on (entity, pk, token) would find them too, but every save would then write an
    /// entry on a random page of it, one more page to write and sync per object changed,
    /// where the row's `_history` is on the page the save writes anyway. A deleted object has
    /// no row: its deletion is found by the small index of deletions.
    static let historyStatements = [
        historyTransactionTable(named: "\"_history_transaction\""),
        historyChangeTable(named: "\"_history_change\""),
        historyDeletionIndex,
    ]

    /// Finds a deleted object's deletion (it has no row to hold its chain's head).
    static let historyDeletionIndex =
        "CREATE INDEX \"_history_change_deleted\" ON \"_history_change\" (\"entity\", \"pk\") WHERE \"type\" = 3"

    /// The column of every entity table that holds the token of its object's last recorded
    /// change (NULL: none, or not known: saved while history was off).
    static let historyColumn = "\"_history\""

    static func historyTransactionTable(named table: String) -> String {
        "CREATE TABLE \(table) (\"token\" INTEGER PRIMARY KEY, \"timestamp\" REAL NOT NULL, \"author\" TEXT, \"context\" TEXT)"
    }

    /// `type`: 1 insert, 2 update, 3 delete (`HistoryCoding`); `version`: the object's version
    /// after the change, when the save wrote its row (NULL for a delete, and for a change only
    /// to links stored outside the row); `prior`: the token of the object's change before this
    /// one (NULL: none recorded).
    ///
    /// `through` (format 7): set on a row that records the inserts of one save of the objects
    /// of `entity` keyed `pk` to `through`, each of version 1 with no values before and no
    /// `prior`; NULL on a row of one object's change. A save of many new objects records a
    /// row per run of keys instead of one per object (what history cost the library's inserts:
    /// about 12,000 of their 43,000 instructions an object, Benchmarks/RESULTS.md).
    static func historyChangeTable(named table: String) -> String {
        "CREATE TABLE \(table) (\"token\" INTEGER NOT NULL, \"entity\" TEXT NOT NULL, \"pk\" INTEGER NOT NULL, "
            + "\"type\" INTEGER NOT NULL, \"version\" INTEGER, \"properties\" TEXT, \"previous\" TEXT, \"prior\" INTEGER, "
            + "\"through\" INTEGER, PRIMARY KEY (\"token\", \"entity\", \"pk\")) WITHOUT ROWID"
    }

    /// The CREATE TABLE of `entity`'s rows, named `table` (quoted): the entity's own table, or
    /// the replacement a format migration fills before it takes the table's place.
    static func createTable(_ entity: Entity, named table: String) -> String {
        var columns = ["\"_pk\" INTEGER PRIMARY KEY", "\"_version\" INTEGER NOT NULL"]
        for attribute in entity.attributes {
            columns.append(quoteIdentifier(attribute.name) + " " + columnType(attribute.type))
        }
        for r in entity.foreignKeyRelationships {
            columns.append(quoteIdentifier(entity.relationships[r].name) + " INTEGER")
        }
        // The object's place in an ordered inverse, beside the key (NULL: after the placed ones).
        for r in entity.positionedKeys {
            columns.append(quoteIdentifier(Relationship.positionName(ofKey: entity.relationships[r].name)) + " INTEGER")
        }
        columns.append(historyColumn + " INTEGER")
        return "CREATE TABLE \(table) (\(columns.joined(separator: ", ")))"
    }

    /// The indexes on `entity`'s table: one per foreign key, its uniqueness constraints, and
    /// the indexes its description declares.
    static func createIndexes(_ entity: Entity) -> [String] {
        indexes(entity).map(\.sql)
    }

    /// The indexes on `entity`'s table, each with its name (quoted) and its CREATE INDEX.
    static func indexes(_ entity: Entity) -> [(name: String, sql: String)] {
        var indexes: [(name: String, sql: String)] = []
        func add(_ name: String, unique: Bool = false, _ columns: [String]) {
            let quoted = quoteIdentifier(name)
            let list = columns.map(quoteIdentifier).joined(separator: ", ")
            indexes.append((quoted, "CREATE \(unique ? "UNIQUE " : "")INDEX \(quoted) ON \(entity.table) (\(list))"))
        }
        // Finding the objects that point at one object (a to-many fault, a delete rule) must
        // not scan the table: index each foreign key.
        for r in entity.foreignKeyRelationships {
            let name = entity.relationships[r].name
            add("\(entity.name)_fk_\(name)", [name])
        }
        for (i, constraint) in entity.uniquenessConstraints.enumerated() {
            add("\(entity.name)_unique_\(i)", unique: true, constraint.map { entity.attributes[$0].name })
        }
        for (i, index) in entity.indexes.enumerated() {
            add("\(entity.name)_index_\(i)", index)
        }
        return indexes
    }

    /// The column type of an attribute. Plain SQLite types only: a custom collation here would
    /// make the file unreadable to stock SQLite (`no such collation sequence`). Decimals are
    /// TEXT that orders bytewise like the numbers (`DecimalStorage`).
    static func columnType(_ type: AttributeType) -> String {
        switch type {
        case .integer16, .integer32, .integer64, .boolean: return "INTEGER"
        case .double, .float, .date: return "REAL"
        case .string, .uuid, .uri, .decimal: return "TEXT"
        case .binary: return "BLOB"
        }
    }
}
