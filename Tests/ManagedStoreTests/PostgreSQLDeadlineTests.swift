import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStorePostgreSQL

/// A fetch's timeout on PostgreSQL stops its statement in PostgreSQL (`statement_timeout`), as
/// the SQLite store stops its own: the request's answer is the timeout, at the deadline, not
/// after the statement has run its course. Runs in the PostgreSQL run only.
@Suite("PostgreSQL fetch deadlines")
struct PostgreSQLDeadlineTests {
    @Test("a count past its timeout is stopped by PostgreSQL, long before the statement would end; the next fetch runs without the limit",
          .enabled(if: TestStore.isPostgres))
    func statementStoppedAtDeadline() throws {
        let container = try Fixtures.container()
        guard case .postgres(let uri) = container.coordinator.storeDescription.location else { return }
        let connection = try PGConnection(PostgresLocation(uri))
        // Tasks with long titles, written by PostgreSQL itself (saves would take a while).
        try connection.execute(#"INSERT INTO "Task" (_pk, _version, title) SELECT g, 1, repeat('x', 400) || g FROM generate_series(1, 300000) g"#)
        try connection.execute("UPDATE _managedstore_keys SET last = 300000 WHERE entity = 'Task'")
        let context = container.newBackgroundContext()
        // LIKE with two wildcards, in SQL: PostgreSQL reads every title to the end.
        let request = FetchRequest(entityName: "Task", predicate: try ObjectPredicate(format: "title LIKE '*y*z*'"))

        let started = Date()
        #expect(try context.performAndWait { try context.count(for: request) } == 0)
        let whole = Date().timeIntervalSince(started)
        try #require(whole > 0.05, "the statement is too quick here (\(whole) s) to tell a stopped one from a finished one")

        var limited = request
        limited.timeout = .milliseconds(1)
        let stoppedAt = Date()
        #expect(throws: FetchError.timedOut(.milliseconds(1))) { try context.performAndWait { try context.count(for: limited) } }
        let stopped = Date().timeIntervalSince(stoppedAt)
        #expect(stopped < whole / 3, "the timed-out count took \(stopped) s, the whole statement \(whole) s")

        // The limit was the fetch's own: the same read context counts again in full.
        #expect(try context.performAndWait { try context.count(for: FetchRequest(entityName: "Task")) } == 300_000)
        #expect(try context.performAndWait { try context.count(for: request) } == 0)
    }
}
