import Foundation
import ManagedStoreCore
import ManagedStoreHTTP

/// The counts `/v1/metrics` reports that the server itself keeps: requests by route, method and
/// status, their latencies by route, and the conflicts writes met. (The store's own, such as
/// commits, group sizes and reader waits, are read from it at each scrape.)
///
/// Every request adds to these on the thread that ends it, so requests and latencies are
/// atomic counters in fixed places (route × method × status), found without a lock or a string.
///
/// `@unchecked Sendable`: the counters are atomic; `rareStatuses` and `conflicts` are only
/// touched under `lock`.
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

    /// The statuses the server answers with, each with a place of its own; any other is counted
    /// under the lock, and a request without an answer (its connection closed first) as `none`.
    static let statuses: [Int] = [200, 201, 204, 206, 304, 400, 401, 403, 404, 405, 406, 408, 409, 410, 411, 412, 413, 414, 415,
                                  416, 417, 422, 428, 429, 431, 500, 501, 502, 503, 504, 505]
    /// The place of each status from 0 to 599 (-1: none of its own), looked up by index.
    private static let statusPlaces: [Int16] = {
        var places = [Int16](repeating: -1, count: 600)
        for (place, status) in statuses.enumerated() { places[status] = Int16(place) }
        return places
    }()
    /// The place of "no answer".
    private static let noStatus = statuses.count
    private static let placesPerMethod = statuses.count + 1
    private static let placesPerRoute = RouteMethod.allCases.count * placesPerMethod
    private static let bounds = Histogram.latencyBounds
    /// Per route: a count per bucket (and one above the last), then the sum in nanoseconds.
    private static let latencyPlacesPerRoute = bounds.count + 2

    private let requests = AtomicCounters(count: RouteTemplate.allCases.count * placesPerRoute)
    private let latencies = AtomicCounters(count: RouteTemplate.allCases.count * latencyPlacesPerRoute)
    private let lock = NSLock()
    private var rareStatuses: [RequestKey: UInt64] = [:]
    private var conflicts: [ConflictKey: UInt64] = [:]
    /// The HTTP front's connection counts, read at each scrape (set by the server that owns both).
    private var connectionSource: (@Sendable () -> ConnectionStatistics)?

    public init() {}

    /// Reports the connections `source` counts with the service's own metrics.
    func reportConnections(from source: @escaping @Sendable () -> ConnectionStatistics) {
        lock.lock()
        connectionSource = source
        lock.unlock()
    }

    /// The connection counts, when a front reports them.
    var connections: ConnectionStatistics? {
        lock.lock()
        let source = connectionSource
        lock.unlock()
        return source?()
    }

    /// Counts an ended request that took `route`.
    func record(_ request: CompletedRequest, route: RouteTemplate) {
        let method = RouteMethod(request.method)
        let place: Int?
        if let status = request.status {
            let found = (0..<600).contains(status) ? Int(Self.statusPlaces[status]) : -1
            place = found >= 0 ? found : nil
        } else {
            place = Self.noStatus
        }
        if let place {
            requests.add(1, at: route.rawValue * Self.placesPerRoute + method.rawValue * Self.placesPerMethod + place)
        } else {
            let key = RequestKey(route: route.text, method: method.text, status: request.status.map(String.init) ?? "none")
            lock.lock()
            rareStatuses[key, default: 0] &+= 1
            lock.unlock()
        }
        let base = route.rawValue * Self.latencyPlacesPerRoute
        let seconds = max(0, request.seconds)
        latencies.add(1, at: base + (Self.bounds.firstIndex { seconds <= $0 } ?? Self.bounds.count))
        latencies.add(UInt64(min(seconds * 1e9, 1e18)), at: base + Self.bounds.count + 1)
    }

    /// Counts a write's conflict: answered 409 (`resolved` false) or resolved by `policy`.
    func recordConflict(policy: String, resolved: Bool) {
        lock.lock()
        conflicts[ConflictKey(policy: policy, resolved: resolved), default: 0] &+= 1
        lock.unlock()
    }

    /// A copy of the counts, each a moment's value.
    func snapshot() -> (requests: [RequestKey: UInt64], latencies: [String: Histogram], conflicts: [ConflictKey: UInt64]) {
        var requestCounts: [RequestKey: UInt64] = [:]
        var latencyCounts: [String: Histogram] = [:]
        for route in RouteTemplate.allCases {
            for method in RouteMethod.allCases {
                for place in 0...Self.noStatus {
                    let count = requests[route.rawValue * Self.placesPerRoute + method.rawValue * Self.placesPerMethod + place]
                    guard count > 0 else { continue }
                    let status = place == Self.noStatus ? "none" : String(Self.statuses[place])
                    requestCounts[RequestKey(route: route.text, method: method.text, status: status)] = count
                }
            }
            let base = route.rawValue * Self.latencyPlacesPerRoute
            let buckets = (0...Self.bounds.count).map { latencies[base + $0] }
            let total = buckets.reduce(0, &+)
            guard total > 0 else { continue }
            latencyCounts[route.text] = Histogram(bounds: Self.bounds, counts: Array(buckets.prefix(Self.bounds.count)), count: total,
                                                  sum: Double(latencies[base + Self.bounds.count + 1]) / 1e9)
        }
        lock.lock()
        defer { lock.unlock() }
        requestCounts.merge(rareStatuses) { $0 &+ $1 }
        return (requestCounts, latencyCounts, conflicts)
    }
}
