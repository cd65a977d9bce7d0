import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStorePostgreSQL
import ManagedStoreTestSupport

/// A group commit on PostgreSQL: many saves in one transaction, each in a savepoint, their keys
/// and tokens counted in memory once the counters' rows are locked (`PGGroupCounters`), their
/// rows and history sent in one round trip a save (`PGConnection.queue`), or, for saves whose
/// statements cannot fail but for a fault of the store, with a later save's or the COMMIT.
/// A save that fails must fail alone and take back the keys and the token it took, as
/// PostgreSQL takes back its counters' UPDATEs; a deferred statement that fails all the same
/// rolls back the whole transaction, never just a part of what its saves were told they wrote.
/// Runs in the PostgreSQL run only.
@Suite("PostgreSQL group commits")
struct PostgreSQLGroupCommitTests {
    /// Inserts objects of `entity` with `key` set to each of `values` and saves; the error, or nil.
    static func insert(_ entity: String, _ key: String, _ values: [String], in context: ManagedObjectContext) -> String? {
        for value in values {
            context.insertNewObject(forEntityName: entity).setValue(value, forKey: key)
        }
        do throws(SaveError) {
            try context.save()
            return nil
        } catch {
            context.rollback()
            return "\(error)"
        }
    }

    static func numbers(_ connection: PGConnection, _ sql: String) throws -> [Int64] {
        let result = try connection.execute(sql)
        return (0..<result.rowCount).compactMap { result.int64($0, 0) }
    }

    static func store(_ container: PersistentContainer) throws -> PGConnection {
        guard case .postgres(let uri) = container.coordinator.storeDescription.location else { throw StoreError.cannotOpen(path: "", message: "not PostgreSQL") }
        return try PGConnection(PostgresLocation(uri))
    }

    @Test("a save whose row PostgreSQL refuses fails alone, in its group, and the keys and token it took are given to the next save",
          .enabled(if: TestStore.isPostgres))
    func failingSaveInGroup() throws {
        let container = try Fixtures.container()
        let connection = try Self.store(container)
        let context = container.newBackgroundContext()
        // Tag 1, token 1. Tags have a unique label: their saves send their statements at once.
        #expect(context.performAndWait { Self.insert("Tag", "label", ["a"], in: context) } == nil)
        // A row the key counter does not know of: the save given key 4 meets it in the INSERT,
        // after its checks, its keys and its history.
        try connection.execute(#"INSERT INTO "Tag" (_pk, _version, label) VALUES (4, 1, 'planted')"#)

        let errors = try context.performAndWait { () throws -> [String?] in
            try container.coordinator.performGroupCommit(in: context) { () -> [String?] in
                [Self.insert("Tag", "label", ["b"], in: context),        // key 2, token 2: the counters' rows locked
                 Self.insert("Tag", "label", ["c", "d"], in: context),   // keys 3 and 4, token 3: refused at 4
                 Self.insert("Tag", "label", ["e"], in: context)]        // key 3 and token 3 again
            }
        }
        #expect(errors[0] == nil && errors[2] == nil)
        #expect(errors[1] != nil, "the save meeting the planted row failed")
        #expect(try Self.numbers(connection, #"SELECT _pk FROM "Tag" ORDER BY _pk"#) == [1, 2, 3, 4])
        #expect(try connection.execute(#"SELECT label FROM "Tag" WHERE _pk = 3"#).text(0, 0) == "e")
        #expect(try Self.numbers(connection, "SELECT token FROM _managedstore_history_transaction ORDER BY token") == [1, 2, 3])
        #expect(try Self.numbers(connection, "SELECT pk FROM _managedstore_history_change WHERE token = 3") == [3])
        // The rows were written once, with the COMMIT, to the last ones given.
        #expect(try Self.numbers(connection, "SELECT last FROM _managedstore_keys WHERE entity = 'Tag'") == [3])
        #expect(try Self.numbers(connection, "SELECT last_token FROM _managedstore_store") == [3])

        // A group whose first save fails after its UPDATEs locked the rows: they are rolled
        // back with its savepoint (and unlocked), so the next save reads them again.
        let second = try context.performAndWait { () throws -> [String?] in
            try container.coordinator.performGroupCommit(in: context) { () -> [String?] in
                [Self.insert("Tag", "label", ["f"], in: context),        // key 4: refused
                 Self.insert("Project", "name", ["p"], in: context)]
            }
        }
        #expect(second[0] != nil && second[1] == nil)
        #expect(try Self.numbers(connection, "SELECT token FROM _managedstore_history_transaction ORDER BY token") == [1, 2, 3, 4])
        #expect(try Self.numbers(connection, "SELECT last FROM _managedstore_keys WHERE entity = 'Tag'") == [3])
        #expect(try Self.numbers(connection, "SELECT last_token FROM _managedstore_store") == [4])

        try connection.execute(#"DELETE FROM "Tag" WHERE _pk = 4"#)
        #expect(context.performAndWait { Self.insert("Tag", "label", ["g"], in: context) } == nil)
        #expect(try connection.execute(#"SELECT label FROM "Tag" WHERE _pk = 4"#).text(0, 0) == "g")
        #expect(try container.coordinator.checkIntegrity() == [])
    }

    @Test("saves of new objects send their rows with the COMMIT; one refused there fails the COMMIT, and nothing of the group is stored",
          .enabled(if: TestStore.isPostgres))
    func deferredRowRefusedAtCommit() throws {
        let container = try Fixtures.container()
        let connection = try Self.store(container)
        let context = container.newBackgroundContext()
        #expect(context.performAndWait { Self.insert("Task", "title", ["a"], in: context) } == nil)
        try connection.execute(#"INSERT INTO "Task" (_pk, _version, title) VALUES (3, 1, 'planted')"#)

        var saved: [String?] = []
        #expect(throws: StoreError.self) {
            try context.performAndWait { () throws in
                try container.coordinator.performGroupCommit(in: context) { () in
                    // Tasks have no unique attribute: each save's rows wait, and each returns.
                    saved = [Self.insert("Task", "title", ["b"], in: context),    // key 2
                             Self.insert("Task", "title", ["c"], in: context),    // key 3: refused, at the COMMIT
                             Self.insert("Task", "title", ["d"], in: context)]    // key 4
                }
            }
        }
        #expect(saved == [nil, nil, nil], "the saves returned before their rows were sent")
        #expect(try Self.numbers(connection, #"SELECT _pk FROM "Task" ORDER BY _pk"#) == [1, 3])
        #expect(try Self.numbers(connection, "SELECT token FROM _managedstore_history_transaction ORDER BY token") == [1])
        #expect(try Self.numbers(connection, "SELECT last FROM _managedstore_keys WHERE entity = 'Task'") == [1])
        #expect(try Self.numbers(connection, "SELECT last_token FROM _managedstore_store") == [1])
    }

    @Test("a deferred row refused when a later save's statement is sent with it rolls back the whole transaction; the group begins again",
          .enabled(if: TestStore.isPostgres))
    func deferredRowRefusedWithLaterSave() throws {
        let container = try Fixtures.container()
        let connection = try Self.store(container)
        let context = container.newBackgroundContext()
        #expect(context.performAndWait { Self.insert("Task", "title", ["a"], in: context) } == nil)
        try connection.execute(#"INSERT INTO "Task" (_pk, _version, title) VALUES (3, 1, 'planted')"#)

        let outcome = try context.performAndWait { () throws -> [String] in
            try container.coordinator.performGroupCommit(in: context) { (group: GroupCommit) -> [String] in
                let first = Self.insert("Task", "title", ["b", "c"], in: context) // keys 2 and 3, wait: refused later
                // A tag's uniqueness is read at once, with the task's row before it.
                let tag = Self.insert("Tag", "label", ["t"], in: context)
                let intact = group.isIntact
                // What a write queue does: the saves of the transaction are undone, the rest go on in a new one.
                context.reset()
                try group.restart()
                let third = Self.insert("Task", "title", ["d"], in: context)      // key 2 again
                return ["\(first == nil)", "\(tag != nil)", "\(intact)", "\(third == nil)"]
            }
        }
        #expect(outcome == ["true", "true", "false", "true"], "b returned, t failed, the transaction was rolled back, d saved in a new one")
        #expect(try Self.numbers(connection, #"SELECT _pk FROM "Task" ORDER BY _pk"#) == [1, 2, 3])
        #expect(try connection.execute(#"SELECT title FROM "Task" WHERE _pk = 2"#).text(0, 0) == "d")
        #expect(try Self.numbers(connection, #"SELECT count(*) FROM "Tag""#) == [0])
        #expect(try Self.numbers(connection, "SELECT token FROM _managedstore_history_transaction ORDER BY token") == [1, 2])
    }

    @Test("random saves in one group commit store the same rows and history whether each save sends its statements when it ends or leaves them waiting (twin of the plain path)",
          .enabled(if: TestStore.isPostgres), arguments: [UInt64(3), 4])
    func deferredSavesMatchPlainPath(seed: UInt64) throws {
        func stored(defers: Bool) throws -> [String] {
            let container = try Fixtures.container()
            try #require(container.coordinator.store as? PostgreSQLStore).defersSaveStatements.withLock { $0 = defers }
            let context = container.newBackgroundContext()
            try context.performAndWait { () throws in
                try container.coordinator.performGroupCommit(in: context) { () throws in
                    try HistoryRunTests.randomSaves(in: context, seed: seed, saves: 40)
                }
            }
            guard case .postgres(let uri) = container.coordinator.storeDescription.location else { return [] }
            // Every table's rows; the store's identifier and the saves' times are each store's own.
            return try PostgresTestDatabase.contents(uri).map {
                $0.replacing(/"timestamp":[^,}]+/, with: "").replacing(/"identifier":"[^"]+"/, with: "")
            }
        }
        let deferred = try stored(defers: true)
        let plain = try stored(defers: false)
        #expect(deferred.filter { $0.contains("_managedstore_history_change") }.count > 40, "the saves recorded their changes")
        #expect(deferred.count == plain.count)
        let differ = zip(deferred, plain).first { $0.0 != $0.1 }
        #expect(differ == nil, "deferred: \(differ?.0 ?? "-")\nplain: \(differ?.1 ?? "-")")
    }
}
