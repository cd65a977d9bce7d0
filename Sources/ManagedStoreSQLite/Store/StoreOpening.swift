import Foundation
import ManagedStoreCore

/// Opening a store file with a model: the schema created in an empty database; or an
/// existing store checked to be one this version reads, its older file format upgraded in
/// place (`StoreFormatMigration`), and, when it was made from another model, migrated to this
/// one (`LightweightMigration`), all in the one transaction that opens it.
enum StoreOpening {
    /// What opening a store does, decided by reading it before anything is written: what a
    /// dry run shows is what an open does.
    enum Decision {
        /// An empty database: the schema is created.
        case create
        /// An existing store, made in `format` from `source`; `migration` takes it to the
        /// opening model (nil when it is that model already). `recordsModel`: whether the
        /// store holds its model's JSON (stores of earlier versions do not).
        case open(uuid: UUID, format: String, source: ManagedObjectModel, migration: LightweightMigration?, recordsModel: Bool)

        /// The steps opening runs: the format upgrade, then the migration.
        var plan: MigrationPlan {
            guard case let .open(_, format, _, migration, _) = self else { return MigrationPlan(steps: []) }
            let upgrade: [MigrationStep] = format == StoreFormatMigration.currentFormat ? []
                : [.upgradeFormat(from: format, to: StoreFormatMigration.currentFormat)]
            return MigrationPlan(steps: upgrade + (migration?.steps ?? []))
        }
    }

    /// Reads the store on `connection` (inside a transaction, so that what is decided on holds
    /// when it is carried out) and decides what opening it with `model` does. Throws when it
    /// cannot be opened: not a store, a format this version does not read, another model that
    /// is not to be migrated (`infersMigration` off, or the store does not say which model it
    /// was made from), or changes that cannot be inferred.
    static func decide(_ connection: SQLiteConnection, model: ManagedObjectModel, path: String, infersMigration: Bool) throws(StoreError) -> Decision {
        let hasMetadata = try connection.scalarInt("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_metadata'") != nil
        guard hasMetadata else {
            guard try connection.scalarInt("SELECT count(*) FROM sqlite_master") == 0 else { throw .notAManagedStore(path: path) }
            return .create
        }
        // A format this version cannot read is refused before anything else is read.
        let format = try StoreFormatMigration.readableFormat(try StoreMetadata.value("format", connection), path: path)
        let hash = try StoreMetadata.value("model_hash", connection) ?? ""
        let json = try StoreMetadata.value("model_json", connection)
        let storeModel = try StoreMetadata.value("model_name", connection) ?? "?"
        if hash != model.versionHash {
            guard infersMigration else {
                throw .modelMismatch(storeModel: storeModel, storeHash: hash, modelHash: model.versionHash, reason: .migrationOff)
            }
            guard json != nil else {
                throw .modelMismatch(storeModel: storeModel, storeHash: hash, modelHash: model.versionHash, reason: .modelNotRecorded)
            }
        }
        guard let text = try StoreMetadata.value("store_uuid", connection), let uuid = UUID(uuidString: text) else {
            throw .notAManagedStore(path: path)
        }
        guard hash != model.versionHash, let json else {
            return .open(uuid: uuid, format: format, source: model, migration: nil, recordsModel: json != nil)
        }
        let source = try LightweightMigration.recordedModel(json, hash: hash)
        // The plan reads the data as it is stored. Stores that record their model are of
        // format 5 or later, whose tables and columns the reads rely on (format 6 only added
        // a table of its own, which the plan does not read).
        let migration = try LightweightMigration(from: source, to: model, data: SQLiteMigrationData(connection: connection))
        guard migration.refusals.isEmpty else { throw .migrationNotInferable(migration.refusals) }
        return .open(uuid: uuid, format: format, source: source, migration: migration, recordsModel: true)
    }

    /// Creates, checks, upgrades or migrates the store on the writer's `connection`, in one
    /// transaction: all of it or none. Returns the store's UUID and the steps it ran.
    static func prepare(_ connection: SQLiteConnection, model: ManagedObjectModel, path: String,
                        infersMigration: Bool) throws(StoreError) -> (UUID, MigrationPlan) {
        do {
            return try connection.inTransaction { () throws -> (UUID, MigrationPlan) in
                let decision = try decide(connection, model: model, path: path, infersMigration: infersMigration)
                guard case let .open(uuid, format, source, migration, recordsModel) = decision else {
                    return (try create(connection, model: model), decision.plan)
                }
                // The format is upgraded as the store's own model describes it, then migrated.
                try StoreFormatMigration.upgrade(connection, model: source, from: format)
                if let migration {
                    try SchemaChangeRunner(connection: connection).run(migration.changes)
                    try StoreMetadata.record(model, connection)
                } else if !recordsModel {
                    // A store of an earlier version learns its model, so a later one can migrate it.
                    try StoreMetadata.set("model_json", model.jsonValue.serialized(), connection)
                }
                return (uuid, decision.plan)
            }
        } catch {
            throw StoreError(wrapping: error)
        }
    }

    private static func create(_ connection: SQLiteConnection, model: ManagedObjectModel) throws(StoreError) -> UUID {
        for statement in StoreSchema.createStatements(for: model) { try connection.execute(statement) }
        let uuid = UUID()
        try StoreMetadata.set("store_uuid", uuid.uuidString, connection)
        try StoreMetadata.set("format", StoreFormatMigration.currentFormat, connection)
        try StoreMetadata.record(model, connection)
        return uuid
    }
}
