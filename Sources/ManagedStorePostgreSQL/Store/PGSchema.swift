import Foundation
import ManagedStoreCore

/// The tables of a model in PostgreSQL, and the SQL text of each entity's reads and writes,
/// built once per store.
///
/// An entity's table is named after it: `_pk` (its primary key), `_version`, a column per
/// attribute, and a `bigint` column per to-one whose key this side keeps (named after the
/// relationship). A many-to-many is a link table `(a, b)`. The store's own tables start with
/// `_managedstore_`, which no entity name can.
struct PGSchema {
    struct EntityTable {
        let entity: Entity
        let table: String
        /// `_pk, _version, attributes..., foreign keys...`: what every row read selects.
        let selectColumns: String
        let attributeColumns: [String]
        let foreignKeyColumns: [String]
        /// The rows of every kind of the entity (`Entity.kinds`) under its columns: where a
        /// relationship to it (a parent entity, perhaps) finds its destinations. Just `table`
        /// for an entity without sub-entities.
        var kindsSource: String
        /// The attributes of each of the table's B-tree indexes but its keys (nil: a column that
        /// is not an attribute): what `PGValueLimits` sizes an entry of.
        let bTreeIndexes: [[Int?]]

        /// The row at `row` of a result that selected `selectColumns` from column `offset` on.
        func storedRow(_ result: PGResult, _ row: Int, from offset: Int = 0) -> (key: Int64, row: StoredRow) {
            let key = result.int64(row, offset) ?? 0
            let version = result.int64(row, offset + 1) ?? 0
            var attributes: [AttributeValue] = []
            attributes.reserveCapacity(entity.attributes.count)
            for (i, attribute) in entity.attributes.enumerated() {
                attributes.append(PGValues.value(result.text(row, offset + 2 + i), type: attribute.type))
            }
            let foreignKeyOffset = offset + 2 + entity.attributes.count
            let foreignKeys = entity.foreignKeyRelationships.indices.map { result.int64(row, foreignKeyOffset + $0) }
            return (key, StoredRow(version: version, attributes: attributes, foreignKeys: foreignKeys))
        }
    }

    let tables: [EntityTable]
    let model: ManagedObjectModel
    /// Per entity: one object's row with its destinations (`rowWithDestinations`), by entity index.
    private(set) var rowsWithDestinations: [RowWithDestinations] = []

    init(model: ManagedObjectModel) {
        self.model = model
        tables = model.schema.map { entity in
            let attributeColumns = entity.attributes.map { PGValues.quote($0.name) }
            let foreignKeyColumns = entity.foreignKeyRelationships.map { PGValues.quote(entity.relationships[$0].name) }
            return EntityTable(entity: entity, table: PGValues.quote(entity.name),
                               selectColumns: (["_pk", "_version"] + attributeColumns + foreignKeyColumns).joined(separator: ", "),
                               attributeColumns: attributeColumns, foreignKeyColumns: foreignKeyColumns,
                               kindsSource: entity.isSingleKind ? PGValues.quote(entity.name) : Self.union(of: entity, model: model),
                               bTreeIndexes: PGValueLimits.indexedAttributes(of: entity))
        }
        // Built once the tables are known: a destination's rows may be a union of its kinds'.
        rowsWithDestinations = model.schema.map(rowWithDestinations)
    }

    /// `entity`'s columns read from each of its concrete kinds' tables, which hold them under
    /// the same names (a sub-entity's table starts with what it inherits), stacked.
    private static func union(of entity: Entity, model: ManagedObjectModel) -> String {
        var columns = ["_pk", "_version"] + entity.attributes.map { PGValues.quote($0.name) }
        columns += entity.foreignKeyRelationships.map { PGValues.quote(entity.relationships[$0].name) }
        columns += entity.positionedKeys.map { PGValues.quote(Relationship.positionName(ofKey: entity.relationships[$0].name)) }
        let list = columns.joined(separator: ", ")
        let kinds = entity.kinds.isEmpty ? [entity.index] : entity.kinds
        return "(" + kinds.map { "SELECT \(list) FROM \(PGValues.quote(model.schema[$0].name))" }.joined(separator: " UNION ALL ") + ")"
    }

    subscript(entity: Entity) -> EntityTable { tables[entity.index] }

    /// The link tables of the model's many-to-many relationships, each once.
    var linkTables: [String] {
        var seen: [String] = []
        for entity in model.schema {
            for relationship in entity.relationships {
                if case .joinTable(let table, _) = relationship.storage, !seen.contains(table) { seen.append(table) }
            }
        }
        return seen
    }

    /// The index that finds the run of inserts a key is in (`through`: the last key of a run
    /// that starts at `pk`). Stores made before runs get the column and the index when they are
    /// opened (`PGStoreOpening.upgradeStoreTables`).
    static let historyRunsIndexSQL =
        "CREATE INDEX _managedstore_history_change_runs ON _managedstore_history_change (entity, pk) WHERE through IS NOT NULL"

    /// Everything a new store creates, in one script.
    var creationSQL: String {
        var sql: [String] = [
            """
            CREATE TABLE _managedstore_store (
                id int PRIMARY KEY CHECK (id = 1), identifier uuid NOT NULL, model_name text NOT NULL,
                model_hash text NOT NULL, model_json text NOT NULL, last_token bigint NOT NULL DEFAULT 0, pruned_through bigint NOT NULL DEFAULT 0)
            """,
            "CREATE TABLE _managedstore_keys (entity text COLLATE \"C\" PRIMARY KEY, last bigint NOT NULL DEFAULT 0)",
            """
            CREATE TABLE _managedstore_history_transaction (
                token bigint PRIMARY KEY, timestamp double precision NOT NULL, author text, context text)
            """,
            // One row per recorded change, and per object saved while history was off (token
            // NULL: what changed then is nowhere, so the object's chain is broken there).
            """
            CREATE TABLE _managedstore_history_change (
                seq bigserial PRIMARY KEY, token bigint, entity text COLLATE "C" NOT NULL, pk bigint NOT NULL,
                type smallint NOT NULL, version bigint, properties text NOT NULL, previous text, through bigint)
            """,
            "CREATE INDEX ON _managedstore_history_change (token)",
            "CREATE INDEX ON _managedstore_history_change (entity, pk, seq)",
            Self.historyRunsIndexSQL,
            """
            CREATE TABLE _managedstore_idempotency (
                key text COLLATE "C" PRIMARY KEY, fingerprint bytea NOT NULL, answer bytea NOT NULL,
                created double precision NOT NULL, seq bigserial NOT NULL)
            """,
            "CREATE INDEX ON _managedstore_idempotency (seq)",
        ]
        for table in tables {
            sql += createTable(table.entity) + createIndexes(table.entity)
        }
        for link in linkTables { sql += createLinkTable(link) }
        return sql.joined(separator: ";\n")
    }

    /// `entity`'s table, and its row of the key sequences (kept if one is left from an entity
    /// of that name that a migration removed: its keys are never handed out again).
    func createTable(_ entity: Entity) -> [String] {
        let table = self[entity]
        var columns = ["_pk bigint PRIMARY KEY", "_version bigint NOT NULL"]
        for (i, attribute) in entity.attributes.enumerated() {
            columns.append("\(table.attributeColumns[i]) \(PGValues.columnType(attribute.type))")
        }
        for column in table.foreignKeyColumns { columns.append("\(column) bigint") }
        // The object's place in an ordered inverse, beside the key (NULL: after the placed ones).
        for r in entity.positionedKeys {
            columns.append("\(PGValues.quote(Relationship.positionName(ofKey: entity.relationships[r].name))) bigint")
        }
        return ["CREATE TABLE \(table.table) (\(columns.joined(separator: ", ")))",
                "INSERT INTO _managedstore_keys (entity) VALUES (\(PGValues.literal(entity.name))) ON CONFLICT (entity) DO NOTHING"]
    }

    /// `entity`'s indexes: one per foreign key (finding the objects that point at one object
    /// must not scan the table), its uniqueness constraints, and its declared indexes.
    func createIndexes(_ entity: Entity) -> [String] {
        let table = self[entity]
        var sql = table.foreignKeyColumns.map { "CREATE INDEX ON \(table.table) (\($0))" }
        // Deferrable, checked at the end of each save's writes (`PGSession.write`): a save
        // that swaps two unique values passes through a moment where both rows hold one.
        for (c, constraint) in entity.uniquenessConstraints.enumerated() {
            let columns = constraint.map { table.attributeColumns[$0] }.joined(separator: ", ")
            sql.append("ALTER TABLE \(table.table) ADD CONSTRAINT \(PGValues.quote(uniqueIndexName(entity, c))) UNIQUE (\(columns)) DEFERRABLE INITIALLY IMMEDIATE")
        }
        for names in entity.indexes {
            sql.append("CREATE INDEX ON \(table.table) (\(names.map(PGValues.quote).joined(separator: ", ")))")
        }
        return sql
    }

    /// A many-to-many's link table: a pair of keys per link, found from either side, and the
    /// link's place in the order of each ordered side.
    func createLinkTable(_ name: String) -> [String] {
        let table = PGValues.quote(name)
        var positions: Set<String> = []
        for entity in model.schema {
            for relationship in entity.relationships {
                if case .joinTable(name, _) = relationship.storage, let position = relationship.positionName { positions.insert(position) }
            }
        }
        let extra = positions.sorted().map { ", \(PGValues.quote($0)) bigint" }.joined()
        return ["CREATE TABLE \(table) (a bigint NOT NULL, b bigint NOT NULL\(extra), PRIMARY KEY (a, b))", "CREATE INDEX ON \(table) (b, a)"]
    }

    /// The name of uniqueness constraint `c` of `entity`, which a unique violation names.
    func uniqueIndexName(_ entity: Entity, _ c: Int) -> String { "_unique_\(entity.name)_\(c)" }
}
