// A live query's server-sent events, read over a plain socket: on Linux, URLSession (and so the
// generated client's transport) hands over a body only once it has ended, and a live query's
// never ends. The request is the one the generated client would send; the events are decoded
// as the contract says (`event:`, `id:`, one `data:` line of JSON).
import Foundation
#if canImport(Glibc)
import Glibc
#endif

struct LiveEvent {
    let kind: String
    let id: String
    let data: [String: Any]
}

final class LiveQueryReader {
    private let fd: Int32
    private var buffer: [UInt8] = []
    private var body: [UInt8] = []  // de-chunked

    /// Opens `GET path` on the server at `base` (127.0.0.1) and reads the answer's head.
    init(base: URL, path: String) throws {
        guard let port = base.port else { throw RoundFailure(description: "no port in \(base)") }
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RoundFailure(description: "socket: \(errno)") }
        var timeout = timeval(tv_sec: 30, tv_usec: 0)  // bounded: a read waits 30 s at most
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw RoundFailure(description: "connect to \(base): \(errno)") }
        let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nAccept: text/event-stream\r\n\r\n".utf8)
        guard write(fd, request, request.count) == request.count else { throw RoundFailure(description: "write: \(errno)") }
        let head = try line(until: [13, 10, 13, 10], in: .socket)
        let text = String(decoding: head, as: UTF8.self)
        try expect(text.hasPrefix("HTTP/1.1 200") && text.lowercased().contains("content-type: text/event-stream")
                   && text.lowercased().contains("transfer-encoding: chunked"), "the live query answered \(text)")
    }

    deinit { close(fd) }

    /// The next event (keep-alive comments skipped).
    func next() throws -> LiveEvent {
        var fields: [String: String] = [:]
        while true {
            let raw = try line(until: [10], in: .body)
            let text = String(decoding: raw, as: UTF8.self)
            if text.isEmpty {
                guard let kind = fields["event"], let id = fields["id"], let data = fields["data"] else { continue }
                let object = try JSONSerialization.jsonObject(with: Data(data.utf8)) as? [String: Any]
                return LiveEvent(kind: kind, id: id, data: object ?? [:])
            }
            if text.hasPrefix(":") { continue }
            let parts = text.split(separator: ":", maxSplits: 1).map(String.init)
            fields[parts[0]] = parts.count > 1 ? String(parts[1].drop { $0 == " " }) : ""
        }
    }

    /// The ops of the diffs up to the event whose id is `token` or later (a write's History-Token).
    func ops(through token: String) throws -> [[String: Any]] {
        var ops: [[String: Any]] = []
        while true {
            let event = try next()
            try expect(event.kind == "diff" || event.kind == "progress", "the live query sent \(event.kind): \(event.data)")
            ops += event.data["ops"] as? [[String: Any]] ?? []
            if let id = Int(event.id), let wanted = Int(token), id >= wanted { return ops }
        }
    }

    /// One chunk of the chunked body into `body`.
    private func readChunk() throws {
        let sizeLine = String(decoding: try line(until: [13, 10], in: .socket), as: UTF8.self)
        guard let size = Int(sizeLine.split(separator: ";")[0], radix: 16), size > 0 else {
            throw RoundFailure(description: "the live query's stream ended")
        }
        while buffer.count < size + 2 { try fill() }
        body += buffer[0..<size]
        buffer.removeFirst(size + 2)
    }

    private func fill() throws {
        var bytes = [UInt8](repeating: 0, count: 4096)
        let n = read(fd, &bytes, bytes.count)
        guard n > 0 else { throw RoundFailure(description: "the live query's stream ended or timed out (\(n), errno \(errno))") }
        buffer += bytes[0..<n]
    }

    private enum Source { case socket, body }

    /// The bytes up to `separator` (taken with it) of what was read from the socket, or of the
    /// de-chunked body; reads more as needed.
    private func line(until separator: [UInt8], in source: Source) throws -> [UInt8] {
        while true {
            let storage = source == .socket ? buffer : body
            if let end = Self.find(separator, in: storage) {
                let found = Array(storage[0..<end])
                if source == .socket { buffer.removeFirst(end + separator.count) } else { body.removeFirst(end + separator.count) }
                return found
            }
            if source == .socket { try fill() } else { try readChunk() }
        }
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for i in 0...(haystack.count - needle.count) where haystack[i..<(i + needle.count)].elementsEqual(needle) { return i }
        return nil
    }
}
