import ManagedStoreCore

/// One entity's table in the SQLite store: its SQL names, and the statements run on every read
/// and write of one object, built once when the store opens (`SQLiteSchema`).
final class EntityTable: Sendable {
    /// The quoted table name.
    let name: String
    /// The column list of a full row (aliased t0): `_pk`, `_version`, the attributes, then the
    /// foreign keys in the order of `Entity.foreignKeyRelationships`.
    let rowColumnsSQL: String
    /// Loads one row by primary key.
    let loadRowSQL: PreparedSQL
    /// Per relationship: the keys of its destinations for one object, ascending; an ordered
    /// relationship's in their order.
    let relatedKeysSQL: [PreparedSQL]
    /// Inserts one row: `_pk`, `_version`, the attributes, then the foreign keys, in the order
    /// of `attributes` and `foreignKeyRelationships`, then `_history`.
    let insertRowSQL: PreparedSQL
    /// Records a change of one object in the history: its `_history_change` row (token, entity,
    /// pk, type, version, properties, previous), whose `prior` is the object's `_history` read
    /// from its row, so run before the save writes the row (`StoreSchema.historyStatements`).
    let recordChangeSQL: PreparedSQL
    /// Sets one object's `_history` (token, pk): for a change that wrote nothing else in its row.
    let setHistorySQL: PreparedSQL
    /// Per relationship stored as this row's foreign key: its column in a row read by
    /// `loadRowSQL` (nil for relationships stored elsewhere).
    let foreignKeyColumn: [Int32?]
    /// The rows of every kind of this entity (`Entity.kinds`) as one table expression with
    /// this entity's columns: where a relationship to it (a parent, perhaps) finds its
    /// destinations. Just `name` for an entity without sub-entities.
    let kindsSource: String

    init(_ entity: Entity, model: ManagedObjectModel) {
        let table = quoteIdentifier(entity.name)
        self.name = table
        self.kindsSource = entity.kindsSource(model)
        let relationships = entity.relationships
        let foreignKeys = entity.foreignKeyRelationships
        let columns = (["\"_pk\"", "\"_version\""] + entity.attributes.map { quoteIdentifier($0.name) }
            + foreignKeys.map { quoteIdentifier(relationships[$0].name) }).map { "t0." + $0 }.joined(separator: ", ")
        self.rowColumnsSQL = columns
        var foreignKeyColumn = [Int32?](repeating: nil, count: relationships.count)
        for (position, r) in foreignKeys.enumerated() { foreignKeyColumn[r] = Int32(2 + entity.attributes.count + position) }
        self.foreignKeyColumn = foreignKeyColumn
        self.loadRowSQL = PreparedSQL("SELECT \(columns) FROM \(table) AS t0 WHERE t0.\"_pk\" = ?")
        let insertColumns = ["\"_pk\"", "\"_version\""] + entity.attributes.map { quoteIdentifier($0.name) }
            + foreignKeys.map { quoteIdentifier(relationships[$0].name) } + [StoreSchema.historyColumn]
        self.insertRowSQL = PreparedSQL("INSERT INTO \(table) (\(insertColumns.joined(separator: ", "))) VALUES ("
            + Array(repeating: "?", count: insertColumns.count).joined(separator: ", ") + ")")
        self.recordChangeSQL = PreparedSQL(#"INSERT INTO "_history_change" ("token", "entity", "pk", "type", "version", "properties", "previous", "prior") "#
            + "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, (SELECT \(StoreSchema.historyColumn) FROM \(table) WHERE \"_pk\" = ?3))")
        self.setHistorySQL = PreparedSQL("UPDATE \(table) SET \(StoreSchema.historyColumn) = ?1 WHERE \"_pk\" = ?2")
        self.relatedKeysSQL = relationships.map { relationship in
            switch relationship.sql {
            case .foreignKey(let column):
                return PreparedSQL("SELECT \(column) FROM \(table) WHERE \"_pk\" = ? AND \(column) IS NOT NULL")
            case .inverseForeignKey(let column):
                let source = model.schema[relationship.destinationIndex].kindsSource(model)
                return PreparedSQL("SELECT \"_pk\" FROM \(source) WHERE \(column) = ? "
                    + "ORDER BY \(relationship.orderSQL(then: "\"_pk\""))")
            case let .joinTable(joinTable, ownColumn, otherColumn):
                return PreparedSQL("SELECT \(otherColumn) FROM \(joinTable) WHERE \(ownColumn) = ? ORDER BY \(relationship.orderSQL(then: otherColumn))")
            }
        }
    }
}

extension EntityTable {
    /// `entity`'s columns, read from each of its kinds' tables (which hold them under the same
    /// names: a sub-entity's table starts with what it inherits) and stacked. Abstract
    /// entities hold no rows, so only concrete kinds are read.
    fileprivate static func union(of entity: Entity, model: ManagedObjectModel) -> String {
        var columns = ["\"_pk\"", "\"_version\""] + entity.attributes.map { quoteIdentifier($0.name) }
        columns += entity.foreignKeyRelationships.map { quoteIdentifier(entity.relationships[$0].name) }
        columns += entity.positionedKeys.map { quoteIdentifier(Relationship.positionName(ofKey: entity.relationships[$0].name)) }
        let list = columns.joined(separator: ", ")
        let selects = entity.kinds.map { "SELECT \(list) FROM \(quoteIdentifier(model.schema[$0].name))" }
        return "(" + (selects.isEmpty ? "SELECT \(list) FROM \(quoteIdentifier(entity.name))" : selects.joined(separator: " UNION ALL ")) + ")"
    }
}

/// The tables of a model's entities, by entity index: shared by every connection of a store.
final class SQLiteSchema: Sendable {
    let tables: [EntityTable]

    init(_ model: ManagedObjectModel) { tables = model.schema.map { EntityTable($0, model: model) } }

    subscript(entity: Entity) -> EntityTable { tables[entity.index] }
}

/// Where a relationship's links are in SQL: the column or table that holds them.
enum SQLRelationshipStorage {
    /// This entity's row holds the destination's primary key in `column`.
    case foreignKey(column: String)
    /// The destination's row holds this object's primary key in `column`.
    case inverseForeignKey(column: String)
    /// Many-to-many: one row per link in `table`, this side's key in `ownColumn`.
    case joinTable(table: String, ownColumn: String, otherColumn: String)
}

extension Relationship {
    /// The columns and table of the relationship's links (`RelationshipStorage` in SQL).
    var sql: SQLRelationshipStorage {
        switch storage {
        case .foreignKey: return .foreignKey(column: quoteIdentifier(name))
        case .inverseForeignKey: return .inverseForeignKey(column: quoteIdentifier(destinationKeyName))
        case let .joinTable(table, isFirstSide):
            return isFirstSide ? .joinTable(table: quoteIdentifier(table), ownColumn: "\"a\"", otherColumn: "\"b\"")
                               : .joinTable(table: quoteIdentifier(table), ownColumn: "\"b\"", otherColumn: "\"a\"")
        }
    }
}

extension Relationship {
    /// The ORDER BY of a to-many's destinations: by `key` (quoted), after their place when the
    /// relationship is ordered (placed ones first, in place order; unplaced ones after, by key).
    func orderSQL(then key: String) -> String {
        guard let position = positionName.map(quoteIdentifier) else { return key }
        return "\(position) IS NULL, \(position), \(key)"
    }
}

extension Entity {
    /// The quoted name of the entity's table (for statements built as they are needed; the
    /// statements of every read and write are the `EntityTable`'s).
    var table: String { quoteIdentifier(name) }

    /// The rows of every kind of this entity under its columns (`EntityTable.kindsSource`).
    func kindsSource(_ model: ManagedObjectModel) -> String {
        isSingleKind ? table : EntityTable.union(of: self, model: model)
    }
}

/// Quotes an SQL identifier. Model names are checked to be plain identifiers, so this never
/// has to escape anything; it still doubles quotes so that it is safe on its own.
func quoteIdentifier(_ name: String) -> String {
    var quoted = "\""
    for character in name {
        if character == "\"" { quoted.append("\"") }
        quoted.append(character)
    }
    quoted.append("\"")
    return quoted
}
