/// Why a connection was turned away as it was accepted (closed at once, before a byte is read).
public enum ConnectionRefusal: String, CaseIterable, Sendable {
    /// Its client address held `--max-connections-per-client` connections already.
    case perClient = "per_client"
    /// The server held `--max-connections`, and none of them was waiting idle to make room.
    case total
    /// The server is stopping.
    case stopping
}

/// Why the server closed a connection it had accepted.
public enum ConnectionClosure: String, CaseIterable, Sendable {
    /// A request's head had not arrived in full `--header-timeout` after its first byte.
    case headerTimeout = "header_timeout"
    /// Nothing came or went for `--connection-timeout`.
    case idleTimeout = "idle_timeout"
    /// A request's body had not arrived in full within `--body-timeout`.
    case bodyTimeout = "body_timeout"
    /// It was the longest waiting for a request when the server was full and a new connection came.
    case madeRoom = "made_room"
}

/// The connection counts `/v1/metrics` reports.
public struct ConnectionStatistics: Sendable {
    /// Connections open now.
    public var open = 0
    /// The most the server holds (`--max-connections`, or less when the file limit is lower).
    public var limit = 0
    /// The most one client address holds (0: no limit).
    public var perClientLimit = 0
    public var refused: [ConnectionRefusal: UInt64] = [:]
    public var closed: [ConnectionClosure: UInt64] = [:]

    public init() {}
}
