import CMicroHTTPD
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// An answer sent while it is being produced (server-sent events): a status and headers at
/// once, then whatever `write` hands it, until `close` (or the client goes away).
///
/// It is sent one of two ways:
/// - **Its own socket** (a GET, the usual case): the connection is taken out of libmicrohttpd
///   once the request is read (`StreamHandOff`), and `write` sends on the socket at once, from
///   the writer's thread. Bytes the socket cannot take wait in `pending` until `StreamPump` says
///   there is room; the pump also tells when the client goes away. An idle stream costs nothing.
/// - **Through libmicrohttpd** (a HEAD, or when the hand-off fails): MHD pulls the body through
///   a content reader (`mhdStreamRead`). When nothing is waiting, the reader suspends the
///   connection and `write` resumes it.
///
/// `@unchecked Sendable`: every stored property but `status` and `headers` (constants) is only
/// touched under `lock`. The lock is never held while the end handlers run.
public final class ResponseStream: @unchecked Sendable {
    public let status: Int
    public let headers: [(name: String, value: String)]
    private let lock = NSLock()
    /// Bytes written and not yet sent; in socket mode, from `offset` on.
    private var pending: [UInt8] = []
    private var offset = 0
    /// No more writes are taken.
    private var closed = false
    /// The end handlers have run (or are about to).
    private var ended = false
    private var onEnd: (@Sendable () -> Void)?
    /// The HTTP layer's own end handler (the request's log line, the connection count).
    private var completion: (@Sendable () -> Void)?
    /// Through libmicrohttpd: body bytes it has taken.
    private var sent = 0
    /// On its own socket: body bytes written (what the request's log line counts).
    private var body = 0

    // Through libmicrohttpd.
    private var suspended = false
    private var connection: OpaquePointer?
    private weak var server: HTTPServer?

    // Its own socket: `socket` is valid from `detach` until the stream ends (then -1).
    private var socket: Int32 = -1
    /// Handed its own socket (`detach`), for good.
    private var detached = false
    private var token: UInt64 = 0
    private weak var pump: StreamPump?
    private var chunked = false
    /// Since when (uptime ns) the socket has been full, while it is.
    private var fullSince: UInt64?

    public init(status: Int = 200, headers: [(name: String, value: String)]) {
        self.status = status
        self.headers = headers
    }

    /// Sends `bytes` after what was sent before. Returns false once the stream has ended.
    @discardableResult
    public func write(_ bytes: [UInt8]) -> Bool {
        lock.lock()
        guard !closed else {
            lock.unlock()
            return false
        }
        guard socket >= 0 else {
            pending += bytes
            wakeLocked()
            lock.unlock()
            return true
        }
        appendFramed(bytes)
        body += bytes.count
        let endedNow = flushLocked()
        lock.unlock()
        if endedNow { endSoon() }
        return !endedNow
    }

    /// Ends the stream once what was written is sent.
    public func close() {
        lock.lock()
        guard !closed else {
            lock.unlock()
            return
        }
        closed = true
        guard socket >= 0 else {
            wakeLocked()
            lock.unlock()
            return
        }
        if chunked { pending += Self.lastChunk }
        let endedNow = flushLocked()
        lock.unlock()
        if endedNow { endSoon() }
    }

    /// Whether the stream has ended (closed, or the client went away).
    public var isClosed: Bool {
        lock.lock()
        defer { lock.unlock() }
        return closed
    }

    /// Bytes written and not yet sent (a client that stops reading makes this grow, once the
    /// kernel's buffers are full).
    public var pendingBytes: Int {
        lock.lock()
        defer { lock.unlock() }
        return pending.count - offset
    }

    /// Body bytes handed to the connection so far (on its own socket: written to it, less what
    /// was written before the hand-off, which `detach` counts).
    var bytesSent: Int {
        lock.lock()
        defer { lock.unlock() }
        return detached ? body : sent
    }

    /// Calls `handler` once when the stream ends, however it ends.
    public func onEnd(_ handler: @escaping @Sendable () -> Void) {
        lock.lock()
        onEnd = handler
        lock.unlock()
    }

    /// Runs the end handlers, once: the caller's, then the HTTP layer's.
    private func runEndHandlers() {
        lock.lock()
        closed = true
        guard !ended else {
            lock.unlock()
            return
        }
        ended = true
        let handlers = (onEnd, completion)
        onEnd = nil
        completion = nil
        let server = self.server
        lock.unlock()
        server?.streamEnded(self)
        handlers.0?()
        handlers.1?()
    }

    /// Ended by a write or a close, on the writer's thread: the handlers run elsewhere, since
    /// they may call back into whoever is writing (a live query's subscription).
    private func endSoon() {
        DispatchQueue.global().async { self.runEndHandlers() }
    }

    // MARK: Its own socket (StreamHandOff.swift, StreamPump.swift)

    /// Takes the stream to `socket` (a copy of the connection's, libmicrohttpd about to close
    /// its own): `head` goes first, then what was written so far. False when the pump refuses
    /// the socket (the caller closes it and sends the stream through libmicrohttpd instead).
    func detach(socket: Int32, head: [UInt8], chunked: Bool, pump: StreamPump, server: HTTPServer,
                completion: @escaping @Sendable () -> Void) -> Bool {
        lock.lock()
        guard let token = pump.add(self, socket: socket) else {
            lock.unlock()
            return false
        }
        self.socket = socket
        detached = true
        self.token = token
        self.pump = pump
        self.server = server
        self.chunked = chunked
        self.completion = completion
        let written = pending
        pending = head
        appendFramed(written)
        body = written.count
        if closed, chunked { pending += Self.lastChunk }
        let endedNow = flushLocked()
        lock.unlock()
        if endedNow { endSoon() }
        return true
    }

    /// What the pump saw on the socket: the client went away, or there is room again.
    func socketEvent(_ events: UInt32) {
        lock.lock()
        guard socket >= 0 else {
            lock.unlock()
            return
        }
        var endedNow = false
        if events & (EPOLLIN.rawValue | EPOLLRDHUP.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0 {
            endedNow = readLocked()
        }
        if !endedNow, events & EPOLLOUT.rawValue != 0 {
            endedNow = flushLocked()
        }
        lock.unlock()
        if endedNow { runEndHandlers() }
    }

    /// Ends the stream if its socket has been full since before `deadline` (uptime ns): a client
    /// that stopped reading, as libmicrohttpd's connection timeout would have closed it.
    func abortIfStalled(since deadline: UInt64) {
        lock.lock()
        let stalled = socket >= 0 && (fullSince.map { $0 < deadline } ?? false)
        let endedNow = stalled && releaseSocketLocked()
        lock.unlock()
        if endedNow { runEndHandlers() }
    }

    /// Ends the stream at once, whatever waits (the server stops).
    func abort() {
        lock.lock()
        let endedNow = socket >= 0 && releaseSocketLocked()
        lock.unlock()
        if endedNow { runEndHandlers() }
    }

    private static let lastChunk = Array("0\r\n\r\n".utf8)

    /// Appends `bytes` as they go on the wire: one chunk each when the body is chunked.
    private func appendFramed(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        if chunked {
            pending += Array(String(bytes.count, radix: 16).utf8)
            pending += [13, 10]
            pending += bytes
            pending += [13, 10]
        } else {
            pending += bytes
        }
    }

    /// Sends what waits, as far as the socket takes it. True when the stream ended here (all
    /// sent after `close`, or the socket failed).
    private func flushLocked() -> Bool {
        guard socket >= 0 else { return false }
        while offset < pending.count {
            let count = pending.withUnsafeBytes { bytes in
                Glibc.send(socket, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            }
            if count > 0 {
                offset += count
                continue
            }
            if count < 0, errno == EINTR { continue }
            if count < 0, errno == EAGAIN || errno == EWOULDBLOCK {
                if fullSince == nil {
                    fullSince = DispatchTime.now().uptimeNanoseconds
                    pump?.watchRoom(true, token: token, socket: socket)
                }
                // A client reading slowly: what was sent need not be kept.
                if offset >= 65_536 {
                    pending.removeFirst(offset)
                    offset = 0
                }
                return false
            }
            return releaseSocketLocked()
        }
        pending = []
        offset = 0
        if fullSince != nil {
            fullSince = nil
            pump?.watchRoom(false, token: token, socket: socket)
        }
        return closed ? releaseSocketLocked() : false
    }

    /// Reads what the client sent (nothing is expected; it is dropped). True when the client
    /// has gone (the stream ended here).
    private func readLocked() -> Bool {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 2048) { buffer in
            // Bounded: a client that keeps sending is read again on the next wake.
            for _ in 0..<16 {
                let count = Glibc.recv(socket, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT))
                if count > 0 { continue }
                if count < 0, errno == EINTR { continue }
                if count < 0, errno == EAGAIN || errno == EWOULDBLOCK { return false }
                return releaseSocketLocked()
            }
            return false
        }
    }

    /// Stops watching the socket and closes it. Always true (the stream has ended).
    private func releaseSocketLocked() -> Bool {
        pump?.remove(token: token, socket: socket)
        // The end of the body for a client reading to the end of the connection, at once even
        // if libmicrohttpd has not yet closed its copy of the socket.
        _ = shutdown(socket, Int32(SHUT_WR))
        _ = Glibc.close(socket)
        socket = -1
        closed = true
        pending = []
        offset = 0
        return true
    }

    // MARK: Through libmicrohttpd (MHDCallbacks.swift)

    private func wakeLocked() {
        guard suspended, let connection, let server else { return }
        suspended = false
        server.resumeStream(connection)
    }

    func attach(_ connection: OpaquePointer, server: HTTPServer) {
        lock.lock()
        self.connection = connection
        self.server = server
        lock.unlock()
    }

    /// Copies up to `max` waiting bytes into `buffer`: their count, 0 after suspending the
    /// connection (nothing waits yet), or -1 at the end of the stream.
    func read(into buffer: UnsafeMutablePointer<CChar>, max: Int) -> Int {
        lock.lock()
        defer { lock.unlock() }
        if !pending.isEmpty {
            let count = min(max, pending.count)
            pending.withUnsafeBufferPointer { bytes in
                guard let base = bytes.baseAddress else { return }
                buffer.withMemoryRebound(to: UInt8.self, capacity: count) { $0.update(from: base, count: count) }
            }
            pending.removeFirst(count)
            sent += count
            return count
        }
        if closed { return -1 }
        guard let connection, let server, server.suspendStream(connection) else { return -1 }
        suspended = true
        return 0
    }

    /// libmicrohttpd is done with the stream (sent, failed, or the client left).
    func mhdEnded() {
        runEndHandlers()
    }
}
