import CSQLite
import Foundation
import ManagedStoreCore

// Looking at a store file without opening it for use: what a migration would do (a dry run),
// and a check of the file. Both read through a read-only connection, so they never write to
// the store (SQLite may still make the empty -wal and -shm files a reader of a WAL database
// needs beside it, as any reader does).

extension PersistentStoreCoordinator {
    /// What opening the store at `path` with `model` would change, without changing anything
    /// (a dry run of the lightweight migration): empty when it matches. Throws what opening it
    /// would throw: `StoreError.migrationNotInferable` with every reason when the migration
    /// cannot be inferred, `modelMismatch` when the store does not record its model, and
    /// `cannotOpen` when there is no store file.
    public static func migrationPlan(for model: ManagedObjectModel, store path: String) throws(StoreError) -> MigrationPlan {
        let connection = try openReadOnly(path)
        do {
            return try connection.readTransaction {
                let decision = try StoreOpening.decide(connection, model: model, path: path, infersMigration: true)
                // An empty database would become a new store: there is none to migrate.
                if case .create = decision { throw StoreError.notAManagedStore(path: path) }
                return decision.plan
            }
        } catch {
            throw StoreError(wrapping: error)
        }
    }

    /// Checks the store file at `path` against `model` without writing anything: SQLite's
    /// integrity check, what opening it with the model would change or why it could not be
    /// opened with it, and the size of its persistent history. Throws only when the file
    /// cannot be read as a store at all.
    public static func inspectStore(at path: String, model: ManagedObjectModel) throws(StoreError) -> StoreInspection {
        let connection = try openReadOnly(path)
        do {
            return try connection.readTransaction {
                var integrity: [String] = []
                try connection.withStatement("PRAGMA integrity_check") { s throws(StoreError) in
                    while try s.step() { integrity.append(s.text(0)) }
                }
                guard try connection.scalarInt("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_metadata'") != nil else {
                    throw StoreError.notAManagedStore(path: path)
                }
                let migration: Result<MigrationPlan, StoreError>
                do throws(StoreError) {
                    migration = .success(try StoreOpening.decide(connection, model: model, path: path, infersMigration: true).plan)
                } catch {
                    migration = .failure(error)
                }
                return StoreInspection(integrityCheck: integrity, storeModelName: try StoreMetadata.value("model_name", connection) ?? "?",
                                       migration: migration, history: try historyStatistics(connection))
            }
        } catch {
            throw StoreError(wrapping: error)
        }
    }

    private static func historyStatistics(_ connection: SQLiteConnection) throws(StoreError) -> HistoryStatistics {
        let pruned = try HistoryReader.prunedThrough(connection)
        let token = { (value: Int64?) in value.map(PersistentHistoryToken.init(rawValue:)) }
        // The newest save's row outlives pruning (StoreSchema.historyStatements): only tokens
        // after the pruned ones count as retained.
        let retained = [AttributeValue.integer(pruned)]
        return HistoryStatistics(
            transactions: Int(try connection.scalarInt(#"SELECT count(*) FROM "_history_transaction" WHERE "token" > ?"#, retained) ?? 0),
            // A run of inserts (format 7) counts one change a key.
            changes: Int(try connection.scalarInt(#"SELECT coalesce(sum(coalesce("through" - "pk" + 1, 1)), 0) FROM "_history_change""#) ?? 0),
            oldestToken: token(try connection.scalarInt(#"SELECT min("token") FROM "_history_transaction" WHERE "token" > ?"#, retained)),
            newestToken: token(try connection.scalarInt(#"SELECT max("token") FROM "_history_transaction" WHERE "token" > ?"#, retained)),
            prunedThrough: pruned > 0 ? PersistentHistoryToken(rawValue: pruned) : nil)
    }

    /// A read-only connection to an existing store file (never one made on the spot).
    private static func openReadOnly(_ path: String) throws(StoreError) -> SQLiteConnection {
        guard path != ":memory:" else { throw .cannotOpen(path: path, message: "an in-memory store has no file to look at") }
        guard FileManager.default.fileExists(atPath: path) else { throw .cannotOpen(path: path, message: "no such file") }
        return try SQLiteConnection(path: path, flags: SQLITE_OPEN_READONLY)
    }
}
