import CMicroHTTPD
import Foundation

/// An HTTP/1.1 server on libmicrohttpd: epoll with an internal thread pool, keep-alive,
/// request bodies gathered across upload callbacks with a size limit enforced while reading,
/// connection and header limits, per-connection timeouts, and suspended connections for
/// requests answered from another thread.
public final class HTTPServer: @unchecked Sendable {
    // @unchecked Sendable: `daemon` and `listenSocket` are set once in `start` before MHD
    // runs any callback and cleared in `stop`; `suspended` is only touched under `lock`.

    public struct Configuration: Sendable {
        public var host: String = "127.0.0.1"
        /// 0 picks a free port; `port` tells which after `start`.
        public var port: UInt16 = 8080
        /// libmicrohttpd's polling threads (at least 2: one epoll thread stalls at 128 connections).
        public var threads: Int = 4
        public var maxBodyBytes: Int = 8_388_608
        public var maxConnections: Int = 1024
        /// Seconds a connection may stay idle (or half-sent) before it is closed.
        public var connectionTimeout: Int = 30
        /// Memory per connection; it also caps the size of the request headers (431 above it).
        /// libmicrohttpd's default: a larger pool costs a larger clear on every request.
        public var connectionMemoryLimit: Int = 32_768

        public init() {}
    }

    let handler: HTTPRequestHandler
    let configuration: Configuration
    private var daemon: OpaquePointer?
    private var listenSocket: Int32 = -1
    /// The port the server listens on.
    public private(set) var port: UInt16 = 0

    private let lock = NSLock()
    private var suspended: [ObjectIdentifier: (OpaquePointer, RequestState)] = [:]
    private var stopping = false

    public init(configuration: Configuration, handler: HTTPRequestHandler) {
        self.configuration = configuration
        self.handler = handler
    }

    /// Binds, listens, and starts serving.
    public func start() throws {
        listenSocket = try Self.listen(host: configuration.host, port: configuration.port)
        port = try Self.boundPort(listenSocket)
        let flags = MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_USE_EPOLL.rawValue
            | MHD_ALLOW_SUSPEND_RESUME.rawValue | MHD_USE_ERROR_LOG.rawValue
        let context = Unmanaged.passUnretained(self).toOpaque()
        let completed = unsafeBitCast(mhdRequestCompleted as MHD_RequestCompletedCallback, to: UnsafeRawPointer.self)
        let options: [CVarArg] = [
            MHD_OPTION.LISTEN_SOCKET.rawValue, listenSocket,
            MHD_OPTION.THREAD_POOL_SIZE.rawValue, UInt32(max(2, configuration.threads)),
            MHD_OPTION.CONNECTION_LIMIT.rawValue, UInt32(configuration.maxConnections),
            MHD_OPTION.CONNECTION_TIMEOUT.rawValue, UInt32(configuration.connectionTimeout),
            MHD_OPTION.CONNECTION_MEMORY_LIMIT.rawValue, configuration.connectionMemoryLimit,
            MHD_OPTION.NOTIFY_COMPLETED.rawValue, OpaquePointer(completed), OpaquePointer(context),
            MHD_OPTION.END.rawValue,
        ]
        daemon = withVaList(options) { arguments in
            MHD_start_daemon_va(UInt32(flags), 0, nil, nil, mhdAccessHandler, context, arguments)
        }
        guard daemon != nil else {
            close(listenSocket)
            throw HTTPServerError.cannotStart("libmicrohttpd refused to start on \(configuration.host):\(port)")
        }
    }

    /// Stops accepting, answers every suspended request with 503, and shuts down.
    public func stop() {
        lock.lock()
        stopping = true
        let waiting = Array(suspended.values)
        lock.unlock()
        // Suspended connections never time out: resume them all before stopping (platform notes).
        for (connection, state) in waiting {
            state.response = Problem.unavailable("the server is shutting down").response
            resume(connection, state: state)
        }
        if let daemon { MHD_stop_daemon(daemon) }
        daemon = nil
        if listenSocket >= 0 { close(listenSocket) }
        listenSocket = -1
    }

    var isStopping: Bool {
        lock.lock()
        defer { lock.unlock() }
        return stopping
    }

    func noteSuspended(_ connection: OpaquePointer, _ state: RequestState) {
        lock.lock()
        suspended[ObjectIdentifier(state)] = (connection, state)
        lock.unlock()
    }

    func resume(_ connection: OpaquePointer, state: RequestState) {
        lock.lock()
        let wasSuspended = suspended.removeValue(forKey: ObjectIdentifier(state)) != nil
        lock.unlock()
        if wasSuspended { MHD_resume_connection(connection) }
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
