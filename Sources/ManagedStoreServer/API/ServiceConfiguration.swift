import Logging
import ManagedStoreCore

/// How the service behaves, from `managedstore serve`'s flags.
public struct ServiceConfiguration: Sendable {
    /// The merge policy when a request names none.
    public var mergePolicy: MergePolicy = .error
    /// Refuse PATCH, PUT and DELETE without a base version (428).
    public var requireIfMatch = false
    /// Drain every waiting write into one transaction (off: one commit per request, for comparison).
    public var groupCommit = true
    /// How long one fetch or count may run (in SQLite and in memory) before it is stopped
    /// and answered 503 `query-timeout`.
    public var queryTimeout: Duration = .seconds(5)
    /// How long the persistent history is kept (pruned on a timer).
    public var historyRetention: HistoryRetention.Setting = .sevenDays
    /// The largest request body; for an NDJSON import (never held whole) the longest line, and
    /// the most an `?atomic=true` import may hold. `ManagedStoreServer` sets it from the HTTP
    /// configuration.
    public var maxBodyBytes = 8_388_608
    /// The bearer tokens the server accepts; none: every request is allowed (the server then
    /// listens on loopback only, unless told `--insecure-open`).
    public var accessTokens: [AccessToken] = []
    /// Where the server's own lines go (`LineLogHandler` in `serve`); by default nowhere.
    public var logger = Logger(label: "managedstore", factory: { _ in SwiftLogNoOpLogHandler() })
    /// The line per request (`serve` turns it on unless `--log-requests off`); by default none.
    public var requestLog: RequestLog?
    /// Live query streams one server holds at once; one more is 503.
    public var maxLiveQueries = 1000
    /// Bytes a live query's client may leave unread before its stream is closed (it resumes).
    public var maxLiveLagBytes = 8 << 20

    public init() {}
}
