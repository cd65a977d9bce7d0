import CMicroHTTPD
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Keeps one client from locking everyone out: at most so many connections per client address
/// and in all (refused as libmicrohttpd accepts them), a deadline for each request's head, and
/// room made for a new connection by closing the one that has waited longest for a request.
///
/// libmicrohttpd's own limits do not do this: its connection timeout counts idleness (a client
/// sending one header line every few seconds is never idle), its per-address limit refuses
/// without telling anyone, and at its connection limit it stops accepting altogether.
///
/// What it costs a request: two relaxed atomic additions and a clock read it had already
/// (`ConnectionRecord`). The rest is per connection (accept, close) or on the sweeping thread,
/// which looks at every connection a few times a second and asks the kernel (`TCP_INFO`) whether
/// a head has begun on those waiting for one.
///
/// A connection is closed by shutting its socket down: libmicrohttpd then reads the end of it
/// and closes it on its own thread, as if the client had. That happens only under `lock` and
/// only for a connection still in `records`; libmicrohttpd reports a connection closed (which
/// takes it out, under `lock`) before it closes the socket, so a socket shut down is never one
/// whose number has been given to another file meanwhile.
///
/// `@unchecked Sendable`: everything mutable is touched under `lock`, except the sweeper's
/// fields of each record (see `ConnectionRecord`) and `sweeping` (under `sweepCondition`).
final class ConnectionGuard: @unchecked Sendable {
    struct Limits {
        var total: Int
        /// 0: none.
        var perClient: Int
        var headerTimeout: Duration
        var idleTimeout: Duration
    }

    let limits: Limits
    private let warn: @Sendable (String) -> Void

    private let lock = NSLock()
    private var records: [ObjectIdentifier: ConnectionRecord] = [:]
    private var perAddress: [ClientAddress: Int] = [:]
    /// Connections the accept policy let in that libmicrohttpd has not yet reported started, by
    /// the thread that accepted them. A thread accepts one at a time, so there is at most one
    /// each; one that never started (libmicrohttpd could not set it up) is replaced by the
    /// thread's next, so none is counted for ever.
    private var admitting: [UInt: ClientAddress] = [:]
    /// Shut down by the guard, and not yet reported closed.
    private var closingCount = 0
    /// Streams taken out of libmicrohttpd (`StreamHandOff`): still connections of their
    /// clients, counted in `perAddress` and against the total, but never closed to make room
    /// nor swept (they are answers being sent, not connections waiting for a request).
    private var handedOff = 0
    /// Connections waiting for a request, as of the last sweep: the one to close first is last.
    /// `silentSince` is when the wait of one that had sent nothing began (nil: its head had begun).
    private var idleCandidates: [(record: ConnectionRecord, ended: UInt32, silentSince: UInt64?)] = []
    /// Connections started since the last sweep, oldest first from `freshCursor`: a flood faster
    /// than the sweeps makes room among its own new connections too, not only among the old.
    private var fresh: [ConnectionRecord] = []
    private var freshCursor = 0
    private var refusals: [ConnectionRefusal: UInt64] = [:]
    private var closures: [ConnectionClosure: UInt64] = [:]
    /// The log line about clients at their limit: at most one per `logInterval`.
    private var lastLimitLineAt: UInt64 = 0
    private var unloggedRefusals = 0
    private var unloggedAddresses: Set<ClientAddress> = []
    private static let logInterval: UInt64 = 10_000_000_000

    private let sweepCondition = NSCondition()
    private var sweeping = false

    init(limits: Limits, warn: @escaping @Sendable (String) -> Void) {
        self.limits = limits
        self.warn = warn
    }

    private static var now: UInt64 { DispatchTime.now().uptimeNanoseconds }

    // MARK: Accepting and closing (libmicrohttpd's threads)

    /// Whether a connection just accepted from `address` is served.
    func admit(_ address: ClientAddress?) -> Bool {
        let thread = UInt(pthread_self())
        var limitLine: String?
        lock.lock()
        defer {
            lock.unlock()
            if let limitLine { warn(limitLine) }
        }
        admitting[thread] = nil
        let address = address ?? ClientAddress.unknown
        if limits.perClient > 0 {
            let held = perAddress[address, default: 0] + admitting.values.reduce(0) { $0 + ($1 == address ? 1 : 0) }
            if held >= limits.perClient {
                refusals[.perClient, default: 0] += 1
                limitLine = noteClientAtLimit(address)
                return false
            }
        }
        if records.count - closingCount + admitting.count + handedOff >= limits.total {
            guard let idlest = popIdleCandidate() else {
                refusals[.total, default: 0] += 1
                return false
            }
            close(idlest, because: .madeRoom)
        }
        admitting[thread] = address
        return true
    }

    /// libmicrohttpd has set up a connection: its record, to be kept with it.
    func started(socket: Int32, address: ClientAddress?) -> ConnectionRecord {
        let record = ConnectionRecord(socket: socket, address: address ?? .unknown, acceptedAt: Self.now)
        lock.lock()
        admitting[UInt(pthread_self())] = nil
        records[ObjectIdentifier(record)] = record
        perAddress[record.address, default: 0] += 1
        fresh.append(record)
        lock.unlock()
        return record
    }

    /// A stream leaves libmicrohttpd with its connection: counted from here until `streamEnded`
    /// (called before libmicrohttpd reports its copy closed, so the count never dips).
    func streamHandedOff(from address: ClientAddress?) {
        lock.lock()
        perAddress[address ?? .unknown, default: 0] += 1
        handedOff += 1
        lock.unlock()
    }

    /// A stream handed off has ended and its socket is closed.
    func streamEnded(from address: ClientAddress?) {
        lock.lock()
        releasePlace(of: address ?? .unknown)
        handedOff -= 1
        lock.unlock()
    }

    /// One connection fewer for `address` (under `lock`).
    private func releasePlace(of address: ClientAddress) {
        if let held = perAddress[address], held > 1 {
            perAddress[address] = held - 1
        } else {
            perAddress[address] = nil
        }
    }

    /// libmicrohttpd is closing a connection (its socket is still open).
    func closed(_ record: ConnectionRecord) {
        // Read before the lock: a system call. Only used when the guard did not close it.
        let facts = TCPFacts(socket: record.socket)
        lock.lock()
        defer { lock.unlock() }
        guard records.removeValue(forKey: ObjectIdentifier(record)) != nil else { return }
        releasePlace(of: record.address)
        if record.closing != nil {
            closingCount -= 1
        } else if let facts, isPastIdleTimeout(facts) {
            // libmicrohttpd closed it for idleness (it does not say why it closes a connection;
            // nothing else closes one that has been quiet that long).
            closures[.idleTimeout, default: 0] += 1
        }
    }

    /// Whether libmicrohttpd is closing a connection for idleness: the client has not closed it,
    /// and nothing came or went for the idle timeout (less the kernel clock's coarse ticks).
    private func isPastIdleTimeout(_ facts: TCPFacts) -> Bool {
        let quietMs = Int64(min(facts.msSinceDataReceived, facts.msSinceDataSent))
        let timeoutMs = limits.idleTimeout.components.seconds * 1_000
        return !facts.clientHasClosed && quietMs + 50 >= timeoutMs
    }

    /// Counts a connection the request path closed (a body past its deadline).
    func count(_ closure: ConnectionClosure) {
        lock.lock()
        closures[closure, default: 0] += 1
        lock.unlock()
    }

    func count(_ refusal: ConnectionRefusal) {
        lock.lock()
        refusals[refusal, default: 0] += 1
        lock.unlock()
    }

    /// Under `lock`: shuts a connection down, for libmicrohttpd to close.
    private func close(_ record: ConnectionRecord, because reason: ConnectionClosure) {
        record.closing = reason
        closingCount += 1
        closures[reason, default: 0] += 1
        _ = shutdown(record.socket, Int32(SHUT_RDWR))
    }

    /// Under `lock`: the connection that has waited longest for a request and still does: of
    /// those the last sweep saw waiting, the longest silent, then the slowest head; then the
    /// oldest of those started since that have sent nothing yet. A connection whose client has
    /// begun to send since it was seen silent is passed over.
    private func popIdleCandidate() -> ConnectionRecord? {
        let now = Self.now
        while let (record, ended, silentSince) = idleCandidates.popLast() {
            guard isWaiting(record, ended: ended) else { continue }
            if let silentSince {
                guard let facts = TCPFacts(socket: record.socket),
                      Self.headBegan(waitingSince: silentSince, afterRequests: ended, facts, now: now) == nil else { continue }
            }
            return record
        }
        while freshCursor < fresh.count {
            let record = fresh[freshCursor]
            freshCursor += 1
            guard isWaiting(record, ended: 0), let facts = TCPFacts(socket: record.socket), facts.bytesReceived == 0 else { continue }
            return record
        }
        return nil
    }

    /// Under `lock`: whether `record` is open, not being closed, and between requests as it was
    /// when `ended` requests had ended.
    private func isWaiting(_ record: ConnectionRecord, ended: UInt32) -> Bool {
        records[ObjectIdentifier(record)] != nil && record.closing == nil
            && record.requestsEnded.load(ordering: .relaxed) == ended && record.headsReceived.load(ordering: .relaxed) == ended
    }

    /// Under `lock`: the log line for a client at its limit, when one is due.
    private func noteClientAtLimit(_ address: ClientAddress) -> String? {
        let now = Self.now
        guard now - lastLimitLineAt >= Self.logInterval else {
            unloggedRefusals += 1
            if unloggedAddresses.count < 8 { unloggedAddresses.insert(address) }
            return nil
        }
        lastLimitLineAt = now
        let earlier = unloggedRefusals > 0 ? "; \(unloggedRefusals) more refused since the last line" : ""
        unloggedRefusals = 0
        unloggedAddresses = []
        return "refusing connections from \(address): it holds \(limits.perClient), the most one client address may "
            + "(--max-connections-per-client; behind a reverse proxy set it to 0)\(earlier)"
    }

    /// Under `lock`: the line for refusals not yet logged, once one is due.
    private func pendingLimitLine() -> String? {
        let now = Self.now
        guard unloggedRefusals > 0, now - lastLimitLineAt >= Self.logInterval else { return nil }
        lastLimitLineAt = now
        let line = "refused \(unloggedRefusals) more connections from clients at their limit (--max-connections-per-client): "
            + unloggedAddresses.map(\.description).sorted().joined(separator: ", ")
            + (unloggedAddresses.count == 8 ? " and others" : "")
        unloggedRefusals = 0
        unloggedAddresses = []
        return line
    }

    // MARK: Statistics

    var statistics: ConnectionStatistics {
        lock.lock()
        defer { lock.unlock() }
        var statistics = ConnectionStatistics()
        statistics.open = records.count + handedOff
        statistics.limit = limits.total
        statistics.perClientLimit = limits.perClient
        statistics.refused = refusals
        statistics.closed = closures
        return statistics
    }

    // MARK: Sweeping (a thread of its own)

    /// Starts looking at the connections every `interval`.
    func startSweeping(every interval: Duration) {
        sweepCondition.lock()
        sweeping = true
        sweepCondition.unlock()
        let seconds = Double(interval.components.seconds) + Double(interval.components.attoseconds) / 1e18
        // Weakly: a guard whose server is gone ends its thread.
        let thread = Thread { [weak self] in
            while let guarded = self {
                guarded.sweepCondition.lock()
                if guarded.sweeping { _ = guarded.sweepCondition.wait(until: Date(timeIntervalSinceNow: seconds)) }
                let goOn = guarded.sweeping
                guarded.sweepCondition.unlock()
                guard goOn else { return }
                guarded.sweep()
            }
        }
        thread.name = "managedstore-connections"
        thread.start()
    }

    func stopSweeping() {
        sweepCondition.lock()
        sweeping = false
        sweepCondition.broadcast()
        sweepCondition.unlock()
    }

    /// Closes the connections whose head is past its deadline, and ranks those waiting for a
    /// request, longest first, for making room.
    func sweep() {
        lock.lock()
        let all = Array(records.values)
        lock.unlock()
        let now = Self.now
        let headerTimeout = UInt64(limits.headerTimeout.components.seconds) * 1_000_000_000
            + UInt64(limits.headerTimeout.components.attoseconds / 1_000_000_000)
        var overdue: [ConnectionRecord] = []
        var silent: [(since: UInt64, record: ConnectionRecord)] = []
        var begun: [(since: UInt64, record: ConnectionRecord)] = []
        for record in all {
            let ended = record.requestsEnded.load(ordering: .acquiring)
            // In a request: the body's deadline and the idle timeout apply, not the head's.
            guard record.headsReceived.load(ordering: .relaxed) == ended else { continue }
            if ended != record.sweptEnded {
                record.sweptEnded = ended
                record.sweptWaitSince = record.lastEndedAt.load(ordering: .relaxed)
                record.sweptHeadSince = nil
            }
            if record.sweptHeadSince == nil, let facts = TCPFacts(socket: record.socket) {
                record.sweptHeadSince = Self.headBegan(waitingSince: record.sweptWaitSince, afterRequests: ended, facts, now: now)
            }
            if let since = record.sweptHeadSince {
                if now > since, now - since >= headerTimeout { overdue.append(record) } else { begun.append((since, record)) }
            } else {
                silent.append((record.sweptWaitSince, record))
            }
        }
        // Made room by first: those silent longest, then those whose head began longest ago.
        let ranked = silent.sorted { $0.since < $1.since } + begun.sorted { $0.since < $1.since }
        var line: String?
        lock.lock()
        for record in overdue where isWaiting(record, ended: record.sweptEnded) {
            close(record, because: .headerTimeout)
        }
        idleCandidates = ranked.reversed().map { entry in
            (entry.record, entry.record.sweptEnded, entry.record.sweptHeadSince == nil ? entry.since : nil)
        }
        // Those started before this sweep are ranked now; later ones stay fresh.
        let sweptIDs = Set(all.map(ObjectIdentifier.init))
        fresh = fresh[freshCursor...].filter { !sweptIDs.contains(ObjectIdentifier($0)) }
        freshCursor = 0
        line = pendingLimitLine()
        lock.unlock()
        if let line { warn(line) }
    }

    /// When the head a connection waits for began to arrive, if it has: the time of the last
    /// data the kernel received, when that came after the wait began. (The first byte of a
    /// slowly sent head is seen at the sweep after it, as the last byte received then.)
    private static func headBegan(waitingSince: UInt64, afterRequests ended: UInt32, _ facts: TCPFacts, now: UInt64) -> UInt64? {
        let receivedAt = now - min(now, UInt64(facts.msSinceDataReceived) * 1_000_000)
        if ended == 0, let bytes = facts.bytesReceived {
            // A new connection: any byte at all is the head's (it may have come before the accept).
            return bytes > 0 ? receivedAt : nil
        }
        // The kernel's clock ticks in milliseconds (or coarser): data within a few of the end of
        // the last request may be that request's.
        return receivedAt > waitingSince + 10_000_000 ? receivedAt : nil
    }
}

extension ClientAddress {
    /// For a connection whose address libmicrohttpd does not give (never seen: a TCP socket has one).
    static let unknown = ClientAddress(high: 0, low: 0)
}
