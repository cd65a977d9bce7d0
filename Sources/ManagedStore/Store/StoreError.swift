/// An error from the persistent store: opening it, or SQLite failing underneath.
public enum StoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// SQLite reported `code` (its extended result code) with `message`.
    case sqlite(code: Int32, message: String, sql: String?)
    /// The file could not be opened as a database.
    case cannotOpen(path: String, message: String)
    /// The store was created from another model (migration is not supported yet).
    case modelMismatch(storeModel: String, storeHash: String, modelHash: String)
    /// The file is an SQLite database, but not one that ManagedStore created.
    case notAManagedStore(path: String)
    /// Other connections kept using what this operation needed, past its wait.
    case busy(String)
    /// The persistent history no longer reaches `requested`: the saves after it up to
    /// `oldest` were deleted (pruned). Read on from `oldest`, knowing that some were missed.
    case historyPruned(requested: PersistentHistoryToken, oldest: PersistentHistoryToken)
    /// The store records a file format this version cannot read (`format` as recorded, or
    /// "none"): a newer ManagedStore wrote it. `readable` lists the formats this version opens.
    case unsupportedFormat(path: String, format: String, readable: [String])

    /// `error` itself when it is a store error; otherwise a store error describing it. The
    /// store's transaction closures throw untyped errors, and this is where they become typed.
    init(wrapping error: any Error, sql: String? = nil) {
        self = error as? StoreError ?? .sqlite(code: -1, message: "\(error)", sql: sql)
    }

    public var description: String {
        switch self {
        case let .sqlite(code, message, sql):
            return "SQLite error \(code): \(message)" + (sql.map { " (in: \($0.prefix(200)))" } ?? "")
        case let .cannotOpen(path, message):
            return "cannot open store at \(path): \(message)"
        case let .modelMismatch(storeModel, storeHash, modelHash):
            return "the store was created with another model (\(storeModel), hash \(storeHash)); "
                + "this model's hash is \(modelHash). Use the model the store was made with, or a new store file."
        case let .notAManagedStore(path):
            return "\(path) is an SQLite database that ManagedStore did not create"
        case .busy(let message):
            return "the store is busy: \(message)"
        case let .historyPruned(requested, oldest):
            return "the history no longer reaches token \(requested): it starts after token \(oldest)"
        case let .unsupportedFormat(path, format, readable):
            return "the store at \(path) has file format \(format); this version of ManagedStore reads formats "
                + readable.joined(separator: ", ") + " (older ones are upgraded in place when opened). Open it with a newer ManagedStore."
        }
    }
}
