import ManagedStoreTestSupport
import Testing

extension Trait where Self == ConditionTrait {
    /// For a suite whose servers are on SQLite whatever the run (a store file, `:memory:`, a
    /// server process given a path): the PostgreSQL run (`make test-postgres-store`) would only
    /// repeat the SQLite run's work, so it skips the suite. A suite that starts serving an
    /// in-memory harness (a PostgreSQL schema on that run) must drop this trait.
    static var sqliteWhateverTheRun: Self {
        .disabled(if: PostgresTestDatabase.isActive, "its servers are on SQLite whatever the run: the SQLite run covers it")
    }
}
