/// The storage-level work of a lightweight migration, as `LightweightMigration` plans it and
/// each store's runner carries it out: tables, columns, join tables, indexes and the
/// bookkeeping rows keyed by entity name. Every store lays a model out alike (a table per
/// entity named after it, a column per attribute and per key-holding to-one, a join table per
/// many-to-many), so the plan names tables and columns by the model's names, unquoted: tables
/// as in the destination model once entities are renamed; columns as in the source model
/// until they are renamed.
package struct SchemaChanges {
    /// Source entities whose indexes and uniqueness constraints go first: an entity's are made
    /// again from the destination model whenever they would differ (a rename, a column they
    /// use, a new constraint), since SQLite cannot drop a column an index uses.
    package var dropIndexes: [Entity] = []
    /// Removed entities, by name: their tables go, and their history rows.
    package var dropTables: [String] = []
    /// Join tables of removed many-to-many relationships.
    package var dropJoinTables: [String] = []
    /// Entities renamed, by name.
    package var renameEntities: [(from: String, to: String)] = []
    /// Join tables that take a new name, and whether their columns change places (the other
    /// side now names the table, so its keys go in `a`).
    package var moveJoinTables: [(from: String, to: String, swapsColumns: Bool)] = []
    /// Columns renamed, in tables named as in the destination model.
    package var renameColumns: [(table: String, from: String, to: String)] = []
    /// Columns dropped (removed attributes, links no longer stored there), after the fills.
    package var dropColumns: [(table: String, column: String)] = []
    /// Columns added, with what they hold.
    package var addColumns: [(table: String, column: String, kind: ColumnKind)] = []
    /// New entities: their tables (their indexes are in `createIndexes`).
    package var createTables: [Entity] = []
    /// New many-to-many relationships' join tables, with the place columns of their ordered
    /// sides (`Relationship.positionName`).
    package var createJoinTables: [(table: String, positions: [String])] = []
    /// Values written into existing rows once the columns are in place.
    package var fills: [Fill] = []
    /// Links copied into new join tables (after `createJoinTables`) from the key columns of
    /// to-ones that became to-many, before those columns are dropped.
    package var linkFills: [LinkFill] = []
    /// Destination entities whose indexes are created (after `dropIndexes` and the fills).
    package var createIndexes: [Entity] = []
    /// Per destination entity name: the source property names its history rows name that are
    /// renamed (to the new name) or removed (to nil).
    package var historyProperties: [String: [String: String?]] = [:]

    package init() {}

    /// What an added column holds: an attribute's values, or the keys of a to-one's
    /// destinations (or an object's place in an ordered relationship: an integer too).
    package enum ColumnKind: Equatable {
        case attribute(AttributeType)
        case key
    }

    package enum Fill {
        /// Every row's `column` (or only the NULL ones) takes `value`.
        case value(table: String, column: String, value: AttributeValue, onlyNulls: Bool)
        /// One-to-one links move: each row of `table` takes in `column` the key of the row of
        /// `fromTable` whose `fromColumn` (a column about to be dropped) holds its key.
        case links(table: String, column: String, fromTable: String, fromColumn: String)
    }

    /// The links a to-one kept in `keyColumn` of `fromTable` (a column about to be dropped),
    /// each row that holds a key made one row of the join table `table`: the row's own key in
    /// `ownColumn` (`a` or `b`), the key it held in the other. `place`, when the inverse is
    /// ordered, copies the place kept beside the key into the join table's place column.
    package struct LinkFill: Equatable {
        package let table: String
        package let ownColumn: String
        package let otherColumn: String
        package let fromTable: String
        package let keyColumn: String
        package let place: (joinColumn: String, fromColumn: String)?

        package static func == (a: LinkFill, b: LinkFill) -> Bool {
            (a.table, a.ownColumn, a.otherColumn, a.fromTable, a.keyColumn) == (b.table, b.ownColumn, b.otherColumn, b.fromTable, b.keyColumn)
                && a.place?.joinColumn == b.place?.joinColumn && a.place?.fromColumn == b.place?.fromColumn
        }
    }

    /// What an entity's indexes and uniqueness constraints are made from, in every store: its
    /// name (indexes are named after it), its key-holding to-ones (each indexed), its
    /// constraints and its declared indexes. Equal layouts need no rebuild.
    package static func indexLayout(_ entity: Entity) -> [String] {
        ["entity " + entity.name]
            + entity.foreignKeyRelationships.map { "key " + entity.relationships[$0].name }
            + entity.uniquenessConstraints.map { "unique " + $0.map { entity.attributes[$0].name }.joined(separator: ",") }
            + entity.indexes.map { "index " + $0.joined(separator: ",") }
    }
}
