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
        let inspection: StoreInspection
        do throws(StoreError) {
            inspection = try PersistentStoreCoordinator.inspectStore(at: storeOptions.store, model: model)
        } catch {
            throw storeOptions.fail(error)
        }
        for line in inspection.integrityCheck { print("integrity: \(line)") }
        let named = "\(model.name) version \(model.version)"
        var usable = true
        switch inspection.migration {
        case .success(let plan) where plan.isEmpty:
            print("model: the store matches \(named)")
        case .success(let plan):
            print("model: the store (made with \(inspection.storeModelName)) would be migrated to \(named):")
            for step in plan.steps { print("  \(step)") }
        case .failure(.migrationNotInferable(let reasons)):
            usable = false
            print("model: the store (made with \(inspection.storeModelName)) cannot be migrated to \(named):")
            for reason in reasons { print("  \(reason)") }
        case .failure(let error):
            usable = false
            print("model: \(error)")
        }
        print("history: " + Self.describe(inspection.history))
        if !inspection.isIntact || !usable { throw ExitCode(65) }
    }

    static func describe(_ history: HistoryStatistics) -> String {
        var text = "\(history.transactions) transactions, \(history.changes) changes"
        if let oldest = history.oldestToken, let newest = history.newestToken { text += ", tokens \(oldest) to \(newest)" }
        if let pruned = history.prunedThrough { text += ", pruned through token \(pruned)" }
        return text
    }
}
