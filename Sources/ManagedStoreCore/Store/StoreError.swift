/// An error from the persistent store: opening it, or its engine failing underneath.
public enum StoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The store's engine reported `code` (SQLite's extended result code, for the SQLite
    /// store) with `message`, running `sql` when it says.
    case engine(code: Int32, message: String, sql: String?)
    /// The file could not be opened as a database.
    case cannotOpen(path: String, message: String)
    /// The store was created from another model, and was not migrated: `reason` says why.
    case modelMismatch(storeModel: String, storeHash: String, modelHash: String, reason: MismatchReason)
    /// The store was made from another model, and migrating it to this one cannot be
    /// inferred [NSInferMappingModelAutomaticallyOption]: every reason, each naming the entity
    /// and property. Nothing was changed.
    case migrationNotInferable([String])
    /// The file is a database, but not one that ManagedStore created.
    case notAManagedStore(path: String)
    /// Other connections kept using what this operation needed, past its wait.
    case busy(String)
    /// The persistent history no longer reaches `requested`: the saves after it up to
    /// `oldest` were deleted (pruned). Read on from `oldest`, knowing that some were missed.
    case historyPruned(requested: PersistentHistoryToken, oldest: PersistentHistoryToken)
    /// The store records a file format this version cannot read (`format` as recorded, or
    /// "none"): a newer ManagedStore wrote it. `readable` lists the formats this version opens.
    case unsupportedFormat(path: String, format: String, readable: [String])

    /// Why a store made from another model was not migrated when opened.
    public enum MismatchReason: Sendable, Equatable {
        /// `StoreDescription.shouldInferMappingModelAutomatically` is off.
        case migrationOff
        /// The store does not record the model it was made with (an earlier ManagedStore
        /// made it), so what changed cannot be told.
        case modelNotRecorded
    }

    /// `error` itself when it is a store error; otherwise a store error describing it. The
    /// store's transaction closures throw untyped errors, and this is where they become typed.
    package init(wrapping error: any Error, sql: String? = nil) {
        self = error as? StoreError ?? .engine(code: -1, message: "\(error)", sql: sql)
    }

    public var description: String {
        switch self {
        case let .engine(code, message, sql):
            return "store engine error \(code): \(message)" + (sql.map { " (in: \($0.prefix(200)))" } ?? "")
        case let .cannotOpen(path, message):
            return "cannot open store at \(path): \(message)"
        case let .modelMismatch(storeModel, storeHash, modelHash, reason):
            let start = "the store was created with another model (\(storeModel), hash \(storeHash)); this model's hash is \(modelHash)"
            switch reason {
            case .migrationOff:
                return start + ", and automatic migration is off (shouldInferMappingModelAutomatically). "
                    + "Use the model the store was made with, turn migration on, or use a new store file."
            case .modelNotRecorded:
                return start + ". The store does not record its model (an earlier ManagedStore made it), so it cannot be migrated: "
                    + "open it once with the model it was made with, which records it, then with this one."
            }
        case .migrationNotInferable(let reasons):
            return "the store cannot be migrated to this model automatically: " + reasons.joined(separator: "; ")
        case let .notAManagedStore(path):
            return "\(path) is a database that ManagedStore did not create"
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
