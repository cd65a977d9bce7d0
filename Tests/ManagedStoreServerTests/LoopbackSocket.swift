import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A bare TCP connection to a test server from a loopback address of the test's choice: for
/// clients that open connections and send nothing, or send a head a line at a time.
final class LoopbackSocket {
    enum Failure: Error { case socket(String) }

    let fd: Int32

    init(port: UInt16, from source: String) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure.socket("socket: \(String(cString: strerror(errno)))") }
        try Self.bind(fd, to: source)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        // Closed by deinit, which runs once every property is set, even when this throws.
        guard result == 0 else { throw Failure.socket("connect from \(source): \(String(cString: strerror(errno)))") }
    }

    deinit { close(fd) }

    /// Binds `fd` to `source` with a port the system picks.
    static func bind(_ fd: Int32, to source: String) throws {
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        guard inet_pton(AF_INET, source, &local.sin_addr) == 1 else { throw Failure.socket("not an IPv4 address: \(source)") }
        let bound = withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { throw Failure.socket("bind to \(source): \(String(cString: strerror(errno)))") }
    }

    /// Sends `text`; false when the server has closed the connection.
    @discardableResult
    func send(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
    }

    /// Whether the server has closed the connection (it reads as ended or reset), without waiting.
    var isClosedByServer: Bool {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, 0) == 1 else { return false }
        var byte: UInt8 = 0
        let n = recv(fd, &byte, 1, Int32(MSG_PEEK) | Int32(MSG_DONTWAIT))
        return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
    }

    /// Raises this process's open-file limit to its hard limit: a test that holds hundreds of
    /// connections must not run out on a machine whose soft limit is 1,024.
    static func raiseFileLimit() {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
        limit.rlim_cur = limit.rlim_max
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }
}

extension LoopbackSocket {
    /// Sends a GET and reads its answer's status (nil when the connection closed first, or
    /// nothing came within `timeout` seconds). The answer must end with its head (no body).
    func headStatus(of request: String, timeout: Double = 5) -> Int? {
        guard send(request) else { return nil }
        var received: [UInt8] = []
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 50) == 1 else { continue }
            var chunk = [UInt8](repeating: 0, count: 4_096)
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { return nil }
            received += chunk[0..<n]
            let text = String(decoding: received, as: UTF8.self)
            guard let end = text.range(of: "\r\n\r\n") else { continue }
            let head = text[..<end.lowerBound]
            let length = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
            guard text.utf8.count - text.utf8.distance(from: text.startIndex, to: end.upperBound) >= length else { continue }
            return head.split(separator: " ").dropFirst().first.flatMap { Int($0) }
        }
        return nil
    }
}
