import CMicroHTTPD
import Foundation
#if canImport(Glibc)
import Glibc
#endif

// Taking a streaming answer's connection out of libmicrohttpd (why: `StreamPump`).
//
// How: the access handler copies the connection's socket (`dup`), gives the copy to the stream
// with the answer's head, and returns MHD_NO, which makes libmicrohttpd close its own copy only:
// the daemon runs with MHD_USE_TURBO, without which it would first shut the socket down
// (`shutdown(SHUT_WR)` acts on the socket, not on one descriptor, and would end the stream too).
// libmicrohttpd takes the socket out of its epoll set before closing its copy (0.9.75's
// `MHD_cleanup_connections`), so it never hears of the socket again. The client sees one HTTP
// answer: the head written here (`Connection: close`, as the connection ends with the stream),
// then the body, chunked for HTTP/1.1.

/// Hands `stream` its connection's socket. False when it cannot (the caller then sends the
/// stream through libmicrohttpd); true when the access handler must return MHD_NO.
func mhdHandOff(_ connection: OpaquePointer, _ stream: ResponseStream, state: RequestState, server: HTTPServer) -> Bool {
    guard state.method == "GET", let pump = server.streamPump else { return false }
    let socket = managedstore_connection_socket(connection)
    guard socket >= 0 else { return false }
    let copy = fcntl(socket, F_DUPFD_CLOEXEC, 0)
    guard copy >= 0 else { return false }
    // Each event goes out as it is written, whatever libmicrohttpd left set: no Nagle delay
    // (a second small event waiting up to 40 ms for the first one's delayed ACK), no cork.
    var on: Int32 = 1, off: Int32 = 0
    setsockopt(copy, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
    setsockopt(copy, Int32(IPPROTO_TCP), TCP_CORK, &off, socklen_t(MemoryLayout<Int32>.size))
    let address = ClientAddress(managedstore_connection_address(connection))
    // Counted before libmicrohttpd reports its copy closed: the client's count never dips.
    server.connections?.streamHandedOff(from: address)
    state.sentStatus = stream.status
    state.sentStream = stream
    state.handedOff = true
    let chunked = !state.isHTTP10
    let head = streamHead(stream, requestID: state.id, chunked: chunked)
    server.noteStream(stream)
    let taken = stream.detach(socket: copy, head: head, chunked: chunked, pump: pump, server: server) { [weak server] in
        // The request's log line and metrics say how the stream went, once it has.
        server?.connections?.streamEnded(from: address)
        server?.handler.requestCompleted(state.completed(at: DispatchTime.now().uptimeNanoseconds))
    }
    guard taken else {
        close(copy)
        server.connections?.streamEnded(from: address)
        server.streamEnded(stream)
        state.sentStatus = nil
        state.sentStream = nil
        state.handedOff = false
        return false
    }
    return true
}

/// The answer's status line and headers, as libmicrohttpd would have sent them.
private func streamHead(_ stream: ResponseStream, requestID: String, chunked: Bool) -> [UInt8] {
    let reason = MHD_get_reason_phrase_for(UInt32(stream.status)).map { String(cString: $0) } ?? ""
    var head = "HTTP/1.1 \(stream.status) \(reason)\r\nDate: \(httpDate())\r\n"
    for (name, value) in stream.headers { head += "\(name): \(value)\r\n" }
    head += "Request-Id: \(requestID)\r\n"
    if chunked { head += "Transfer-Encoding: chunked\r\n" }
    head += "Connection: close\r\n\r\n"
    return Array(head.utf8)
}

/// Now, as an HTTP date (RFC 9110 5.6.7): `Mon, 07 Dec 2026 15:04:05 GMT`.
private func httpDate() -> String {
    var now = time(nil)
    var parts = tm()
    gmtime_r(&now, &parts)
    let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
    return "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
        + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
}

/// libmicrohttpd's error log, to stderr as before, less the note it makes each time the access
/// handler returns MHD_NO: the handler does that only to close a connection on purpose (a
/// stream handed off, a body past its time limit, a request abandoned at a stop), not for an
/// error.
func mhdLog(_ context: UnsafeMutableRawPointer?, _ format: UnsafePointer<CChar>?, _ arguments: CVaListPointer?) {
    guard let format, let arguments else { return }
    // Formatted first: libmicrohttpd passes its messages as arguments of "%s\n".
    withUnsafeTemporaryAllocation(of: CChar.self, capacity: 1024) { line in
        guard let base = line.baseAddress else { return }
        let length = vsnprintf(base, line.count, format, arguments)
        guard length > 0, strncmp(base, "Application reported internal error", 35) != 0 else { return }
        _ = Glibc.write(2, base, min(Int(length), line.count - 1))
    }
}
