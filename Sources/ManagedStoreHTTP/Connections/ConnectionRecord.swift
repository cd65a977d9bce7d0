import Dispatch
import Synchronization

/// One open connection, as the connection guard sees it.
///
/// `@unchecked Sendable`: `socket`, `address` and `acceptedAt` never change. The request path
/// (libmicrohttpd's thread for the connection) writes only the atomics; `closing` is only touched
/// under the guard's lock; the `swept…` fields only by the guard's sweeping thread.
final class ConnectionRecord: @unchecked Sendable {
    let socket: Int32
    let address: ClientAddress
    /// Uptime nanoseconds when libmicrohttpd took the connection.
    let acceptedAt: UInt64

    /// Heads received in full (the first call of the access handler of each request).
    let headsReceived = Atomic<UInt32>(0)
    /// Requests ended (answered, or given up). Equal to `headsReceived`: waiting for a head.
    let requestsEnded = Atomic<UInt32>(0)
    /// Uptime nanoseconds when the last request ended; written before `requestsEnded` grows.
    let lastEndedAt = Atomic<UInt64>(0)

    /// Set when the guard has shut the connection down (libmicrohttpd closes it soon after).
    var closing: ConnectionClosure?

    /// The `requestsEnded` the sweeper last saw, and what it learnt of the wait for the head
    /// that follows it.
    var sweptEnded: UInt32 = 0
    var sweptWaitSince: UInt64
    /// When the head being waited for began to arrive (its first byte, as near as the kernel
    /// tells); nil while none of it has.
    var sweptHeadSince: UInt64?

    init(socket: Int32, address: ClientAddress, acceptedAt: UInt64) {
        self.socket = socket
        self.address = address
        self.acceptedAt = acceptedAt
        sweptWaitSince = acceptedAt
    }

    /// Called on the connection's thread when a head has arrived in full.
    @inline(__always) func headReceived() {
        headsReceived.wrappingAdd(1, ordering: .relaxed)
    }

    /// Called on the connection's thread when a request has ended, at `now` (uptime ns).
    @inline(__always) func requestEnded(at now: UInt64) {
        lastEndedAt.store(now, ordering: .relaxed)
        requestsEnded.wrappingAdd(1, ordering: .releasing)
    }
}
