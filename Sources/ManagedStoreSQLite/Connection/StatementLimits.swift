import CSQLite
import Dispatch
import ManagedStoreCore

/// Limits on the statements run inside `SQLiteConnection.withLimits`: a budget of SQLite
/// virtual-machine steps, a deadline, or both. SQLite calls its progress handler every
/// `period` steps; the handler stops the statement (SQLITE_INTERRUPT) once a limit is passed.
/// A read-only statement stopped this way leaves its transaction as it was.
final class StatementLimits {
    /// Virtual-machine steps between two checks: a clock read per thousand steps is too little
    /// to measure, and a statement overshoots its deadline by microseconds at most.
    static let period: Int32 = 1_000

    /// Checks left before the step budget runs out; nil for no budget.
    private var checksLeft: Int?
    /// `DispatchTime.uptimeNanoseconds` past which statements stop; nil for no deadline.
    let deadline: UInt64?
    /// Set when the deadline stopped a statement (as opposed to the step budget).
    private(set) var deadlinePassed = false

    init(steps: Int32? = nil, deadline: UInt64? = nil) {
        self.checksLeft = steps.map { max(1, Int($0) / Int(Self.period)) }
        self.deadline = deadline
    }

    /// Whether any limit is set (no handler is installed otherwise).
    var isEmpty: Bool { checksLeft == nil && deadline == nil }

    /// One check; true stops the statement.
    fileprivate func check() -> Bool {
        if let deadline, DispatchTime.now().uptimeNanoseconds >= deadline {
            deadlinePassed = true
            return true
        }
        guard let left = checksLeft else { return false }
        checksLeft = left - 1
        return left <= 1
    }
}

extension SQLiteConnection {
    /// Runs `body` with its statements stopped by `limits` (see `StatementLimits`). A stopped
    /// statement throws a StoreError with SQLITE_INTERRUPT (`isInterrupt`); `limits`
    /// tells whether its deadline passed.
    func withLimits<T, E: Error>(_ limits: StatementLimits, _ body: () throws(E) -> T) throws(E) -> T {
        if limits.isEmpty { return try body() }
        sqlite3_progress_handler(handle, StatementLimits.period, { context in
            guard let context else { return 0 }
            return Unmanaged<StatementLimits>.fromOpaque(context).takeUnretainedValue().check() ? 1 : 0
        }, Unmanaged.passUnretained(limits).toOpaque())
        // The handler holds `limits` unretained: it must outlive the statements (it does: the
        // defer below uses it, after them).
        defer {
            sqlite3_progress_handler(handle, 0, nil, nil)
            withExtendedLifetime(limits) {}
        }
        return try body()
    }
}

extension StoreError {
    /// A statement stopped by its limits (`SQLiteConnection.withLimits`).
    var isInterrupt: Bool {
        if case let .engine(code, _, _) = self { return code & 0xFF == SQLITE_INTERRUPT }
        return false
    }
}
