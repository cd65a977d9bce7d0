import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A blocking HTTP/1.1 client over one TCP connection, for tests that need control over the
/// bytes: keep-alive reuse, half-sent bodies, invalid UTF-8, huge headers.
final class RawHTTPClient {
    struct Response {
        let status: Int
        let headers: [String: String]
        let body: [UInt8]
        var text: String { String(decoding: body, as: UTF8.self) }
        var json: [String: Any]? { (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] }
        func header(_ name: String) -> String? { headers[name.lowercased()] }
    }

    enum ClientError: Error { case connect(String), closed, timeout, malformed(String) }

    private let fd: Int32
    private var buffer: [UInt8] = []

    /// Connects to the server on 127.0.0.1; from `source` (another loopback address, such as
    /// 127.0.0.3) when given, so that the server sees another client.
    init(port: UInt16, timeout: TimeInterval = 10, from source: String? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if let source { try LoopbackSocket.bind(fd, to: source) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        var tv = timeval(tv_sec: Int(timeout), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        // Not closed here: an initializer that throws once every property is set still runs
        // `deinit`, which closes it. Closing it twice closed whatever descriptor another test's
        // thread had been given that number meanwhile (a server's listening socket, once).
        guard result == 0 else { throw ClientError.connect(String(cString: strerror(errno))) }
    }

    deinit { close(fd) }

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw ClientError.closed }
            offset += n
        }
    }

    /// Sends a request; `Content-Length` is added for a body unless given.
    func request(_ method: String, _ path: String, headers: [(String, String)] = [], body: [UInt8]? = nil) throws -> Response {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if let body, !headers.contains(where: { $0.0.lowercased() == "content-length" }) { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        try send(Array(head.utf8) + (body ?? []))
        return try readResponse()
    }

    func json(_ method: String, _ path: String, _ json: String, headers: [(String, String)] = []) throws -> Response {
        try request(method, path, headers: [("Content-Type", "application/json")] + headers, body: Array(json.utf8))
    }

    private func fill() throws {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n == 0 { throw ClientError.closed }
        if n < 0 { throw errno == EAGAIN || errno == EWOULDBLOCK ? ClientError.timeout : ClientError.closed }
        buffer += chunk[0..<n]
    }

    func readResponse() throws -> Response {
        let (status, headers) = try readHead()
        let length = Int(headers["content-length"] ?? "0") ?? 0
        while buffer.count < length { try fill() }
        let body = Array(buffer[..<length])
        buffer.removeFirst(length)
        return Response(status: status, headers: headers, body: body)
    }

    /// The status line and headers of an answer; its body is read next.
    func readHead() throws -> (status: Int, headers: [String: String]) {
        let separator: [UInt8] = [13, 10, 13, 10]
        var headerEnd: Int?
        while headerEnd == nil {
            if let range = buffer.firstRange(of: separator) { headerEnd = range.lowerBound; break }
            try fill()
        }
        let head = String(decoding: buffer[..<headerEnd!], as: UTF8.self)
        buffer.removeFirst(headerEnd! + 4)
        var lines = head.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else { throw ClientError.malformed(head) }
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return (status, headers)
    }

    /// Reads a chunked body as it arrives (a stream), chunk by chunk, until `enough` says so
    /// about what came so far or the stream ends (`ended` true). Throws `timeout` when nothing
    /// arrives within the socket's timeout, or when `seconds` pass without `enough` (a stream
    /// may send keep-alive comments forever).
    func readChunks(seconds: Double = 20, until enough: ([UInt8]) -> Bool) throws -> (body: [UInt8], ended: Bool) {
        let deadline = Date(timeIntervalSinceNow: seconds)
        var body: [UInt8] = []
        while !enough(body) {
            guard Date() < deadline else { throw ClientError.timeout }
            var lineEnd = buffer.firstRange(of: [13, 10])
            while lineEnd == nil {
                try fill()
                lineEnd = buffer.firstRange(of: [13, 10])
            }
            let sizeText = String(decoding: buffer[..<lineEnd!.lowerBound], as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16) else { throw ClientError.malformed("chunk size '\(sizeText)'") }
            buffer.removeFirst(lineEnd!.upperBound)
            while buffer.count < size + 2 { try fill() }
            if size == 0 { return (body, true) }
            body += buffer[..<size]
            buffer.removeFirst(size + 2)
        }
        return (body, false)
    }

    /// Reads a body that is not chunked (an HTTP/1.0 stream, which ends with the connection)
    /// until `enough` says so about what came so far, or the connection ends (`ended` true).
    func readUntilClosed(seconds: Double = 20, until enough: ([UInt8]) -> Bool) throws -> (body: [UInt8], ended: Bool) {
        let deadline = Date(timeIntervalSinceNow: seconds)
        while !enough(buffer) {
            guard Date() < deadline else { throw ClientError.timeout }
            do { try fill() } catch ClientError.closed { return (buffer, true) }
        }
        return (buffer, false)
    }

    /// Whether the server has closed the connection (reads end of stream).
    func isClosedByServer() -> Bool {
        do { try fill(); return false } catch ClientError.closed { return true } catch { return false }
    }
}
