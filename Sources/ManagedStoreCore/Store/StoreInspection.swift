/// What a look at a store file found, without writing anything: SQLite's integrity check,
/// whether it matches a model (or what migrating it would do), and its persistent history.
public struct StoreInspection: Sendable {
    /// The lines `PRAGMA integrity_check` answered: `["ok"]` for a sound file.
    public let integrityCheck: [String]
    /// The name of the model the store was made with, as it records it.
    public let storeModelName: String
    /// What opening the store with the model would change (empty: it matches), or why it
    /// could not be opened with it (`StoreError.migrationNotInferable` and the others).
    public let migration: Result<MigrationPlan, StoreError>
    public let history: HistoryStatistics

    public var isIntact: Bool { integrityCheck == ["ok"] }

    package init(integrityCheck: [String], storeModelName: String, migration: Result<MigrationPlan, StoreError>, history: HistoryStatistics) {
        self.integrityCheck = integrityCheck
        self.storeModelName = storeModelName
        self.migration = migration
        self.history = history
    }
}

/// The size and reach of a store's persistent history.
public struct HistoryStatistics: Sendable, Hashable {
    /// Recorded saves still retained.
    public let transactions: Int
    /// Object changes those saves recorded.
    public let changes: Int
    /// The oldest and newest retained saves' tokens; nil when none is retained.
    public let oldestToken: PersistentHistoryToken?
    public let newestToken: PersistentHistoryToken?
    /// The newest token pruning deleted; nil when the history was never pruned.
    public let prunedThrough: PersistentHistoryToken?

    package init(transactions: Int, changes: Int, oldestToken: PersistentHistoryToken?, newestToken: PersistentHistoryToken?, prunedThrough: PersistentHistoryToken?) {
        self.transactions = transactions
        self.changes = changes
        self.oldestToken = oldestToken
        self.newestToken = newestToken
        self.prunedThrough = prunedThrough
    }
}
