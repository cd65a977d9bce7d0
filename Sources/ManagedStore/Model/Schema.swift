// The resolved form of a model: what contexts and the SQLite store work with.
//
// Descriptions name things by string; here every reference is an index, checked once when the
// model is built, so no hot path looks up a destination or an inverse by name.

/// Where a relationship's links are stored.
enum RelationshipStorage: Sendable, Hashable {
    /// This entity's row holds the destination's primary key in `column`.
    case foreignKey(column: String)
    /// The destination's row holds this object's primary key in `column` (the inverse is a
    /// to-one that owns the foreign key).
    case inverseForeignKey(column: String)
    /// Many-to-many: one row per link in `table`, this side's key in `ownColumn`.
    case joinTable(table: String, ownColumn: String, otherColumn: String)
}

/// A relationship with its destination and inverse resolved to indexes.
struct Relationship: Sendable {
    let index: Int
    let description: RelationshipDescription
    let destinationIndex: Int
    let inverseIndex: Int
    let storage: RelationshipStorage

    var name: String { description.name }
    var isToMany: Bool { description.isToMany }
}

/// A property of an entity, found by name.
enum PropertyRef: Sendable, Hashable {
    case attribute(Int)
    case relationship(Int)
}

/// An entity with everything resolved; shared, immutable, so it is Sendable.
final class Entity: Sendable {
    let index: Int
    let name: String
    let attributes: [AttributeDescription]
    let relationships: [Relationship]
    let propertyByName: [String: PropertyRef]
    /// Attribute names, then relationship names: what `property(named:)` scans.
    let propertyNames: [String]
    /// Attribute indexes of each uniqueness constraint.
    let uniquenessConstraints: [[Int]]
    let indexes: [[String]]
    /// The default value of each attribute, the starting state of an inserted object.
    let defaultAttributes: [AttributeValue]
    /// Relationships whose key is stored in this entity's row, in relationship order.
    let foreignKeyRelationships: [Int]
    /// Whether any relationship is many-to-many (stored in a join table).
    let hasJoinTables: Bool
    /// Relationships stored in a join table, in relationship order.
    let joinTableRelationships: [Int]
    /// Per attribute: whether it has a range, length or pattern rule (validation beyond its
    /// type and optionality).
    let attributeHasRules: [Bool]
    /// The relationships of a new object (no destinations), shared by every insert until written.
    let emptyRelationships: [RelationshipState]
    /// The entity as its author described it.
    let descriptionValue: EntityDescription
    /// SQL text used on every read, built once: the quoted table name, the column list of a
    /// full row (aliased t0), and the statement that loads one row by primary key.
    let table: String
    let rowColumnsSQL: String
    let loadRowSQL: PreparedSQL
    /// Per relationship: the keys of its destinations for one object, ascending.
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

    init(index: Int, description: EntityDescription, relationships: [Relationship]) {
        self.index = index
        self.name = description.name
        self.attributes = description.attributes
        self.relationships = relationships
        var byName: [String: PropertyRef] = [:]
        for (i, a) in description.attributes.enumerated() { byName[a.name] = .attribute(i) }
        for (i, r) in description.relationships.enumerated() { byName[r.name] = .relationship(i) }
        self.propertyByName = byName
        self.propertyNames = description.attributes.map(\.name) + description.relationships.map(\.name)
        self.uniquenessConstraints = description.uniquenessConstraints.map { names in
            names.compactMap { name in description.attributes.firstIndex { $0.name == name } }
        }
        self.indexes = description.indexes
        self.defaultAttributes = description.attributes.map(\.defaultValue)
        let foreignKeys = relationships.filter {
            if case .foreignKey = $0.storage { return true } else { return false }
        }.map(\.index)
        self.foreignKeyRelationships = foreignKeys
        let joinTables = relationships.filter { if case .joinTable = $0.storage { return true } else { return false } }.map(\.index)
        self.joinTableRelationships = joinTables
        self.hasJoinTables = !joinTables.isEmpty
        self.attributeHasRules = description.attributes.map {
            $0.minValue != nil || $0.maxValue != nil || $0.minLength != nil || $0.maxLength != nil || $0.pattern != nil
        }
        self.emptyRelationships = relationships.map { $0.isToMany ? .toMany([]) : .toOne(nil) }
        self.descriptionValue = description
        let table = quoteIdentifier(description.name)
        self.table = table
        let columns = (["\"_pk\"", "\"_version\""] + description.attributes.map { quoteIdentifier($0.name) }
            + foreignKeys.map { quoteIdentifier(relationships[$0].name) }).map { "t0." + $0 }.joined(separator: ", ")
        self.rowColumnsSQL = columns
        var foreignKeyColumn = [Int32?](repeating: nil, count: relationships.count)
        for (position, r) in foreignKeys.enumerated() { foreignKeyColumn[r] = Int32(2 + description.attributes.count + position) }
        self.foreignKeyColumn = foreignKeyColumn
        self.loadRowSQL = PreparedSQL("SELECT \(columns) FROM \(table) AS t0 WHERE t0.\"_pk\" = ?")
        let insertColumns = ["\"_pk\"", "\"_version\""] + description.attributes.map { quoteIdentifier($0.name) }
            + foreignKeys.map { quoteIdentifier(relationships[$0].name) } + [StoreSchema.historyColumn]
        self.insertRowSQL = PreparedSQL("INSERT INTO \(table) (\(insertColumns.joined(separator: ", "))) VALUES ("
            + Array(repeating: "?", count: insertColumns.count).joined(separator: ", ") + ")")
        self.recordChangeSQL = PreparedSQL(#"INSERT INTO "_history_change" ("token", "entity", "pk", "type", "version", "properties", "previous", "prior") "#
            + "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, (SELECT \(StoreSchema.historyColumn) FROM \(table) WHERE \"_pk\" = ?3))")
        self.setHistorySQL = PreparedSQL("UPDATE \(table) SET \(StoreSchema.historyColumn) = ?1 WHERE \"_pk\" = ?2")
        self.relatedKeysSQL = relationships.map { relationship in
            switch relationship.storage {
            case .foreignKey(let column):
                return PreparedSQL("SELECT \(column) FROM \(table) WHERE \"_pk\" = ? AND \(column) IS NOT NULL")
            case .inverseForeignKey(let column):
                return PreparedSQL("SELECT \"_pk\" FROM \(quoteIdentifier(relationship.description.destination)) WHERE \(column) = ? ORDER BY \"_pk\"")
            case let .joinTable(joinTable, ownColumn, otherColumn):
                return PreparedSQL("SELECT \(otherColumn) FROM \(joinTable) WHERE \(ownColumn) = ? ORDER BY \(otherColumn)")
            }
        }
    }

    func attributeIndex(_ name: String) -> Int? {
        if case .attribute(let i)? = property(named: name) { return i }
        return nil
    }

    /// The property called `name`. Entities have few properties, and comparing small strings
    /// costs less than hashing them (the setter path does this for every value it sets).
    func property(named name: String) -> PropertyRef? {
        if propertyNames.count <= 16 {
            guard let i = propertyNames.firstIndex(of: name) else { return nil }
            return i < attributes.count ? .attribute(i) : .relationship(i - attributes.count)
        }
        return propertyByName[name]
    }

    func relationshipIndex(_ name: String) -> Int? {
        if case .relationship(let i)? = property(named: name) { return i }
        return nil
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
