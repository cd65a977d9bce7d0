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

    /// The BEGIN goes with the group's first statement (its first SAVEPOINT), in one round trip.
    init(session: PGSession) throws(StoreError) {
        pgSession = session
        try session.connection.beginWithNextStatement(Self.begin)
    }

    private static let begin = "BEGIN ISOLATION LEVEL READ COMMITTED"

    /// False once rolled back, or once a statement outside a savepoint failed (PostgreSQL then
    /// keeps nothing of the transaction). A BEGIN not sent yet is a transaction with nothing in it.
    var isIntact: Bool {
        !rolledBack && (savepointDepth > 0 || pgSession.connection.hasDeferredBegin || pgSession.connection.isInIntactTransaction)
    }

    func restart() throws(StoreError) {
        guard !isIntact else { return }
        if !rolledBack { _ = try? pgSession.connection.execute("ROLLBACK") }
        pgSession.counters.reset()
        try pgSession.connection.beginWithNextStatement(Self.begin)
        rolledBack = false
    }

    func rollBack() {
        guard !rolledBack else { return }
        // A BEGIN never sent has nothing to roll back.
        if pgSession.connection.clearDeferredBegin() { _ = try? pgSession.connection.execute("ROLLBACK") }
        pgSession.counters.reset()
        rolledBack = true
    }

    /// Commits, with `NOTIFY channel` in the same round trip (delivered to the listeners only if
    /// the transaction commits); a transaction PostgreSQL had already failed answers COMMIT with
    /// ROLLBACK, which is an error here, never an acknowledged write.
    func commit(notifying channel: String) throws(StoreError) {
        let connection = pgSession.connection
        guard !connection.hasDeferredBegin else {
            _ = connection.clearDeferredBegin()
            rolledBack = true  // no statement ran: nothing to commit, nothing to tell
            return
        }
        // The last unit's RELEASE, if it waits, and the counters' rows go in the same simple query.
        let statements = try connection.takeWaitingStatements() + pgSession.counters.finalSQL() + ["SELECT pg_notify(\(PGValues.literal(channel)), '')", "COMMIT"]
        let result = try connection.execute(statements.joined(separator: "; "))
        rolledBack = true
        guard result.commandStatus == "COMMIT" else {
            throw .engine(code: -1, message: "the transaction had failed and was rolled back", sql: "COMMIT")
        }
    }

    /// The SAVEPOINT goes with the unit's first statement and the RELEASE with the statement
    /// after the unit (the next unit's first, or the COMMIT): a unit costs no round trip of
    /// its own. A unit that ran no statement sends neither.
    func inSavepoint<T>(_ body: () throws -> T) throws -> T {
        precondition(isIntact, "a savepoint outside a transaction")
        savepointDepth += 1
        let name = "s\(savepointDepth)"
        defer { savepointDepth -= 1 }
        let connection = pgSession.connection
        let savepoint = "SAVEPOINT \(name)"
        connection.sendWithNextStatement(savepoint)
        let counted = pgSession.counters.state
        do {
            let result = try body()
            if !connection.forgetIfWaiting(savepoint) { connection.sendWithNextStatement("RELEASE SAVEPOINT \(name)") }
            return result
        } catch {
            // What the unit counted is taken back with its statements.
            pgSession.counters.restore(counted)
            if !connection.forgetIfWaiting(savepoint), !rolledBack {
                _ = try? pgSession.connection.execute("ROLLBACK TO SAVEPOINT \(name)")
                _ = try? pgSession.connection.execute("RELEASE SAVEPOINT \(name)")
            }
            throw error
        }
    }
}
