import ManagedStoreCore

/// The SQL-level work of a lightweight migration, as `LightweightMigration` plans it and
/// `SchemaChangeRunner` carries it out: tables, columns, join tables, indexes and the
/// bookkeeping rows keyed by entity name. Tables are named as in the destination model
/// once entities are renamed; columns as in the source model until they are renamed.
struct SchemaChanges {
    /// Index names (quoted) of the source model to drop first: an entity's indexes are made
    /// again from the destination model whenever they would differ (a rename, a column they
    /// use, a new constraint), since SQLite cannot drop a column an index uses.
    var dropIndexes: [String] = []
    /// Tables (quoted) of removed entities, and their entity names (for their history rows).
    var dropTables: [(table: String, entity: String)] = []
    /// Join tables (quoted) of removed many-to-many relationships.
    var dropJoinTables: [String] = []
    /// Entities renamed, by name.
    var renameEntities: [(from: String, to: String)] = []
    /// Join tables (quoted) that take a new name, and whether their columns change places (the
    /// other side now names the table, so its keys go in `a`).
    var moveJoinTables: [(from: String, to: String, swapsColumns: Bool)] = []
    /// Columns renamed, in tables named as in the destination model.
    var renameColumns: [(table: String, from: String, to: String)] = []
    /// Columns dropped (removed attributes, links no longer stored there), after the fills.
    var dropColumns: [(table: String, column: String)] = []
    /// Columns added, with their SQL types.
    var addColumns: [(table: String, column: String, type: String)] = []
    /// New entities: their tables (their indexes are in `createIndexes`).
    var createTables: [Entity] = []
    /// New many-to-many relationships' join tables (quoted).
    var createJoinTables: [String] = []
    /// Values written into existing rows once the columns are in place.
    var fills: [Fill] = []
    /// Destination entities whose indexes are created (after `dropIndexes` and the fills).
    var createIndexes: [Entity] = []
    /// Per destination entity name: the source property names its history rows name that are
    /// renamed (to the new name) or removed (to nil).
    var historyProperties: [String: [String: String?]] = [:]

    enum Fill {
        /// Every row's `column` (or only the NULL ones) takes `value`.
        case value(table: String, column: String, value: AttributeValue, onlyNulls: Bool)
        /// One-to-one links move: each row of `table` takes in `column` the key of the row of
        /// `fromTable` whose `fromColumn` (a column about to be dropped) holds its key.
        case links(table: String, column: String, fromTable: String, fromColumn: String)
    }
}
