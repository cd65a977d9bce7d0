import Foundation

/// Where a store lives and how it is opened [NSPersistentStoreDescription].
public struct StoreDescription: Sendable {
    public enum Location: Sendable, Equatable {
        /// An SQLite file in WAL mode.
        case file(URL)
        /// A private in-memory database [NSInMemoryStoreType]: same behaviour, gone at close.
        case inMemory
        /// A PostgreSQL database, named by a libpq connection URI (`postgres://user@host:5432/db`):
        /// any number of processes may open it at once.
        case postgres(String)
    }

    /// How much a committed save survives.
    public enum Durability: String, Sendable, CaseIterable {
        /// WAL with synchronous=FULL: a returned save survives a power cut.
        case full
        /// WAL with synchronous=NORMAL: survives a crash of the process, not of the machine.
        case normal
    }

    public var location: Location
    /// Read-only connections that fetches and faults use; reads never wait for the writer.
    public var readerCount: Int
    public var durability: Durability
    /// Bytes of the store file that the reader connections read through a memory map instead
    /// of `pread` (SQLite's `mmap_size`); 0 turns it off. A point read then costs no system
    /// call and no copy, and every reader shares the operating system's cached pages instead
    /// of filling a page cache of its own, which is much of a read of one object by key. The
    /// writer is never mapped (a growing file is mapped again as it grows, slowing bulk inserts). SQLite
    /// caps it at 2 GiB. (An I/O error on a mapped page is a SIGBUS instead of an error code;
    /// set 0 where the disk is not trusted.)
    public var memoryMapSize: Int
    /// Whether every save records a transaction in the store's persistent history
    /// [NSPersistentHistoryTrackingKey] (on by default). Merge policies other than `error` need
    /// it to tell which properties the store changed after a version; without it every
    /// property counts as changed.
    public var recordsHistory = true
    /// Whether opening a store made from another model migrates it to this one when the
    /// changes can be inferred (lightweight migration, `LightweightMigration`) [on by default, as
    /// NSPersistentContainer's NSInferMappingModelAutomaticallyOption]. Off, such a store is
    /// refused with `StoreError.modelMismatch`.
    public var shouldInferMappingModelAutomatically = true
    /// How long a write under an idempotency key is remembered (24 hours by default): a retry
    /// after that is carried out afresh. Expired records are deleted by
    /// `PersistentStoreCoordinator.deleteExpiredIdempotencyRecords(limit:)`.
    public var idempotencyKeyLifetime: Duration = .seconds(86_400)
    /// Whether opening creates the store where there is none (on by default). Off, a
    /// PostgreSQL database without the store's tables is refused with `StoreError.cannotOpen`:
    /// `check` and `migrate` look at what exists and create nothing.
    public var createsStoreIfMissing = true

    public init(location: Location, readerCount: Int = 4, durability: Durability = .full, memoryMapSize: Int = 256 << 20) {
        self.location = location
        self.readerCount = max(1, readerCount)
        self.durability = durability
        self.memoryMapSize = max(0, memoryMapSize)
    }

    /// A store at `path`, in memory when `path` is `:memory:`, or in PostgreSQL when it is a
    /// `postgres://` or `postgresql://` URI, as the command line accepts.
    public static func path(_ path: String, readerCount: Int = 4, durability: Durability = .full) -> StoreDescription {
        if path == ":memory:" { return StoreDescription(location: .inMemory, readerCount: readerCount, durability: durability) }
        if isPostgresURI(path) { return StoreDescription(location: .postgres(path), readerCount: readerCount, durability: durability) }
        return StoreDescription(location: .file(URL(fileURLWithPath: path)), readerCount: readerCount, durability: durability)
    }

    /// Whether `text` names a PostgreSQL database rather than a file.
    public static func isPostgresURI(_ text: String) -> Bool {
        text.hasPrefix("postgres://") || text.hasPrefix("postgresql://")
    }

    /// `store` as it may be shown (logs, start-up lines, `--print-config`, errors): a URI's
    /// password, in its user info or a `password=` parameter, replaced by `***`; a path as it is.
    public static func redacted(_ store: String) -> String {
        guard let scheme = store.range(of: "://") else { return store }
        let rest = store[scheme.upperBound...]
        // The authority ends at the first '/', '?' or '#'; its user info at the last '@' in it.
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        var masked = String(store[..<scheme.upperBound])
        if let at = authority.lastIndex(of: "@") {
            let userInfo = authority[..<at]
            masked += userInfo.firstIndex(of: ":").map { userInfo[..<$0] + ":***" } ?? String(userInfo)
            masked += authority[at...]
        } else {
            masked += authority
        }
        let tail = rest[authorityEnd...]
        guard let question = tail.firstIndex(of: "?") else { return masked + tail }
        let query = tail[tail.index(after: question)...].split(separator: "&", omittingEmptySubsequences: false).map { pair in
            pair.lowercased().hasPrefix("password=") ? "password=***" : String(pair)
        }
        return masked + tail[...question] + query.joined(separator: "&")
    }

    public static var inMemory: StoreDescription { StoreDescription(location: .inMemory) }
}
