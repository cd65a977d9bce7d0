import Foundation
import ManagedStoreCore

/// Opening a PostgreSQL store: creating its tables in a database that has none, checking that
/// the ones there were made from the model, or migrating them to it (lightweight migration,
/// the plan the SQLite store makes, carried out by `PGSchemaChangeRunner`).
///
/// All of it under the opening lock (`pg_advisory_lock`): one server at a time creates or
/// migrates, and another opening the same database meanwhile waits (its server answers
/// `/v1/readyz` 503 while it does), then finds the store made or migrated. Creating or
/// migrating is one transaction: all of it or none.
struct PGStoreOpening {
    let connection: PGConnection
    /// The tables of the model the store is opened with (the destination of a migration).
    let schema: PGSchema
    let location: PostgresLocation

    /// The store's identifier, and the migration it ran (empty when none was needed).
    func open(creating: Bool, infersMigration: Bool) throws(StoreError) -> (UUID, MigrationPlan) {
        try connection.execute("SELECT pg_advisory_lock(\(PostgreSQLStore.openingLockKey))")
        defer { _ = try? connection.execute("SELECT pg_advisory_unlock(\(PostgreSQLStore.openingLockKey))") }
        guard try Self.hasStore(connection) else {
            guard creating else { throw .cannotOpen(path: location.redacted, message: "the database holds no ManagedStore store") }
            return (try inTransaction { () throws(StoreError) in try create() }, MigrationPlan(steps: []))
        }
        // Not when opened to be looked at (`check`, `migrate`: creating off), which change
        // nothing of the store's own tables; the first server to open it upgrades them.
        if creating { try upgradeStoreTables() }
        let stored = try Self.storedModel(connection, location: location)
        guard stored.hash != schema.model.versionHash else { return (stored.identifier, MigrationPlan(steps: [])) }
        guard infersMigration else {
            throw .modelMismatch(storeModel: stored.name, storeHash: stored.hash, modelHash: schema.model.versionHash, reason: .migrationOff)
        }
        let source = try LightweightMigration.recordedModel(stored.json, hash: stored.hash)
        let plan = try inTransaction { () throws(StoreError) -> MigrationPlan in
            // The plan reads the data inside the transaction that changes it.
            let migration = try LightweightMigration(from: source, to: schema.model, data: PGMigrationData(connection: connection))
            guard migration.refusals.isEmpty else { throw .migrationNotInferable(migration.refusals) }
            try PGSchemaChangeRunner(connection: connection, schema: schema).run(migration.changes)
            try recordModel()
            return migration.plan
        }
        return (stored.identifier, plan)
    }

    /// What opening the store with the model would change, read without changing anything
    /// (`managedstore migrate --dry-run`): the steps, or the reasons it cannot be migrated.
    func plan() throws(StoreError) -> MigrationPlan {
        guard try Self.hasStore(connection) else { throw .notAManagedStore(path: location.redacted) }
        let stored = try Self.storedModel(connection, location: location)
        guard stored.hash != schema.model.versionHash else { return MigrationPlan(steps: []) }
        let source = try LightweightMigration.recordedModel(stored.json, hash: stored.hash)
        try connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        defer { _ = try? connection.execute("ROLLBACK") }
        let migration = try LightweightMigration(from: source, to: schema.model, data: PGMigrationData(connection: connection))
        guard migration.refusals.isEmpty else { throw .migrationNotInferable(migration.refusals) }
        return migration.plan
    }

    /// The model the store on `connection` records (it was made from, or last migrated to).
    static func recordedModel(_ connection: PGConnection, location: PostgresLocation) throws(StoreError) -> ManagedObjectModel {
        guard try hasStore(connection) else { throw .notAManagedStore(path: location.redacted) }
        let stored = try storedModel(connection, location: location)
        return try LightweightMigration.recordedModel(stored.json, hash: stored.hash)
    }

    /// Brings the store's own tables of a store made by an earlier version up to this one's
    /// (the history's runs of inserts). Looked at first, so that opening a current store takes
    /// no table lock; changed in one transaction, under the opening lock.
    private func upgradeStoreTables() throws(StoreError) {
        let hasRuns = try connection.execute("""
            SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = '_managedstore_history_change'::regclass AND attname = 'through' AND NOT attisdropped)
            """).text(0, 0) == "t"
        guard !hasRuns else { return }
        try inTransaction { () throws(StoreError) in
            try connection.execute("ALTER TABLE _managedstore_history_change ADD COLUMN through bigint")
            try connection.execute(PGSchema.historyRunsIndexSQL)
        }
    }

    private static func hasStore(_ connection: PGConnection) throws(StoreError) -> Bool {
        try connection.execute("SELECT to_regclass('_managedstore_store') IS NOT NULL").text(0, 0) == "t"
    }

    private static func storedModel(_ connection: PGConnection, location: PostgresLocation) throws(StoreError) -> (identifier: UUID, name: String, hash: String, json: String) {
        let row = try connection.execute("SELECT identifier, model_name, model_hash, model_json FROM _managedstore_store")
        guard row.rowCount == 1, let identifier = row.text(0, 0).flatMap(UUID.init(uuidString:)) else {
            throw .notAManagedStore(path: location.redacted)
        }
        return (identifier, row.text(0, 1) ?? "", row.text(0, 2) ?? "", row.text(0, 3) ?? "")
    }

    private func create() throws(StoreError) -> UUID {
        let identifier = UUID()
        try connection.execute(schema.creationSQL)
        try connection.execute("INSERT INTO _managedstore_store (id, identifier, model_name, model_hash, model_json) VALUES (1, $1, '', '', '')",
                               [identifier.uuidString])
        try recordModel()
        return identifier
    }

    /// Records the model the tables are now made from, itself too: what a migration starts from.
    private func recordModel() throws(StoreError) {
        let model = schema.model
        try connection.execute("UPDATE _managedstore_store SET model_name = $1, model_hash = $2, model_json = $3",
                               [model.name, model.versionHash, model.jsonValue.serialized()])
    }

    private func inTransaction<T>(_ body: () throws(StoreError) -> T) throws(StoreError) -> T {
        try connection.execute("BEGIN")
        do {
            let result = try body()
            try connection.execute("COMMIT")
            return result
        } catch {
            _ = try? connection.execute("ROLLBACK")
            throw error
        }
    }
}
