import Foundation

/// A fixed set of read-only connections, lent one at a time, each reading in a snapshot that
/// stays open between loans while nothing has been committed since it began.
///
/// In WAL mode each reader sees a consistent snapshot and neither waits for the writer nor
/// makes it wait. Beginning and ending a read transaction costs SQLite system calls (locks on
/// the shared-memory index, the file size) that were a large part of a point read, so a reader
/// keeps its transaction open when it goes back to the pool, and the next loan reuses it if
/// the store's commit count is still the one it began at: then the snapshot *is* the latest
/// state, and reusing it returns exactly what a new transaction would. Every commit goes through
/// the coordinator's one writer, which counts it before anyone hears of the write, so a read
/// that follows an acknowledged write always sees it. (Writes made by another process to the
/// same file show once this process commits or a snapshot is ended; a store is meant to be
/// opened by one process at a time.)
///
/// A snapshot that has fallen behind is ended as soon as possible (when its reader comes back,
/// and for idle readers by `endStaleSnapshots` after each commit), so old snapshots never stop
/// checkpoints from emptying the WAL.
///
/// `@unchecked Sendable` because `idle` is only touched while holding `condition`'s lock, and a
/// borrowed connection is used by exactly one caller until returned.
final class ReaderPool: @unchecked Sendable {
    private struct Reader {
        let connection: SQLiteConnection
        /// The commit count when its open read transaction began; nil when none is open.
        var snapshotCommit: Int?
    }

    private var idle: [Reader]
    private let condition = NSCondition()

    init(_ connections: [SQLiteConnection]) { self.idle = connections.map { Reader(connection: $0, snapshotCommit: nil) } }

    /// Runs `body` with a reader of its own, inside a read transaction that shows every commit
    /// counted up to `currentCommit()`; waits while all readers are lent out.
    func withSnapshot<T>(currentCommit: () -> Int, _ body: (SQLiteConnection) throws -> T) throws -> T {
        condition.lock()
        while idle.isEmpty { condition.wait() }
        var reader = idle.removeLast()
        condition.unlock()
        defer {
            // Back to the pool; a snapshot already overtaken by a commit is ended now.
            if let commit = reader.snapshotCommit, commit != currentCommit() { Self.endSnapshot(&reader) }
            condition.lock()
            idle.append(reader)
            condition.signal()
            condition.unlock()
        }
        let now = currentCommit()
        if reader.snapshotCommit != now {
            Self.endSnapshot(&reader)
            try reader.connection.cachedStatement("BEGIN DEFERRED").execute()
            reader.snapshotCommit = now
        }
        do {
            return try body(reader.connection)
        } catch {
            Self.endSnapshot(&reader)  // start clean after any failure
            throw error
        }
    }

    /// Ends the snapshots of idle readers that began before commit `current` (called by the
    /// writer after each commit, so that no idle reader holds back a checkpoint).
    func endStaleSnapshots(current: Int) {
        condition.lock()
        defer { condition.unlock() }
        for i in idle.indices where idle[i].snapshotCommit.map({ $0 != current }) ?? false {
            Self.endSnapshot(&idle[i])
        }
    }

    /// Ends the snapshot of every idle reader, current or not: a reader that holds one keeps
    /// using the WAL, and a checkpoint cannot empty a WAL in use.
    func endIdleSnapshots() {
        condition.lock()
        defer { condition.unlock() }
        for i in idle.indices where idle[i].snapshotCommit != nil { Self.endSnapshot(&idle[i]) }
    }

    private static func endSnapshot(_ reader: inout Reader) {
        if reader.connection.isInTransaction { try? reader.connection.cachedStatement("COMMIT").execute() }
        reader.snapshotCommit = nil
    }
}
