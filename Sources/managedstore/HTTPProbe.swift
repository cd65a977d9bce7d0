import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The plain-socket side of talking to a server (`ServerClient`): a URL's host and port,
/// connecting, sending and reading to the end. No URLSession: its Linux build needs libcurl,
/// which the runtime image does not carry.
enum HTTPProbe {
    struct Target {
        let host: String
        let port: UInt16

        /// `http://host[:port][/]`; nil for anything else (https, a path, a bad port).
        init?(url: String) {
            guard url.hasPrefix("http://") else { return nil }
            var rest = url.dropFirst("http://".count)
            if rest.hasSuffix("/") { rest = rest.dropLast() }
            guard !rest.isEmpty, !rest.contains("/") else { return nil }
            let parts = rest.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count <= 2, !parts[0].isEmpty else { return nil }
            host = String(parts[0])
            if parts.count == 2 {
                guard let port = UInt16(parts[1]), port > 0 else { return nil }
                self.port = port
            } else {
                port = 80
            }
        }
    }

    enum Failure: Error, CustomStringConvertible {
        case unresolved(String)
        case unreachable(String)
        case badAnswer

        var description: String {
            switch self {
            case .unresolved(let host): return "cannot resolve \(host)"
            case .unreachable(let reason): return "no answer: \(reason)"
            case .badAnswer: return "the answer is not HTTP"
            }
        }
    }

    /// A connected socket, each send and receive on it bounded by `timeout` seconds.
    static func connect(to target: Target, timeout: Double) throws(Failure) -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var found: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(target.host, String(target.port), &hints, &found) == 0, let first = found else { throw .unresolved(target.host) }
        defer { freeaddrinfo(found) }
        let fd = socket(first.pointee.ai_family, first.pointee.ai_socktype, first.pointee.ai_protocol)
        guard fd >= 0 else { throw .unreachable(String(cString: strerror(errno))) }
        // On Linux the send timeout bounds connect too.
        var limit = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - timeout.rounded(.down)) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        guard Glibc.connect(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw .unreachable(reason)
        }
        return fd
    }

    static func sendAll(_ fd: Int32, _ bytes: [UInt8]) throws(Failure) {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw .unreachable(String(cString: strerror(errno))) }
            sent += n
        }
    }

    /// Everything the server sends until it closes the connection.
    static func receiveAll(_ fd: Int32) throws(Failure) -> [UInt8] {
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { break }
            guard n > 0 else { throw .unreachable(String(cString: strerror(errno))) }
            answer += buffer[0..<n]
        }
        if answer.isEmpty { throw .unreachable("the connection closed without an answer") }
        return answer
    }
}
