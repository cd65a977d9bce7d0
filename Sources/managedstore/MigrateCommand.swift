import ArgumentParser
import Foundation
import ManagedStore

/// `managedstore migrate --model M --store PATH [--dry-run]`: lightweight migration of a store
/// to a model, or what it would do.
struct MigrateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Migrate a store to a model by inferring the changes (lightweight migration), printing each step.",
        discussion: """
        Prints one step a line, or "the store already matches the model". Opening a store with \
        `serve` migrates it the same way; this command shows the steps first (--dry-run changes \
        nothing) or runs them on their own. A change that cannot be inferred (a changed attribute \
        type, say) prints every reason on stderr and exits 65, changing nothing; a missing store \
        file exits 66.
        Example:
          managedstore migrate --model tracker-v2.json --store ./data/tracker.sqlite --dry-run
        """)

    @Flag(help: "Print the steps without changing anything.")
    var dryRun = false

    @OptionGroup var storeOptions: ExistingStoreOptions

    func run() throws {
        let model = try storeOptions.loadModelForExistingStore()
        let plan: MigrationPlan
        do throws(StoreError) {
            if dryRun && storeOptions.isPostgres {
                plan = try PersistentStoreCoordinator.migrationPlan(for: model, postgres: storeOptions.store)
            } else if dryRun {
                plan = try PersistentStoreCoordinator.migrationPlan(for: model, store: storeOptions.store)
            } else if storeOptions.isPostgres {
                // Opening migrates, in one transaction, under the lock every server opening
                // the database takes.
                plan = try storeOptions.openExisting(model).appliedMigration
            } else {
                // Opening migrates, in one transaction; the checkpoint leaves it all in the file.
                let coordinator = try PersistentStoreCoordinator(model: model, store: .path(storeOptions.store, readerCount: 1))
                plan = coordinator.appliedMigration
                try coordinator.settle()
            }
        } catch {
            throw storeOptions.fail(error)
        }
        print(plan.isEmpty ? "the store already matches the model" : plan.description)
        if !plan.isEmpty {
            CommandLog.write(dryRun ? "dry run: nothing was changed\n" : "migrated \(storeOptions.shownStore) to \(model.name) version \(model.version)\n")
        }
    }
}
