import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStorePostgreSQL
import ManagedStoreTestSupport

/// The PostgreSQL store records a run of inserted objects of one entity, keyed one after
/// another, as one history row (`through`), as the SQLite store does. Every reader must answer
/// as it does when each object has a row of its own: this twin writes random saves, asks every
/// question the history answers, spreads the runs into one row an object (in the order of the
/// changes), and asks again. Runs in the PostgreSQL run only (`make test-postgres-store`).
@Suite("PostgreSQL history runs of inserts")
struct PostgreSQLHistoryRunTests {
    typealias Answers = HistoryRunTests.Answers

    static func answers(_ container: PersistentContainer, largestKeys: [String: Int64]) throws -> Answers {
        try container.coordinator.store.read(throughWriter: false) { session in
            var answers = Answers()
            answers.transactions = try session.historyTransactions(after: PersistentHistoryToken(rawValue: 0), limit: 100_000, entities: nil)
            for entity in container.model.schema {
                for pk in Int64(1)...max(1, (largestKeys[entity.name] ?? 0) + 1) {
                    for version in Int64(1)...6 {
                        answers.chains["\(entity.name)/\(pk)@\(version)"] = try session.historyChanges(ofObject: entity, key: pk, after: version)
                    }
                }
            }
            return answers
        }
    }

    static func uri(_ container: PersistentContainer) throws -> String {
        guard case .postgres(let uri) = container.coordinator.storeDescription.location else { throw StoreError.cannotOpen(path: "", message: "not PostgreSQL") }
        return uri
    }

    static func count(_ connection: PGConnection, _ sql: String) throws -> Int64 {
        try connection.execute(sql).int64(0, 0) ?? -1
    }

    @Test("random saves: the change list and every object's chain read the same from runs of inserts as from one row an object",
          .enabled(if: TestStore.isPostgres), arguments: [UInt64(7), 8])
    func runsReadAsRows(seed: UInt64) throws {
        let container = try Fixtures.container()
        try HistoryRunTests.randomSaves(container, seed: seed, saves: 60)
        let connection = try PGConnection(PostgresLocation(try Self.uri(container)))
        let runs = try Self.count(connection, "SELECT count(*) FROM _managedstore_history_change WHERE through IS NOT NULL")
        let rows = try Self.count(connection, "SELECT count(*) FROM _managedstore_history_change")
        #expect(runs > 10, "the saves made runs of inserts (\(runs) of \(rows) rows)")
        var largest: [String: Int64] = [:]
        let keys = try connection.execute("SELECT entity, max(coalesce(through, pk)) FROM _managedstore_history_change GROUP BY entity")
        for row in 0..<keys.rowCount { largest[keys.text(row, 0) ?? ""] = keys.int64(row, 1) }
        let fromRuns = try Self.answers(container, largestKeys: largest)

        // The twin: each run spread into one row an object, in the place of the run among the
        // changes (`seq` numbers them again), as the store wrote them before runs.
        try connection.execute("""
            BEGIN;
            CREATE TEMP TABLE spread ON COMMIT DROP AS
                SELECT row_number() OVER (ORDER BY h.seq, k.pk) AS seq, h.token, h.entity, k.pk, h.type, h.version, h.properties, h.previous
                FROM _managedstore_history_change AS h, generate_series(h.pk, coalesce(h.through, h.pk)) AS k(pk);
            DELETE FROM _managedstore_history_change;
            INSERT INTO _managedstore_history_change (seq, token, entity, pk, type, version, properties, previous)
                SELECT seq, token, entity, pk, type, version, properties, previous FROM spread;
            COMMIT
            """)
        #expect(try Self.count(connection, "SELECT count(*) FROM _managedstore_history_change WHERE through IS NOT NULL") == 0)
        #expect(try Self.count(connection, "SELECT count(*) FROM _managedstore_history_change") > rows)
        let fromRows = try Self.answers(container, largestKeys: largest)

        HistoryRunTests.expectSameAnswers(fromRuns, fromRows, transactions: 61)
    }

    @Test("a store made before runs gets them when it is opened: the same tables as a new store, its history read as before",
          .enabled(if: TestStore.isPostgres))
    func storeFromBeforeRunsIsUpgraded() throws {
        let fresh = try Fixtures.container()
        let freshSchema = try PostgresTestDatabase.schema(try Self.uri(fresh))

        let uri = try PostgresTestDatabase.freshURI()
        let description = StoreDescription(location: .postgres(uri))
        do {
            let old = try PersistentContainer(model: Fixtures.tracker, store: description)
            // One task: no run to lose when the column goes.
            try Fixtures.seedProject(old.viewContext, name: "before", taskTitles: ["a"])
        }
        // What an earlier version made: no runs, one row a change.
        let connection = try PGConnection(PostgresLocation(uri))
        try connection.execute("ALTER TABLE _managedstore_history_change DROP COLUMN through")
        let oldSchema = try PostgresTestDatabase.schema(uri)
        #expect(oldSchema != freshSchema)

        // Opened to be looked at (as `managedstore check` opens it), it is left as it is.
        var lookedAt = description
        lookedAt.createsStoreIfMissing = false
        _ = try PersistentContainer(model: Fixtures.tracker, store: lookedAt)
        #expect(try PostgresTestDatabase.schema(uri) == oldSchema)

        let reopened = try PersistentContainer(model: Fixtures.tracker, store: description)
        #expect(try PostgresTestDatabase.schema(uri) == freshSchema)
        try Fixtures.seedProject(reopened.viewContext, name: "after", taskTitles: ["c", "d", "e"])
        #expect(try Self.count(connection, "SELECT count(*) FROM _managedstore_history_change WHERE through IS NOT NULL") == 1, "the three new tasks are one run")
        let saves = try reopened.coordinator.store.read(throughWriter: false) { session in
            try session.historyTransactions(after: PersistentHistoryToken(rawValue: 0), limit: 10, entities: ["Task"])
        }
        #expect(saves.map { $0.changes.map { $0.objectID.primaryKey } } == [[1], [2, 3, 4]])
        #expect(saves.allSatisfy { $0.changes.allSatisfy { $0.changeType == .insert && $0.version == 1 } })
    }
}
