import Foundation
import ManagedStoreCore

/// The store's read connections, lent one at a time by number, opened when first needed and
/// opened again when the server ended one (a restart, a dropped socket).
///
/// `@unchecked Sendable`: `connections`, `free` and `waits` are only touched under
/// `condition`'s lock; a lent connection is used by the one thread it is lent to.
final class PGReaderPool: @unchecked Sendable {
    private let condition = NSCondition()
    private var connections: [PGConnection?]
    private var free: [Int]
    private var waits = Histogram(bounds: Histogram.latencyBounds)
    private let location: PostgresLocation

    init(count: Int, location: PostgresLocation) {
        self.location = location
        connections = Array(repeating: nil, count: max(1, count))
        free = Array((0..<max(1, count)).reversed())
    }

    var count: Int { connections.count }

    var waitHistogram: Histogram { condition.withLock { waits } }

    func withReader<T>(_ body: (Int, PGConnection) throws -> T) throws -> T {
        let start = DispatchTime.now().uptimeNanoseconds
        condition.lock()
        while free.isEmpty { condition.wait() }
        let slot = free.removeLast()
        waits.record(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
        let existing = connections[slot]
        condition.unlock()
        var lent = existing
        defer {
            condition.lock()
            connections[slot] = lent
            free.append(slot)
            condition.signal()
            condition.unlock()
        }
        if lent?.isHealthy != true { lent = nil; lent = try PGConnection(location) }
        return try body(slot, lent!)
    }
}
