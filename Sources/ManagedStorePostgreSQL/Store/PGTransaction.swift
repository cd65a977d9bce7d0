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
    /// Units of work begun in this transaction: each unit's number (`PGConnection.currentUnit`).
    private var units = 0

    /// The BEGIN goes with the group's first statement (its first SAVEPOINT), in one round trip.
    init(session: PGSession) throws(StoreError) {
        pgSession = session
        try session.connection.beginWithNextStatement(Self.begin)
    }

    private static let begin = "BEGIN ISOLATION LEVEL READ COMMITTED"

    /// False once rolled back, or once a statement outside a savepoint failed (PostgreSQL then
    /// keeps nothing of the transaction). A BEGIN not sent yet is a transaction with nothing in it.
    var isIntact: Bool {
        let connection = pgSession.connection
        return !rolledBack && !connection.failedEarlierUnit
            && (savepointDepth > 0 || connection.hasDeferredBegin || connection.isInIntactTransaction)
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
        // What waits (the last saves' statements and RELEASE), the counters' rows and the NOTIFY
        // go with the COMMIT, in one round trip; a failure of any of them fails the COMMIT.
        pgSession.writeCounters()
        connection.queue("SELECT pg_notify(\(PGValues.literal(channel)), '')", [])
        let result: PGResult
        do {
            result = try connection.execute("COMMIT")
        } catch {
            rollBack()
            throw error
        }
        rolledBack = true
        guard result.commandStatus == "COMMIT" else {
            throw .engine(code: -1, message: "the transaction had failed and was rolled back", sql: "COMMIT")
        }
    }

    /// The SAVEPOINT goes with the unit's first statement and the RELEASE with the statement
    /// after the unit (the next unit's first, or the COMMIT): a unit costs no round trip of
    /// its own. A unit that ran no statement sends neither.
    ///
    /// A unit's statements may still wait when it returns (a save of new objects only,
    /// `PGSession.write`): they go with a later unit's, or with the COMMIT. Should one of them
    /// fail there, the units before were told they wrote, and that no longer holds: the whole
    /// transaction is rolled back (`isIntact` turns false), as when the store fails a
    /// transaction on its own, and every unit of it is undone.
    func inSavepoint<T>(_ body: () throws -> T) throws -> T {
        guard isIntact else {
            throw StoreError.engine(code: -1, message: "the transaction was rolled back (a save before failed): no save runs in it until it begins again", sql: nil)
        }
        savepointDepth += 1
        units += 1
        let name = "s\(savepointDepth)"
        let connection = pgSession.connection
        let outerUnit = connection.currentUnit
        connection.currentUnit = units
        defer {
            savepointDepth -= 1
            connection.currentUnit = outerUnit
        }
        let savepoint = "SAVEPOINT \(name)"
        connection.sendWithNextStatement(savepoint)
        let counted = pgSession.counters.state
        do {
            let result = try body()
            // The body may have caught the failure of an earlier unit that one of its reads found.
            if connection.failedEarlierUnit {
                rollBack()
                throw StoreError.engine(code: -1, message: "a save before this one in its transaction failed; the transaction was rolled back", sql: nil)
            }
            if !connection.forgetIfWaiting(savepoint) { connection.sendWithNextStatement("RELEASE SAVEPOINT \(name)") }
            return result
        } catch {
            // What the unit counted is taken back with its statements.
            pgSession.counters.restore(counted)
            if !connection.forgetIfWaiting(savepoint), !rolledBack {
                _ = try? connection.execute("ROLLBACK TO SAVEPOINT \(name)")
                _ = try? connection.execute("RELEASE SAVEPOINT \(name)")
            }
            if connection.failedEarlierUnit { rollBack() }
            throw error
        }
    }
}
