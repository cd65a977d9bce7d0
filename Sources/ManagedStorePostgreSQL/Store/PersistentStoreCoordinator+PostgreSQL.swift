import ManagedStoreCore

extension PersistentStoreCoordinator {
    /// What opening the PostgreSQL store at `uri` with `model` would migrate, read in a
    /// read-only transaction: the steps (none when the store matches the model). Throws
    /// `StoreError.migrationNotInferable` with every reason when it cannot be migrated.
    public static func migrationPlan(for model: ManagedObjectModel, postgres uri: String) throws(StoreError) -> MigrationPlan {
        let location = PostgresLocation(uri)
        return try PGStoreOpening(connection: try PGConnection(location), schema: PGSchema(model: model), location: location).plan()
    }

    /// The model the PostgreSQL store at `uri` was made from (or last migrated to), as it
    /// records it: opening the store with it changes nothing.
    public static func recordedModel(postgres uri: String) throws(StoreError) -> ManagedObjectModel {
        let location = PostgresLocation(uri)
        return try PGStoreOpening.recordedModel(try PGConnection(location), location: location)
    }
}
