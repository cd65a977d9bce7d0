// `import ManagedStore`: the library whole. The core (models, contexts, fetch requests, merge
// policies, the store protocol), the SQLite store and the PostgreSQL store are targets of their own, so that the
// compiler keeps SQL out of the core; this module puts them back together, and opens a
// store from its description (PersistentStoreCoordinator+Opening.swift).
@_exported import ManagedStoreCore
@_exported import ManagedStorePostgreSQL
@_exported import ManagedStoreSQLite
