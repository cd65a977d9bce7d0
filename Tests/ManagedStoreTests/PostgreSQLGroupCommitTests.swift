import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStorePostgreSQL
import ManagedStoreTestSupport

/// A group commit on PostgreSQL: many saves in one transaction, each in a savepoint, their
/// rows and history sent in one round trip a save (`PGConnection.queue`), their keys and tokens
/// counted in memory once the counters' rows are locked (`PGGroupCounters`). A save that fails
/// must fail alone, as its own save, and take back the keys and the token it took, as
/// PostgreSQL takes back its counters' UPDATEs. Runs in the PostgreSQL run only.
@Suite("PostgreSQL group commits")
struct PostgreSQLGroupCommitTests {
    /// Inserts tasks titled `titles` and saves; the error, or nil.
    static func insertTasks(_ titles: [String], in context: ManagedObjectContext) -> String? {
        for title in titles {
            context.insertNewObject(forEntityName: "Task").setValue(title, forKey: "title")
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

    @Test("a save whose row PostgreSQL refuses fails alone, in its group, and the keys and token it took are given to the next save",
          .enabled(if: TestStore.isPostgres))
    func failingSaveInGroup() throws {
        let container = try Fixtures.container()
        guard case .postgres(let uri) = container.coordinator.storeDescription.location else { return }
        let connection = try PGConnection(PostgresLocation(uri))
        let context = container.newBackgroundContext()
        // Task 1, token 1.
        #expect(context.performAndWait { Self.insertTasks(["a"], in: context) } == nil)
        // A row the key counter does not know of: the save given key 4 meets it in the INSERT,
        // after its checks, its keys and its history.
        try connection.execute(#"INSERT INTO "Task" (_pk, _version, title) VALUES (4, 1, 'planted')"#)

        let errors = try context.performAndWait { () throws -> [String?] in
            try container.coordinator.performGroupCommit(in: context) { () -> [String?] in
                [Self.insertTasks(["b"], in: context),          // key 2, token 2: the counters' rows locked
                 Self.insertTasks(["c", "d"], in: context),     // keys 3 and 4, token 3: refused at 4
                 Self.insertTasks(["e"], in: context)]          // key 3 and token 3 again
            }
        }
        #expect(errors[0] == nil && errors[2] == nil)
        #expect(errors[1] != nil, "the save meeting the planted row failed")
        #expect(try Self.numbers(connection, #"SELECT _pk FROM "Task" ORDER BY _pk"#) == [1, 2, 3, 4])
        #expect(try connection.execute(#"SELECT title FROM "Task" WHERE _pk = 3"#).text(0, 0) == "e")
        #expect(try Self.numbers(connection, "SELECT token FROM _managedstore_history_transaction ORDER BY token") == [1, 2, 3])
        #expect(try Self.numbers(connection, "SELECT pk FROM _managedstore_history_change WHERE token = 3") == [3])
        // The rows were written once, with the COMMIT, to the last ones given.
        #expect(try Self.numbers(connection, "SELECT last FROM _managedstore_keys WHERE entity = 'Task'") == [3])
        #expect(try Self.numbers(connection, "SELECT last_token FROM _managedstore_store") == [3])

        // A group whose first save fails after its UPDATEs locked the rows: they are rolled
        // back with its savepoint (and unlocked), so the next save reads them again.
        let second = try context.performAndWait { () throws -> [String?] in
            try container.coordinator.performGroupCommit(in: context) { () -> [String?] in
                let failing = Self.insertTasks(["f"], in: context)  // key 4: refused
                context.insertNewObject(forEntityName: "Project").setValue("p", forKey: "name")
                do throws(SaveError) { try context.save() } catch { return [failing, "\(error)"] }
                return [failing, nil]
            }
        }
        #expect(second[0] != nil && second[1] == nil)
        #expect(try Self.numbers(connection, "SELECT token FROM _managedstore_history_transaction ORDER BY token") == [1, 2, 3, 4])
        #expect(try Self.numbers(connection, "SELECT last FROM _managedstore_keys WHERE entity = 'Task'") == [3])
        #expect(try Self.numbers(connection, "SELECT last_token FROM _managedstore_store") == [4])

        try connection.execute(#"DELETE FROM "Task" WHERE _pk = 4"#)
        #expect(context.performAndWait { Self.insertTasks(["g"], in: context) } == nil)
        #expect(try connection.execute(#"SELECT title FROM "Task" WHERE _pk = 4"#).text(0, 0) == "g")
        #expect(try container.coordinator.checkIntegrity() == [])
    }
}
