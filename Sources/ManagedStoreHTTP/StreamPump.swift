import CMicroHTTPD
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The one thread that looks after streams taken out of libmicrohttpd (`ResponseStream`'s
/// socket mode): an epoll set of their sockets, told when a client goes away, and when a socket
/// that was full can take more.
///
/// Why streams leave libmicrohttpd: a stream with nothing to send is a suspended connection
/// there, and libmicrohttpd 0.9.75 walks every suspended connection of a thread each time any
/// connection of it is resumed, which every write answer does. Ten thousand idle live queries
/// halved the POSTs (Benchmarks/RESULTS.md). Here an idle stream costs nothing until it is
/// written to; a write sends at once from the writer's thread, and only a socket that is full
/// waits here for room.
///
/// `@unchecked Sendable`: `streams`, `nextToken` and `running` are only touched under `lock`;
/// `lastStallCheck` only by the pump's thread; the rest never changes once made. The lock is never held while a stream's own lock
/// is taken (a stream calls in here holding its lock), so the two never wait on each other.
final class StreamPump: @unchecked Sendable {
    private let epoll: Int32
    /// An eventfd that wakes the thread to stop.
    private let wake: Int32
    private let lock = NSLock()
    private var streams: [UInt64: ResponseStream] = [:]
    private var nextToken: UInt64 = 1
    private var running = false
    private let stopped = DispatchSemaphore(value: 0)
    /// How long a socket may stay full before its stream is ended (the client stopped reading).
    private let stallLimit: UInt64
    private var lastStallCheck: UInt64 = 0

    init?(stallSeconds: Int) {
        stallLimit = UInt64(max(1, stallSeconds)) * 1_000_000_000
        epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard epoll >= 0 else { return nil }
        wake = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
        guard wake >= 0 else {
            Glibc.close(epoll)
            return nil
        }
        var event = epoll_event(events: EPOLLIN.rawValue, data: epoll_data_t(u64: 0))
        guard epoll_ctl(epoll, EPOLL_CTL_ADD, wake, &event) == 0 else {
            Glibc.close(wake)
            Glibc.close(epoll)
            return nil
        }
    }

    deinit {
        Glibc.close(wake)
        Glibc.close(epoll)
    }

    func start() {
        lock.lock()
        running = true
        lock.unlock()
        let thread = Thread { [self] in run() }
        thread.name = "managedstore-streams"
        thread.start()
    }

    /// Watches `socket` for `stream`: the token names it in later calls (nil when epoll refused).
    func add(_ stream: ResponseStream, socket: Int32) -> UInt64? {
        lock.lock()
        let token = nextToken
        nextToken += 1
        streams[token] = stream
        lock.unlock()
        var event = epoll_event(events: Self.reading, data: epoll_data_t(u64: token))
        guard epoll_ctl(epoll, EPOLL_CTL_ADD, socket, &event) == 0 else {
            lock.lock()
            streams[token] = nil
            lock.unlock()
            return nil
        }
        return token
    }

    /// Whether to be told when `socket` has room (only while bytes wait for it: a socket with
    /// room is always writable, and would wake the thread for nothing).
    func watchRoom(_ watch: Bool, token: UInt64, socket: Int32) {
        var event = epoll_event(events: watch ? Self.reading | EPOLLOUT.rawValue : Self.reading, data: epoll_data_t(u64: token))
        _ = epoll_ctl(epoll, EPOLL_CTL_MOD, socket, &event)
    }

    /// Stops watching `socket` (called before it is closed, so that its number, given to another
    /// file later, is never watched by mistake).
    func remove(token: UInt64, socket: Int32) {
        _ = epoll_ctl(epoll, EPOLL_CTL_DEL, socket, nil)
        lock.lock()
        streams[token] = nil
        lock.unlock()
    }

    /// Ends every stream still open (their clients see the connection close) and the thread.
    func stop() {
        lock.lock()
        let wasRunning = running
        running = false
        let open = Array(streams.values)
        lock.unlock()
        open.forEach { $0.abort() }
        guard wasRunning else { return }
        var one: UInt64 = 1
        _ = write(wake, &one, MemoryLayout<UInt64>.size)
        stopped.wait()
    }

    private static let reading = EPOLLIN.rawValue | EPOLLRDHUP.rawValue

    /// Once a second at most: every stream whose socket has been full for `stallLimit`.
    private func endStalledStreams() {
        let now = DispatchTime.now().uptimeNanoseconds
        guard now - lastStallCheck >= 1_000_000_000, now > stallLimit else { return }
        lastStallCheck = now
        lock.lock()
        let open = Array(streams.values)
        lock.unlock()
        for stream in open { stream.abortIfStalled(since: now - stallLimit) }
    }

    private func run() {
        var events = [epoll_event](repeating: epoll_event(), count: 256)
        while true {
            // Woken at least once a second, to end the streams whose clients stopped reading.
            let count = events.withUnsafeMutableBufferPointer { epoll_wait(epoll, $0.baseAddress, Int32($0.count), 1_000) }
            endStalledStreams()
            if count < 0 {
                if errno == EINTR { continue }
                break
            }
            var stopping = false
            for index in 0..<Int(count) {
                let token = events[index].data.u64
                if token == 0 {
                    stopping = true
                    continue
                }
                lock.lock()
                let stream = streams[token]
                lock.unlock()
                // Gone already: it ended between epoll_wait and here.
                stream?.socketEvent(events[index].events)
            }
            if stopping {
                lock.lock()
                let done = !running
                lock.unlock()
                if done { break }
            }
        }
        stopped.signal()
    }
}
