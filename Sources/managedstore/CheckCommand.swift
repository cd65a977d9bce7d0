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

    /// A PostgreSQL store: its own consistency checks, the model it was made with (it is opened
    /// only when that is this one) and its history, all read without writing.
    private func checkPostgres(_ model: ManagedObjectModel) throws {
        let named = "\(model.name) version \(model.version)"
        let coordinator: PersistentStoreCoordinator
        do throws(StoreError) {
            coordinator = try storeOptions.openExisting(model)
        } catch .migrationNotInferable(let reasons) {
            print("model: the store cannot be used with \(named):")
            for reason in reasons { print("  \(reason)") }
            throw ExitCode(65)
        } catch {
            throw storeOptions.fail(error)
        }
        let problems = try coordinator.checkIntegrity()
        for line in problems.isEmpty ? ["ok"] : problems { print("integrity: \(line)") }
        print("model: the store matches \(named)")
        let transactions = try coordinator.historyTransactionCount()
        let oldest = try coordinator.oldestHistoryToken()
        let newest = try coordinator.lastHistoryToken()
        var history = "\(transactions) transactions"
        if transactions > 0 { history += ", tokens \(oldest.rawValue + 1) to \(newest.rawValue)" }
        if oldest.rawValue > 0 { history += ", pruned through token \(oldest.rawValue)" }
        print("history: " + history)
        if !problems.isEmpty { throw ExitCode(65) }
    }

    static func describe(_ history: HistoryStatistics) -> String {
        var text = "\(history.transactions) transactions, \(history.changes) changes"
        if let oldest = history.oldestToken, let newest = history.newestToken { text += ", tokens \(oldest) to \(newest)" }
        if let pruned = history.prunedThrough { text += ", pruned through token \(pruned)" }
        return text
    }
}
