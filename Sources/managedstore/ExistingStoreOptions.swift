import ArgumentParser
import Foundation
import ManagedStore

/// The options that name a store file that must already exist and the model to hold it
/// against, for the commands that look at or migrate a store (`check`, `migrate`), and how
/// their store errors end them.
struct ExistingStoreOptions: ParsableArguments {
    @Option(help: "The model: a JSON model file, or an Xcode .xcdatamodel or .xcdatamodeld. Use --demo for the built-in task tracker.")
    var model: String?

    @OptionGroup var transformers: TransformerOptions

    @Flag(help: "Use the built-in task-tracker model (Project, Task, Tag).")
    var demo = false

    @Option(help: "The SQLite store file, or a PostgreSQL URI (postgres://...); it must exist (nothing is created).")
    var store: String

    func validate() throws {
        guard (model != nil) != demo else { throw ValidationError("give the model: --model FILE, or --demo for the built-in task tracker (not both)") }
        guard store != ":memory:" else { throw ValidationError("--store must be a store file") }
    }

    /// The model (a bad model file ends the command with exit 2), once the store file is known
    /// to exist (else exit 66, EX_NOINPUT).
    func loadModelForExistingStore() throws -> ManagedObjectModel {
        let loaded = try loadModel(model, transformers)
        guard isPostgres || FileManager.default.fileExists(atPath: store) else {
            CommandLog.error("\(shownStore): no such store file")
            throw ExitCode(66)
        }
        return loaded
    }

    var isPostgres: Bool { StoreDescription.isPostgresURI(store) }

    /// The store as it may be shown: a PostgreSQL URI without its password.
    var shownStore: String { StoreDescription.redacted(store) }

    /// Opens the store: nothing is created; a store made from another model is migrated to
    /// `model` (lightweight migration) or refused.
    func openExisting(_ model: ManagedObjectModel) throws(StoreError) -> PersistentStoreCoordinator {
        var description = StoreDescription.path(store, readerCount: 1)
        description.createsStoreIfMissing = false
        return try PersistentStoreCoordinator(model: model, store: description)
    }

    /// Ends the command for `error`: every reason a migration cannot be inferred on its own
    /// line, and the exit status sysexits.h gives the kind of failure: 65 (EX_DATAERR) for a
    /// store that cannot be used with the model, 66 (EX_NOINPUT) for one that cannot be read.
    func fail(_ error: StoreError) -> ExitCode {
        switch error {
        case .migrationNotInferable(let reasons):
            CommandLog.error("\(shownStore): the store cannot be migrated to this model automatically:")
            for reason in reasons { CommandLog.write("  \(reason)\n") }
            return ExitCode(65)
        case .modelMismatch, .notAManagedStore, .unsupportedFormat:
            CommandLog.error("\(shownStore): \(error)")
            return ExitCode(65)
        case .cannotOpen:
            CommandLog.error("\(shownStore): \(error)")
            return ExitCode(66)
        default:
            CommandLog.error("\(shownStore): \(error)")
            return ExitCode(1)
        }
    }
}
