import ArgumentParser
import Foundation
import ManagedStore

/// `managedstore check --model M --store PATH`: a read-only look at a store file.
struct CheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Check a store file without changing it: SQLite's integrity check, whether it matches a model, its history.",
        discussion: """
        Opens the file read-only. Says whether the store matches the model, or which steps \
        opening it with the model would migrate it by, or why it could not be; and how many \
        history transactions and changes it keeps. Exits 0 when the file is intact and matches \
        the model or can be migrated to it, 65 otherwise; 66 when there is no store file.
        Example:
          managedstore check --demo --store ./data/demo.sqlite
        """)

    @OptionGroup var storeOptions: ExistingStoreOptions

    func run() throws {
        let model = try storeOptions.loadModelForExistingStore()
        if storeOptions.isPostgres { return try checkPostgres(model) }
        let inspection: StoreInspection
        do throws(StoreError) {
            inspection = try PersistentStoreCoordinator.inspectStore(at: storeOptions.store, model: model)
        } catch {
            throw storeOptions.fail(error)
        }
        for line in inspection.integrityCheck { print("integrity: \(line)") }
        let usable = Self.printMigration(inspection.migration, from: inspection.storeModelName, to: model)
        print("history: " + Self.describe(inspection.history))
        if !inspection.isIntact || !usable { throw ExitCode(65) }
    }

    /// A PostgreSQL store: its own consistency checks, the model it was made with (it is opened
    /// only when that is this one) and its history, all read without writing.
    private func checkPostgres(_ model: ManagedObjectModel) throws {
        let coordinator: PersistentStoreCoordinator
        let plan: Result<MigrationPlan, StoreError>
        do throws(StoreError) {
            // Opened with the model it records, a store changes nothing; what `model` would
            // change is planned on its own, read-only.
            let recorded = try PersistentStoreCoordinator.recordedModel(postgres: storeOptions.store)
            coordinator = try storeOptions.openExisting(recorded)
            do throws(StoreError) {
                plan = .success(try PersistentStoreCoordinator.migrationPlan(for: model, postgres: storeOptions.store))
            } catch {
                plan = .failure(error)
            }
        } catch {
            throw storeOptions.fail(error)
        }
        let problems = try coordinator.checkIntegrity()
        for line in problems.isEmpty ? ["ok"] : problems { print("integrity: \(line)") }
        let usable = Self.printMigration(plan, from: "\(coordinator.model.name) version \(coordinator.model.version)", to: model)
        let transactions = try coordinator.historyTransactionCount()
        let oldest = try coordinator.oldestHistoryToken()
        let newest = try coordinator.lastHistoryToken()
        var history = "\(transactions) transactions"
        if transactions > 0 { history += ", tokens \(oldest.rawValue + 1) to \(newest.rawValue)" }
        if oldest.rawValue > 0 { history += ", pruned through token \(oldest.rawValue)" }
        print("history: " + history)
        if !problems.isEmpty || !usable { throw ExitCode(65) }
    }

    /// Prints whether the store (made with `storeModel`) matches `model`, or would be migrated
    /// to it and how, or cannot be and why; returns whether it can be used with `model`.
    static func printMigration(_ migration: Result<MigrationPlan, StoreError>, from storeModel: String, to model: ManagedObjectModel) -> Bool {
        let named = "\(model.name) version \(model.version)"
        switch migration {
        case .success(let plan) where plan.isEmpty:
            print("model: the store matches \(named)")
        case .success(let plan):
            print("model: the store (made with \(storeModel)) would be migrated to \(named):")
            for step in plan.steps { print("  \(step)") }
        case .failure(.migrationNotInferable(let reasons)):
            print("model: the store (made with \(storeModel)) cannot be migrated to \(named):")
            for reason in reasons { print("  \(reason)") }
            return false
        case .failure(let error):
            print("model: \(error)")
            return false
        }
        return true
    }

    static func describe(_ history: HistoryStatistics) -> String {
        var text = "\(history.transactions) transactions, \(history.changes) changes"
        if let oldest = history.oldestToken, let newest = history.newestToken { text += ", tokens \(oldest) to \(newest)" }
        if let pruned = history.prunedThrough { text += ", pruned through token \(pruned)" }
        return text
    }
}
