import CPostgreSQL
import Foundation
import ManagedStoreCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Hears the commits of other servers on the same store (`LISTEN`): every write transaction
/// sends `NOTIFY` on the store's channel as it commits, and this calls the store's commit
/// observers when one arrives, so that a long-poll on one server wakes when another commits.
///
/// A connection and a thread of its own, started with the first observer; it reconnects after
/// a lost connection, and ends when the store goes.
///
/// `@unchecked Sendable`: `stopped` and `ownBackends` are atomics and a mutex; the connection is
/// only used by the listening thread.
final class PGCommitListener: @unchecked Sendable {
    let channel: String
    private let location: PostgresLocation
    private let stopped = Atomic<Bool>(false)
    /// The backends of this store's own writer: their notifications are of commits the store
    /// has already told its observers about.
    private let ownBackends = Mutex<Set<Int32>>([])
    private let notify: @Sendable () -> Void

    init(channel: String, location: PostgresLocation, notify: @escaping @Sendable () -> Void) {
        self.channel = channel
        self.location = location
        self.notify = notify
    }

    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "managedstore-listen"
        thread.start()
    }

    func stop() { stopped.store(true, ordering: .relaxed) }

    func addOwnBackend(_ pid: Int32) { ownBackends.withLock { _ = $0.insert(pid) } }

    private func run() {
        while !stopped.load(ordering: .relaxed) {
            guard let handle = PQconnectdb(location.connectionString) else { Thread.sleep(forTimeInterval: 1); continue }
            defer { PQfinish(handle) }
            guard PQstatus(handle) == CONNECTION_OK, let result = PQexec(handle, "LISTEN \(channel)") else {
                Thread.sleep(forTimeInterval: 1)
                continue
            }
            PQclear(result)
            listen(handle)
        }
    }

    /// Waits for notifications (a second at a time, to see `stop`) until the connection fails.
    private func listen(_ handle: OpaquePointer) {
        while !stopped.load(ordering: .relaxed) {
            var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, 1000)
            if ready < 0 && errno != EINTR { return }
            guard PQconsumeInput(handle) == 1 else { return }
            var heard = false
            while let notification = PQnotifies(handle) {
                let pid = notification.pointee.be_pid
                PQfreemem(notification)
                if !ownBackends.withLock({ $0.contains(pid) }) { heard = true }
            }
            if heard { notify() }
            if PQstatus(handle) != CONNECTION_OK { return }
        }
    }
}
