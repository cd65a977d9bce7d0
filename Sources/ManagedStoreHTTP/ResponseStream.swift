import CMicroHTTPD
import Foundation

/// An answer sent while it is being produced (server-sent events): a status and headers at
/// once, then whatever `write` hands it, until `close` (or the client goes away).
///
/// libmicrohttpd pulls the body through a content reader (`mhdStreamRead`). When nothing is
/// waiting, the reader suspends the connection (no thread waits, no busy loop) and `write`
/// resumes it. Both happen under `lock`, so a write never races the decision to suspend.
///
/// `@unchecked Sendable`: `pending`, `closed`, `suspended` and `connection` are only touched
/// under `lock`.
public final class ResponseStream: @unchecked Sendable {
    public let status: Int
    public let headers: [(name: String, value: String)]
    private let lock = NSLock()
    private var pending: [UInt8] = []
    private var closed = false
    private var suspended = false
    private var connection: OpaquePointer?
    private weak var server: HTTPServer?
    private var onEnd: (@Sendable () -> Void)?
    private var sent = 0

    public init(status: Int = 200, headers: [(name: String, value: String)]) {
        self.status = status
        self.headers = headers
    }

    /// Sends `bytes` after what was sent before. Returns false once the stream has ended.
    @discardableResult
    public func write(_ bytes: [UInt8]) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard !closed else { return false }
        pending += bytes
        wakeLocked()
        return true
    }

    /// Ends the stream once what was written is sent.
    public func close() {
        lock.lock()
        defer { lock.unlock() }
        closed = true
        wakeLocked()
    }

    /// Whether the stream has ended (closed, or the client went away).
    public var isClosed: Bool {
        lock.lock()
        defer { lock.unlock() }
        return closed
    }

    /// Bytes written and not yet taken by libmicrohttpd (a client that stops reading makes
    /// this grow).
    public var pendingBytes: Int {
        lock.lock()
        defer { lock.unlock() }
        return pending.count
    }

    /// Bytes libmicrohttpd has taken to send so far.
    var bytesSent: Int {
        lock.lock()
        defer { lock.unlock() }
        return sent
    }

    /// Calls `handler` once when the stream ends, however it ends.
    public func onEnd(_ handler: @escaping @Sendable () -> Void) {
        lock.lock()
        onEnd = handler
        lock.unlock()
    }

    private func wakeLocked() {
        guard suspended, let connection, let server else { return }
        suspended = false
        server.resumeStream(connection)
    }

    // MARK: Called from MHDCallbacks.swift

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
    func ended() {
        lock.lock()
        closed = true
        let handler = onEnd
        onEnd = nil
        let server = self.server
        lock.unlock()
        server?.streamEnded(self)
        handler?()
    }
}
