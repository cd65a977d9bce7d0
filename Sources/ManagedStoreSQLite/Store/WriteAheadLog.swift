import CSQLite
import Foundation
import ManagedStoreCore

// Keeping the WAL small. SQLite's own automatic checkpoint runs inside COMMIT, while the
// readers' snapshots (kept open between reads, see ReaderPool) still pin the frames it would
// copy back, and a WAL restarts from its beginning only when no reader uses it: under steady
// reads and writes it never restarted and grew without bound, hundreds of times the store.
// So the writer counts the frames itself, and once there are enough it ends the idle readers'
// snapshots first and then checkpoints in TRUNCATE mode: copy everything back, wait briefly
// for readers in the middle of a read to finish, and empty the file.

/// The writer's view of its WAL, and the checkpoints that keep it bounded.
///
/// `@unchecked Sendable`: it is only used under the writer's lock (`SerializedConnection`),
/// and SQLite calls its hook during the writer's COMMIT, on the same thread.
final class WriteAheadLog: @unchecked Sendable {
    /// Frames in the WAL after the last commit, as SQLite reports them to the WAL hook.
    fileprivate(set) var frames: Int32 = 0
    /// Frames that start a checkpoint: SQLite's automatic threshold (about 4 MB of 4 KB pages).
    let checkpointFrames: Int32
    /// How long a checkpoint waits for readers in the middle of a read, in milliseconds:
    /// long enough for a point read, short enough that the write queue barely notices. If a reader
    /// takes longer, the next commit tries again.
    let readerWaitMilliseconds: Int32

    init(checkpointFrames: Int32 = 1000, readerWaitMilliseconds: Int32 = 50) {
        self.checkpointFrames = checkpointFrames
        self.readerWaitMilliseconds = readerWaitMilliseconds
    }

    /// Takes over the writer's WAL hook (which replaces SQLite's automatic checkpoint) and
    /// bounds what a restarted WAL may keep on disk.
    func attach(to connection: SQLiteConnection) throws(StoreError) {
        try connection.execute("PRAGMA journal_size_limit = \(16 << 20)")
        sqlite3_wal_hook(connection.handle, { context, _, _, frames in
            guard let context else { return SQLITE_OK }
            Unmanaged<WriteAheadLog>.fromOpaque(context).takeUnretainedValue().frames = frames
            return SQLITE_OK
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Whether the WAL has grown enough since the last checkpoint to run one.
    var needsCheckpoint: Bool { frames >= checkpointFrames }

    /// Copies every committed frame into the database and empties the WAL, retrying for up to
    /// `waitMilliseconds` while readers still use it. Before each try `releaseReaders` ends
    /// the snapshots of idle readers (a reader that finishes a read while this waits would
    /// otherwise keep its snapshot, as no commit ended it). Returns whether it emptied the
    /// WAL; false (busy) leaves everything as it was, to be tried again.
    @discardableResult
    func truncate(_ connection: SQLiteConnection, waitMilliseconds: Int32? = nil, releaseReaders: () -> Void) throws(StoreError) -> Bool {
        // No busy handler: SQLite's sleeps grow to tens of milliseconds, and the readers'
        // moments of rest are shorter. Polling every half millisecond catches them.
        sqlite3_busy_timeout(connection.handle, 0)
        defer { sqlite3_busy_timeout(connection.handle, SQLiteConnection.busyTimeoutMilliseconds) }
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(max(0, waitMilliseconds ?? readerWaitMilliseconds)) * 1_000_000
        while true {
            releaseReaders()
            var logFrames: Int32 = 0, copied: Int32 = 0
            let rc = sqlite3_wal_checkpoint_v2(connection.handle, nil, SQLITE_CHECKPOINT_TRUNCATE, &logFrames, &copied)
            if rc == SQLITE_OK {
                frames = 0
                return true
            }
            guard rc & 0xFF == SQLITE_BUSY else { throw connection.error(rc, sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
            guard DispatchTime.now().uptimeNanoseconds < deadline else { return false }
            usleep(500)
        }
    }
}
