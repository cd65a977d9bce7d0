import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Requests to a running server for the commands that go through its API (`import` and
/// `export` with `--url`, `healthcheck`): one request per connection (`Connection: close`), the
/// answer read to its end. A plain socket: URLSession's Linux build needs libcurl, which the
/// container image does not carry.
struct ServerClient {
    let target: HTTPProbe.Target
    let token: String?
    /// Seconds each send or receive may wait.
    var timeout: Double = 60

    struct Answer {
        let status: Int
        let body: [UInt8]
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    /// `method path`, with a body sent chunked as `nextChunk` gives it (nil: the end).
    func send(_ method: String, _ path: String, contentType: String? = nil,
              body nextChunk: (() throws -> [UInt8]?)? = nil) throws -> Answer {
        let fd = try HTTPProbe.connect(to: target, timeout: timeout)
        defer { close(fd) }
        var head = "\(method) \(path) HTTP/1.1\r\nHost: \(target.host):\(target.port)\r\nConnection: close\r\n"
        if let token { head += "Authorization: Bearer \(token)\r\n" }
        if let contentType { head += "Content-Type: \(contentType)\r\n" }
        if nextChunk != nil { head += "Transfer-Encoding: chunked\r\n" }
        try HTTPProbe.sendAll(fd, Array((head + "\r\n").utf8))
        if let nextChunk {
            while let chunk = try nextChunk(), !chunk.isEmpty {
                try HTTPProbe.sendAll(fd, Array((String(chunk.count, radix: 16) + "\r\n").utf8) + chunk + Array("\r\n".utf8))
            }
            try HTTPProbe.sendAll(fd, Array("0\r\n\r\n".utf8))
        }
        return try Self.parse(HTTPProbe.receiveAll(fd))
    }

    /// The status and body of a whole answer (a chunked body decoded).
    static func parse(_ bytes: [UInt8]) throws(HTTPProbe.Failure) -> Answer {
        let separator = Array("\r\n\r\n".utf8)
        guard let end = bytes.indices.first(where: { bytes[$0...].starts(with: separator) }) else { throw .badAnswer }
        let head = String(decoding: bytes[..<end], as: UTF8.self).split(separator: "\r\n")
        let fields = head.first?.split(separator: " ") ?? []
        guard fields.count >= 2, fields[0].hasPrefix("HTTP/"), let status = Int(fields[1]) else { throw .badAnswer }
        var body = Array(bytes[(end + separator.count)...])
        let chunked = head.dropFirst().contains { $0.lowercased().hasPrefix("transfer-encoding:") && $0.lowercased().contains("chunked") }
        if chunked { body = try dechunk(body) }
        return Answer(status: status, body: body)
    }

    private static func dechunk(_ bytes: [UInt8]) throws(HTTPProbe.Failure) -> [UInt8] {
        var out: [UInt8] = [], i = 0
        while i < bytes.count {
            guard let lineEnd = bytes[i...].firstIndex(of: UInt8(ascii: "\r")),
                  let size = Int(String(decoding: bytes[i..<lineEnd], as: UTF8.self).split(separator: ";").first ?? "", radix: 16),
                  lineEnd + 2 + size <= bytes.count else { throw .badAnswer }
            if size == 0 { return out }
            out += bytes[(lineEnd + 2)..<(lineEnd + 2 + size)]
            i = lineEnd + 2 + size + 2
        }
        return out
    }
}
