import Foundation
import ManagedStoreCore

/// A PostgreSQL database as a libpq connection URI, and the same URI without its password, the
/// only form that is ever logged, printed or put in an error (`StoreDescription.redacted`).
package struct PostgresLocation: Sendable, Equatable {
    /// What libpq is given.
    let connectionString: String

    package init(_ uri: String) { connectionString = uri }

    /// The URI with its password replaced by `***` (`postgres://user:***@host/db`).
    package var redacted: String { StoreDescription.redacted(connectionString) }
}
