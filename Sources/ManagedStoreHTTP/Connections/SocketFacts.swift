import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A client's address as a key: IPv4 and IPv6 in one form (an IPv4 address as its IPv6-mapped
/// form), so that counting connections per client needs no strings.
struct ClientAddress: Hashable, Sendable, CustomStringConvertible {
    let high: UInt64
    let low: UInt64

    init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    init?(_ address: UnsafePointer<sockaddr>?) {
        guard let address else { return nil }
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            let ipv4 = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt32(bigEndian: $0.pointee.sin_addr.s_addr) }
            high = 0
            low = 0xFFFF_0000_0000 | UInt64(ipv4)
        case AF_INET6:
            let bytes = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer in
                withUnsafeBytes(of: pointer.pointee.sin6_addr) { Array($0) }
            }
            high = bytes[0..<8].reduce(0) { $0 << 8 | UInt64($1) }
            low = bytes[8..<16].reduce(0) { $0 << 8 | UInt64($1) }
        default:
            return nil
        }
    }

    var description: String {
        if high == 0, low >> 32 == 0xFFFF {
            let ipv4 = UInt32(truncatingIfNeeded: low)
            return "\(ipv4 >> 24).\(ipv4 >> 16 & 0xFF).\(ipv4 >> 8 & 0xFF).\(ipv4 & 0xFF)"
        }
        let groups = (0..<4).map { UInt16(truncatingIfNeeded: high >> (48 - 16 * $0)) } + (0..<4).map { UInt16(truncatingIfNeeded: low >> (48 - 16 * $0)) }
        return groups.map { String($0, radix: 16) }.joined(separator: ":")
    }
}

/// What the kernel knows of a TCP connection that libmicrohttpd does not tell: how long since
/// data last came and went, and how many bytes have come in all. Read from `TCP_INFO`, without
/// touching the connection: safe from any thread.
struct TCPFacts {
    /// Milliseconds since the last data came from the client (since the handshake if none has).
    let msSinceDataReceived: UInt32
    /// Milliseconds since data was last sent to the client.
    let msSinceDataSent: UInt32
    /// Bytes received on the connection so far; nil on a kernel too old to say (before 4.1).
    let bytesReceived: UInt64?
    /// The client has closed its side (or reset the connection).
    let clientHasClosed: Bool

    // Offsets in the kernel's `struct tcp_info` (linux/tcp.h), which only ever grows at its end.
    // Glibc's own copy of the struct stops before `tcpi_bytes_received`.
    private static let lastDataSentOffset = 44
    private static let lastDataReceivedOffset = 52
    private static let bytesReceivedOffset = 128
    private static let size = 232

    init?(socket: Int32) {
        var buffer = [UInt8](repeating: 0, count: Self.size)
        var length = socklen_t(Self.size)
        let read = buffer.withUnsafeMutableBytes { getsockopt(socket, Int32(IPPROTO_TCP), TCP_INFO, $0.baseAddress, &length) }
        guard read == 0, Int(length) >= Self.lastDataReceivedOffset + 4 else { return nil }
        let bytes = buffer
        func load<T: FixedWidthInteger>(_ offset: Int, as: T.Type) -> T {
            bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: T.self) }
        }
        // TCP_CLOSE (reset), TCP_TIME_WAIT, TCP_CLOSE_WAIT, TCP_LAST_ACK, TCP_CLOSING: the
        // client's end has come; ESTABLISHED and FIN_WAIT: it has not.
        clientHasClosed = [6, 7, 8, 9, 11].contains(load(0, as: UInt8.self))
        msSinceDataSent = load(Self.lastDataSentOffset, as: UInt32.self)
        msSinceDataReceived = load(Self.lastDataReceivedOffset, as: UInt32.self)
        bytesReceived = Int(length) >= Self.bytesReceivedOffset + 8 ? load(Self.bytesReceivedOffset, as: UInt64.self) : nil
    }
}

/// The process's limit on open files, which bounds its connections.
enum FileDescriptorLimit {
    /// Raises the soft limit to the hard one (which an unprivileged process may do) and returns
    /// the limit in force afterwards.
    static func raised() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1_024 }
        if limit.rlim_cur < limit.rlim_max {
            var wanted = limit
            wanted.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &wanted) == 0 { limit = wanted }
        }
        // RLIM_INFINITY is all ones: clamped, it is the largest Int.
        return Int(clamping: limit.rlim_cur)
    }
}
