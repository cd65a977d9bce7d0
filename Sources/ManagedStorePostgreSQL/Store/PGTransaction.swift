import Foundation
import ManagedStoreCore

/// A group commit's transaction on the writer's connection (`READ COMMITTED`: each statement
/// sees what other servers committed before it, and the locks it takes make the checks hold),
/// with its savepoints.
///
/// Not Sendable: used on the thread that runs the group.
final class PGTransaction: StoreTransaction {
    let pgSession: PGSession
    var session: any StoreWriteSession { pgSession }
    private var rolledBack = false
    private var savepointDepth = 0

    init(session: PGSession) throws(StoreError) {
        pgSession = session
        try session.connection.execute("BEGIN ISOLATION LEVEL READ COMMITTED")
    }

    /// False once rolled back, or once a statement outside a savepoint failed (PostgreSQL then
    /// keeps nothing of the transaction).
    var isIntact: Bool { !rolledBack && (savepointDepth > 0 || pgSession.connection.isInIntactTransaction) }

    func restart() throws(StoreError) {
        guard !isIntact else { return }
        if !rolledBack { _ = try? pgSession.connection.execute("ROLLBACK") }
        try pgSession.connection.execute("BEGIN ISOLATION LEVEL READ COMMITTED")
        rolledBack = false
    }

    func rollBack() {
        guard !rolledBack else { return }
        _ = try? pgSession.connection.execute("ROLLBACK")
        rolledBack = true
    }

    /// Commits; a transaction PostgreSQL had already failed answers COMMIT with ROLLBACK, which
    /// is an error here, never an acknowledged write.
    func commit() throws(StoreError) {
        let result = try pgSession.connection.execute("COMMIT")
        rolledBack = true
        guard result.commandStatus == "COMMIT" else {
            throw .engine(code: -1, message: "the transaction had failed and was rolled back", sql: "COMMIT")
        }
    }

    func inSavepoint<T>(_ body: () throws -> T) throws -> T {
        precondition(isIntact, "a savepoint outside a transaction")
        savepointDepth += 1
        let name = "s\(savepointDepth)"
        defer { savepointDepth -= 1 }
        try pgSession.connection.execute("SAVEPOINT \(name)")
        do {
            let result = try body()
            try pgSession.connection.execute("RELEASE SAVEPOINT \(name)")
            return result
        } catch {
            if !rolledBack {
                _ = try? pgSession.connection.execute("ROLLBACK TO SAVEPOINT \(name)")
                _ = try? pgSession.connection.execute("RELEASE SAVEPOINT \(name)")
            }
            throw error
        }
    }
}
