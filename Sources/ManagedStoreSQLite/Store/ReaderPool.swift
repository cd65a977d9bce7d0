import Foundation
import ManagedStoreCore

/// The store's one pool of readers: a fixed set, lent one at a time, each a read-only
/// connection reading in a snapshot that stays open between loans while nothing has been
/// committed since it began.
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
/// A reader of an in-memory store has no connection of its own (the store has one, the
/// writer's): its loan only bounds how many read contexts are at work at once.
///
/// `@unchecked Sendable` because `idle` is only touched while holding `condition`'s lock, and a
/// borrowed reader (its connection and snapshot) is used by exactly one caller until returned.
final class ReaderPool: @unchecked Sendable {
    final class Reader {
        let number: Int
        /// nil for an in-memory store: reads go through the writer.
        let connection: SQLiteConnection?
        /// The commit count when its open read transaction began; nil when none is open.
        /// Unchecked exclusivity: only its one borrower, or the pool under its lock, touches it.
        @exclusivity(unchecked) var snapshotCommit: Int?

        init(number: Int, connection: SQLiteConnection?) {
            self.number = number
            self.connection = connection
        }
    }

    // Both only under `condition`'s lock, in plain accesses that call nothing back: they cannot
    // overlap, so exclusivity goes unchecked (the runtime check was on every read's path).
    @exclusivity(unchecked) private var idle: [Reader]
    private let condition = NSCondition()
    /// How long loans waited for a reader (0 for those that found one idle), in seconds.
    @exclusivity(unchecked) private var waits = Histogram(bounds: Histogram.latencyBounds)

    init(_ connections: [SQLiteConnection?]) {
        self.idle = connections.enumerated().map { Reader(number: $0.offset, connection: $0.element) }
    }

    /// Runs `body` with a reader of its own; waits while all readers are lent out. A snapshot
    /// overtaken by a commit meanwhile is ended when the reader comes back, and any failure
    /// ends it too, so the next loan starts clean.
    func withReader<T>(currentCommit: () -> Int, _ body: (Reader) throws -> T) throws -> T {
        condition.lock()
        if idle.isEmpty {
            // The clock is read only when there is a wait to time: a loan is on every read's path.
            let start = DispatchTime.now().uptimeNanoseconds
            while idle.isEmpty { condition.wait() }
            waits.record(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
        } else {
            waits.record(0)
        }
        let reader = idle.removeLast()
        condition.unlock()
        defer {
            if let commit = reader.snapshotCommit, commit != currentCommit() { Self.endSnapshot(reader) }
            condition.lock()
            idle.append(reader)
            condition.signal()
            condition.unlock()
        }
        do {
            return try body(reader)
        } catch {
            Self.endSnapshot(reader)
            throw error
        }
    }

    /// How long loans have waited for a reader so far.
    var waitHistogram: Histogram {
        condition.lock()
        defer { condition.unlock() }
        return waits
    }

    /// Opens `reader`'s read transaction on the state as of commit `now`, unless the one it
    /// holds already is that state; returns its connection.
    static func beginSnapshot(_ reader: Reader, now: Int) throws -> SQLiteConnection? {
        guard let connection = reader.connection else { return nil }
        if reader.snapshotCommit != now {
            endSnapshot(reader)
            try connection.cachedStatement("BEGIN DEFERRED").execute()
            reader.snapshotCommit = now
        }
        return connection
    }

    /// Ends the snapshots of idle readers that began before commit `current` (called by the
    /// writer after each commit, so that no idle reader holds back a checkpoint).
    func endStaleSnapshots(current: Int) {
        condition.lock()
        defer { condition.unlock() }
        for reader in idle where reader.snapshotCommit.map({ $0 != current }) ?? false {
            Self.endSnapshot(reader)
        }
    }

    /// Ends the snapshot of every idle reader, current or not: a reader that holds one keeps
    /// using the WAL, and a checkpoint cannot empty a WAL in use.
    func endIdleSnapshots() {
        condition.lock()
        defer { condition.unlock() }
        for reader in idle where reader.snapshotCommit != nil { Self.endSnapshot(reader) }
    }

    private static func endSnapshot(_ reader: Reader) {
        if let connection = reader.connection, connection.isInTransaction { try? connection.cachedStatement("COMMIT").execute() }
        reader.snapshotCommit = nil
    }
}
