import Foundation
import ManagedStore

/// The counts `/v1/metrics` reports that the server itself keeps: requests by route, method and
/// status, their latencies by route, and the conflicts writes met. (The store's own, such as
/// commits, group sizes and reader waits, are read from it at each scrape.)
///
/// `@unchecked Sendable`: every stored property is only touched under `lock`.
public final class ServiceMetrics: @unchecked Sendable {
    struct RequestKey: Hashable {
        let route: String
        let method: String
        let status: String
    }

    struct ConflictKey: Hashable {
        let policy: String
        let resolved: Bool
    }

    private let lock = NSLock()
    private var requests: [RequestKey: UInt64] = [:]
    private var latencies: [String: Histogram] = [:]
    private var conflicts: [ConflictKey: UInt64] = [:]

    public init() {}

    /// Counts an ended request. One without an answer (its connection closed first) has the
    /// status `none`.
    func record(_ request: CompletedRequest, route: String) {
        let key = RequestKey(route: route, method: RouteTemplate.method(request.method), status: request.status.map(String.init) ?? "none")
        lock.lock()
        defer { lock.unlock() }
        requests[key, default: 0] &+= 1
        latencies[route, default: Histogram(bounds: Histogram.latencyBounds)].record(request.seconds)
    }

    /// Counts a write's conflict: answered 409 (`resolved` false) or resolved by `policy`.
    func recordConflict(policy: String, resolved: Bool) {
        lock.lock()
        conflicts[ConflictKey(policy: policy, resolved: resolved), default: 0] &+= 1
        lock.unlock()
    }

    /// A copy of the counts, taken at once.
    func snapshot() -> (requests: [RequestKey: UInt64], latencies: [String: Histogram], conflicts: [ConflictKey: UInt64]) {
        lock.lock()
        defer { lock.unlock() }
        return (requests, latencies, conflicts)
    }
}
