import CMicroHTTPD
import Foundation

/// An HTTP/1.1 server on libmicrohttpd: epoll with an internal thread pool, keep-alive,
/// request bodies gathered across upload callbacks with a size limit enforced while reading,
/// connection and header limits, per-connection timeouts, and suspended connections for
/// requests answered from another thread.
public final class HTTPServer: @unchecked Sendable {
    // @unchecked Sendable: `daemon`, `connections` and `fileLimit` are set in `start` before MHD
    // runs any callback (and `connections` never changes after); afterwards `daemon`,
    // `suspended`, `stopping`, `inFlightRequests` and `inFlightBodyBytes` are only touched under
    // `lock` (whose condition wakes a waiting stop).

    public struct Configuration: Sendable {
        public var host: String = "127.0.0.1"
        /// 0 picks a free port; `port` tells which after `start`.
        public var port: UInt16 = 8080
        /// libmicrohttpd's polling threads (at least 2: one epoll thread stalls at 128 connections).
        public var threads: Int = 4
        public var maxBodyBytes: Int = 8_388_608
        /// Request bodies held in memory across all connections at once; a request that would
        /// pass it is answered 503 with Retry-After (its body discarded as it arrives).
        public var maxInflightBodyBytes: Int = 268_435_456
        /// Seconds one request body may take to arrive, however it trickles in (the connection
        /// timeout only bounds the pauses): past it the connection is closed.
        public var bodyTimeout: Int = 60
        /// Connections held at once. Lowered at start to what the file limit allows (raised first
        /// to the hard limit); `connectionLimit` tells what is in force. At it, a new connection
        /// takes the place of the one that has waited longest for a request.
        public var maxConnections: Int = 16_384
        /// Connections one client address may hold (0: no limit, as behind a reverse proxy, where
        /// every client has the proxy's address). More are closed as they are accepted.
        public var maxConnectionsPerClient: Int = 64
        /// Seconds a request's head may take to arrive in full, from its first byte.
        public var headerTimeout: Int = 10
        /// Seconds a connection may stay idle (or half-sent) before it is closed.
        public var connectionTimeout: Int = 30
        /// Memory per connection; it also caps the size of the request headers (431 above it).
        /// libmicrohttpd's default: a larger pool costs a larger clear on every request.
        public var connectionMemoryLimit: Int = 32_768
        /// Streams leave libmicrohttpd with their connections (`StreamHandOff.swift`). Off only to
        /// compare the two ways of sending a stream (`serve` turns it off when the environment
        /// has MANAGEDSTORE_STREAMS_THROUGH_LIBMICROHTTPD=1).
        public var handsOffStreams = true
        /// Where the HTTP layer's own warnings go (a client at its connection limit), at most one
        /// line every 10 seconds; nowhere when nil.
        public var warn: (@Sendable (String) -> Void)?

        public init() {}
    }

    let handler: HTTPRequestHandler
    let configuration: Configuration
    private var daemon: OpaquePointer?
    /// The port the server listens on.
    public private(set) var port: UInt16 = 0
    /// The connection limits in force, once started.
    private(set) var connections: ConnectionGuard?
    /// File descriptors the process may hold, once started (raised to the hard limit).
    public private(set) var fileLimit = 0

    private let lock = NSCondition()
    private var suspended: [ObjectIdentifier: (connection: OpaquePointer, deferred: DeferredResponse)] = [:]
    private var stopping = false
    /// Requests MHD has begun and not yet reported complete (sent, failed or timed out).
    private var inFlightRequests = 0
    private var inFlightBodyBytes = 0
    /// Streams being sent (server-sent events): a stop ends them.
    private var streams: [ObjectIdentifier: ResponseStream] = [:]
    /// Sends the streams taken out of libmicrohttpd (nil when epoll could not be had: they then
    /// stay in libmicrohttpd). Set in `start`.
    private(set) var streamPump: StreamPump?

    public init(configuration: Configuration, handler: HTTPRequestHandler) {
        self.configuration = configuration
        self.handler = handler
    }

    /// Binds, listens, and starts serving.
    public func start() throws {
        // MHD owns the socket once started (MHD_stop_daemon closes it).
        let listenSocket = try Self.listen(host: configuration.host, port: configuration.port)
        port = try Self.boundPort(listenSocket)
        // MHD_USE_TURBO: libmicrohttpd then closes a connection without shutting its socket down
        // first, which handing a stream its socket needs (StreamHandOff.swift); it also tries
        // reads and writes before asking epoll.
        let flags = MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_USE_EPOLL.rawValue
            | MHD_ALLOW_SUSPEND_RESUME.rawValue | MHD_USE_ERROR_LOG.rawValue | MHD_USE_TURBO.rawValue
        let context = Unmanaged.passUnretained(self).toOpaque()
        let completed = unsafeBitCast(mhdRequestCompleted as MHD_RequestCompletedCallback, to: UnsafeRawPointer.self)
        let notify = unsafeBitCast(mhdConnectionNotice as MHD_NotifyConnectionCallback, to: UnsafeRawPointer.self)
        let log = unsafeBitCast(mhdLog as MHD_LogCallback, to: UnsafeRawPointer.self)
        let threads = max(2, configuration.threads)
        let limits = connectionLimits(threads: threads)
        let connections = ConnectionGuard(limits: limits.guarded, warn: configuration.warn ?? { _ in })
        self.connections = connections
        let options: [CVarArg] = [
            // First, as libmicrohttpd asks, so that no message goes elsewhere.
            MHD_OPTION.EXTERNAL_LOGGER.rawValue, OpaquePointer(log), OpaquePointer(context),
            MHD_OPTION.LISTEN_SOCKET.rawValue, listenSocket,
            MHD_OPTION.THREAD_POOL_SIZE.rawValue, UInt32(clamping: threads),
            MHD_OPTION.CONNECTION_LIMIT.rawValue, UInt32(clamping: limits.libmicrohttpd),
            MHD_OPTION.CONNECTION_TIMEOUT.rawValue, UInt32(clamping: configuration.connectionTimeout),
            MHD_OPTION.CONNECTION_MEMORY_LIMIT.rawValue, configuration.connectionMemoryLimit,
            MHD_OPTION.NOTIFY_COMPLETED.rawValue, OpaquePointer(completed), OpaquePointer(context),
            MHD_OPTION.NOTIFY_CONNECTION.rawValue, OpaquePointer(notify), OpaquePointer(context),
            MHD_OPTION.END.rawValue,
        ]
        streamPump = configuration.handsOffStreams ? StreamPump(stallSeconds: configuration.connectionTimeout) : nil
        streamPump?.start()
        daemon = withVaList(options) { arguments in
            MHD_start_daemon_va(UInt32(flags), 0, mhdAcceptPolicy, context, mhdAccessHandler, context, arguments)
        }
        guard daemon != nil else {
            streamPump?.stop()
            close(listenSocket)
            throw HTTPServerError.cannotStart("libmicrohttpd refused to start on \(configuration.host):\(port)")
        }
        // A few looks a second: a head's deadline is kept to within one of them.
        connections.startSweeping(every: .milliseconds(min(500, max(100, configuration.headerTimeout * 50))))
    }

    /// The limits of `configuration` within what the file limit allows: ours, and the one given
    /// to libmicrohttpd, which is higher so that it never stops accepting before we decide
    /// (it splits its limit evenly between its threads, and a thread at its share stops
    /// accepting, while the kernel need not hand connections to threads evenly; connections
    /// being closed to make room still hold their place until closed).
    private func connectionLimits(threads: Int) -> (guarded: ConnectionGuard.Limits, libmicrohttpd: Int) {
        fileLimit = FileDescriptorLimit.raised()
        // The store's files and connections, the log, the listening socket: a few dozen.
        let forConnections = max(64, fileLimit - 256)
        let total = max(1, min(configuration.maxConnections, forConnections * 8 / 9))
        let limits = ConnectionGuard.Limits(total: total, perClient: max(0, configuration.maxConnectionsPerClient),
                                            headerTimeout: .seconds(configuration.headerTimeout),
                                            idleTimeout: .seconds(configuration.connectionTimeout))
        return (limits, min(forConnections, total + total / 8 + threads))
    }

    /// The most connections held at once (0 before `start`).
    public var connectionLimit: Int { connections?.limits.total ?? 0 }

    /// Connections open, refused and closed so far.
    public var connectionStatistics: ConnectionStatistics { connections?.statistics ?? ConnectionStatistics() }

    // MARK: Stopping

    /// Stops accepting connections: a new connection is closed as soon as it is accepted.
    /// Requests already received are still answered; new requests on open connections are
    /// answered 503 (with `Connection: close`).
    public func stopAccepting() {
        lock.lock()
        defer { lock.unlock() }
        guard !stopping else { return }
        // From here the accept policy closes every new connection as soon as MHD accepts it;
        // MHD_stop_daemon closes the listening socket. MHD_quiesce_daemon is not used: with
        // epoll and a thread pool it races its own workers over removing the listening socket
        // from their epoll sets, and aborts the process when it loses (MHD_epoll's unguarded
        // MHD_PANIC in 0.9.75; CI died of it once).
        stopping = true
    }

    /// Stops the server: no new connections, then waits until `deadline` for every request
    /// already received to be answered and sent (a suspended write is answered by its
    /// queue), then stops libmicrohttpd. A request still waiting at the deadline has its
    /// connection closed without an answer: its outcome is unknown, and nothing untrue is said.
    public func stop(deadline: DispatchTime = .now() + 10) {
        stopAccepting()
        // Streams never end by themselves: end them first, so that they count as answered.
        lock.lock()
        let open = Array(streams.values)
        lock.unlock()
        open.forEach { $0.close() }
        lock.lock()
        while (!suspended.isEmpty || inFlightRequests > 0 || !streams.isEmpty) && DispatchTime.now() < deadline {
            _ = lock.wait(until: Date(timeIntervalSinceNow: min(0.05, Self.seconds(until: deadline))))
        }
        let abandoned = suspended.values.map(\.deferred)
        lock.unlock()
        // Suspended connections never time out, and MHD must not be stopped with any (platform
        // notes): resume the last ones, to be closed, and give MHD a moment to close them.
        abandoned.forEach { $0.abandon() }
        lock.lock()
        let grace = DispatchTime.now() + 0.5
        while !suspended.isEmpty && DispatchTime.now() < grace { _ = lock.wait(until: Date(timeIntervalSinceNow: 0.01)) }
        // Once `daemon` is nil no resume calls into MHD (`resume` checks it under the lock), so
        // none can overlap MHD_stop_daemon. The lock is let go first: MHD's threads call our
        // callbacks, which take it, until MHD_stop_daemon has joined them.
        let stopping = daemon
        daemon = nil
        lock.unlock()
        if let stopping { MHD_stop_daemon(stopping) }
        // Streams whose clients did not take their last bytes by the deadline are cut off.
        streamPump?.stop()
        connections?.stopSweeping()
    }

    private static func seconds(until deadline: DispatchTime) -> Double {
        let now = DispatchTime.now().uptimeNanoseconds
        return deadline.uptimeNanoseconds > now ? Double(deadline.uptimeNanoseconds - now) / 1e9 : 0
    }

    var isStopping: Bool {
        lock.lock()
        defer { lock.unlock() }
        return stopping
    }

    // MARK: Bookkeeping (called from MHDCallbacks.swift)

    func requestBegan() {
        lock.lock()
        inFlightRequests += 1
        lock.unlock()
    }

    func requestEnded(_ state: RequestState) {
        lock.lock()
        inFlightRequests -= 1
        inFlightBodyBytes -= state.reservedBodyBytes
        state.reservedBodyBytes = 0
        lock.broadcast()
        lock.unlock()
    }

    /// Reserves `bytes` more of the in-flight body budget for `state`; false when that would pass it.
    func reserveBody(_ bytes: Int, for state: RequestState) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard inFlightBodyBytes + bytes <= configuration.maxInflightBodyBytes else { return false }
        inFlightBodyBytes += bytes
        state.reservedBodyBytes += bytes
        return true
    }

    /// Gives back what `state` reserved (its body was consumed, or discarded).
    func releaseBody(of state: RequestState) {
        lock.lock()
        inFlightBodyBytes -= state.reservedBodyBytes
        state.reservedBodyBytes = 0
        lock.unlock()
    }

    func noteSuspended(_ connection: OpaquePointer, _ deferred: DeferredResponse, state: RequestState) {
        lock.lock()
        suspended[ObjectIdentifier(state)] = (connection, deferred)
        lock.unlock()
    }

    /// Resumes a suspended connection whose answer is ready. Under the lock, so that it never
    /// overlaps MHD_stop_daemon (libmicrohttpd 0.9.75 can abort the process when a connection is
    /// resumed while the daemon stops).
    func resume(_ connection: OpaquePointer, state: RequestState) {
        lock.lock()
        defer { lock.unlock() }
        guard suspended.removeValue(forKey: ObjectIdentifier(state)) != nil, daemon != nil else { return }
        MHD_resume_connection(connection)
        lock.broadcast()
    }

    // MARK: Paused uploads

    /// Suspends a connection whose body stream has no room (on its MHD thread). Under the lock,
    /// like `resumeUpload`, so that a pause and a resume never interleave. Recorded with the
    /// suspended answers, so that a stop closes it.
    func pauseUpload(_ connection: OpaquePointer, state: RequestState) {
        lock.lock()
        defer { lock.unlock() }
        guard !state.uploadPaused, daemon != nil else { return }
        state.uploadPaused = true
        suspended[ObjectIdentifier(state)] = (connection, DeferredResponse(state: state, connection: connection, server: self))
        MHD_suspend_connection(connection)
    }

    /// Lets a paused upload go on; does nothing when it is not paused (a late or repeated call).
    func resumeUpload(state: RequestState) {
        lock.lock()
        defer { lock.unlock() }
        guard state.uploadPaused else { return }
        state.uploadPaused = false
        guard let paused = suspended.removeValue(forKey: ObjectIdentifier(state)), daemon != nil else { return }
        MHD_resume_connection(paused.connection)
        lock.broadcast()
    }

    func isUploadPaused(_ state: RequestState) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        return state.uploadPaused
    }

    // MARK: Streams

    func noteStream(_ stream: ResponseStream) {
        lock.lock()
        streams[ObjectIdentifier(stream)] = stream
        lock.unlock()
    }

    func streamEnded(_ stream: ResponseStream) {
        lock.lock()
        streams[ObjectIdentifier(stream)] = nil
        lock.broadcast()
        lock.unlock()
    }

    /// Suspends a streaming connection that has nothing to send (from its content reader, on
    /// MHD's thread). False once the server stops: the stream then ends instead.
    func suspendStream(_ connection: OpaquePointer) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard daemon != nil else { return false }
        MHD_suspend_connection(connection)
        return true
    }

    /// Resumes a streaming connection that has something to send again.
    func resumeStream(_ connection: OpaquePointer) {
        lock.lock()
        defer { lock.unlock() }
        guard daemon != nil else { return }
        MHD_resume_connection(connection)
    }

    // MARK: Sockets

    private static func listen(host: String, port: UInt16) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HTTPServerError.cannotStart("socket: \(String(cString: strerror(errno)))") }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host == "localhost" ? "127.0.0.1" : host, &address.sin_addr) == 1 else {
            close(fd)
            throw HTTPServerError.cannotStart("not an IPv4 address: \(host)")
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, Glibc.listen(fd, 1024) == 0 else {
            let message = String(cString: strerror(errno))
            close(fd)
            throw HTTPServerError.cannotStart("cannot listen on \(host):\(port): \(message)")
        }
        return fd
    }

    private static func boundPort(_ fd: Int32) throws -> UInt16 {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard ok == 0 else { throw HTTPServerError.cannotStart("getsockname failed") }
        return UInt16(bigEndian: address.sin_port)
    }
}

public enum HTTPServerError: Error, CustomStringConvertible {
    case cannotStart(String)
    public var description: String {
        switch self {
        case .cannotStart(let message): return message
        }
    }
}
