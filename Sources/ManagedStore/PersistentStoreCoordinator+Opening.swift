import ManagedStoreCore
import ManagedStorePostgreSQL
import ManagedStoreSQLite

extension PersistentStoreCoordinator {
    /// Opens (or creates) the store `store` describes: an SQLite file, an SQLite database in
    /// memory, or a PostgreSQL database (`postgres://`). A store made from another model is migrated to this one when the changes can be
    /// inferred (`StoreDescription.shouldInferMappingModelAutomatically`, on by default), in the
    /// transaction that opens it; otherwise it is refused, unchanged:
    /// `StoreError.migrationNotInferable` lists every reason.
    public convenience init(model: ManagedObjectModel, store: StoreDescription) throws(StoreError) {
        switch store.location {
        case .postgres:
            self.init(model: model, store: try PostgreSQLStore(model: model, description: store))
        case .file, .inMemory:
            self.init(model: model, store: try SQLiteStore(model: model, description: store))
        }
    }
}

extension PersistentContainer {
    /// A container over the store `store` describes, opened (or created) for `model`.
    public convenience init(model: ManagedObjectModel, store: StoreDescription) throws(StoreError) {
        self.init(coordinator: try PersistentStoreCoordinator(model: model, store: store))
    }
}
