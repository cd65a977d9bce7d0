import Foundation
import ManagedStoreCore
@testable import ManagedStorePostgreSQL

/// The PostgreSQL database the suites run on when `MANAGEDSTORE_TEST_STORE=postgres`
/// (`MANAGEDSTORE_TEST_POSTGRES` is its URI; `make test-postgres-store` starts a throw-away
/// cluster and sets both). Each store gets a schema of its own in it.
package enum PostgresTestDatabase {
    package static let uri: String? = {
        let environment = ProcessInfo.processInfo.environment
        return environment["MANAGEDSTORE_TEST_STORE"] == "postgres" ? environment["MANAGEDSTORE_TEST_POSTGRES"] : nil
    }()

    package static var isActive: Bool { uri != nil }

    /// The URI of a new, empty schema of the test database.
    package static func freshURI() throws -> String {
        guard let uri else { throw StoreError.cannotOpen(path: "postgres", message: "MANAGEDSTORE_TEST_POSTGRES is not set") }
        let schema = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        try PostgreSQLStore.createSchema(schema, in: uri)
        return uri + (uri.contains("?") ? "&" : "?") + "options=-csearch_path%3D" + schema
    }

    /// `base` with its location a new, empty schema of the test database.
    package static func freshStore(base: StoreDescription) throws -> StoreDescription {
        var description = base
        description.location = .postgres(try freshURI())
        return description
    }

    /// The schema of the store at `uri` as lines: each table's columns with their types, each
    /// index's definition without the name PostgreSQL made up for it, and each uniqueness
    /// constraint with its name (which a unique violation reports).
    package static func schema(_ uri: String) throws -> [String] {
        let connection = try PGConnection(PostgresLocation(uri))
        var lines: [String] = []
        let columns = try connection.execute("""
            SELECT table_name || '.' || column_name || ' ' || data_type || coalesce(' collate ' || collation_name, '') || ' nullable=' || is_nullable
            FROM information_schema.columns WHERE table_schema = current_schema() ORDER BY table_name, column_name
            """)
        for row in 0..<columns.rowCount { lines.append(columns.text(row, 0) ?? "") }
        let indexes = try connection.execute("""
            SELECT regexp_replace(replace(indexdef, current_schema() || '.', ''), 'INDEX \\S+ ON', 'INDEX ON')
            FROM pg_indexes WHERE schemaname = current_schema() ORDER BY 1
            """)
        for row in 0..<indexes.rowCount { lines.append(indexes.text(row, 0) ?? "") }
        let constraints = try connection.execute("""
            SELECT conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid)
            FROM pg_constraint WHERE connamespace = current_schema()::regnamespace AND contype = 'u' ORDER BY 1
            """)
        for row in 0..<constraints.rowCount { lines.append(constraints.text(row, 0) ?? "") }
        return lines
    }

    /// Everything the store at `uri` holds, its schema and every row of every table, to
    /// compare before and after something that must not change it.
    package static func contents(_ uri: String) throws -> [String] {
        let connection = try PGConnection(PostgresLocation(uri))
        let tables = try connection.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1")
        var lines = try schema(uri)
        for row in 0..<tables.rowCount {
            let table = PGValues.quote(tables.text(row, 0) ?? "")
            let rows = try connection.execute("SELECT row_to_json(t)::text FROM \(table) AS t ORDER BY 1")
            for r in 0..<rows.rowCount { lines.append("\(table) \(rows.text(r, 0) ?? "")") }
        }
        return lines
    }

    /// Takes the lock a server holds while it creates or migrates the store in the database
    /// `uri` names, as a server migrating would; `release` lets it go (so does the end of
    /// the returned value's connection).
    package static func holdOpeningLock(_ uri: String) throws -> OpeningLockHold {
        let connection = try PGConnection(PostgresLocation(uri))
        try connection.execute("SELECT pg_advisory_lock(\(PostgreSQLStore.openingLockKey))")
        return OpeningLockHold(connection: connection)
    }

    /// The opening lock, held (`holdOpeningLock`).
    package final class OpeningLockHold {
        private let connection: PGConnection
        init(connection: PGConnection) { self.connection = connection }

        package func release() throws {
            try connection.execute("SELECT pg_advisory_unlock(\(PostgreSQLStore.openingLockKey))")
        }
    }
}
