import Foundation
import ManagedStoreCore
import ManagedStorePostgreSQL

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
}
