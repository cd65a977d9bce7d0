/// Counts of observed values by upper bound, with their sum: a Prometheus histogram's data.
/// The store keeps two (how long reads waited for a reader, how many writes each commit
/// grouped); the server keeps more. A value, never shared: its owner keeps it under a lock and
/// hands out copies.
public struct Histogram: Sendable, Equatable {
    /// Upper bounds of the buckets, ascending; a value above the last falls only in `+Inf`.
    public let bounds: [Double]
    /// Observations at or below each bound, per bucket (not cumulative: `cumulativeCounts`).
    public private(set) var counts: [UInt64]
    /// Every observation, including those above the last bound.
    public private(set) var count: UInt64 = 0
    public private(set) var sum: Double = 0

    public init(bounds: [Double]) {
        self.bounds = bounds.sorted()
        self.counts = [UInt64](repeating: 0, count: bounds.count)
    }

    /// A histogram of counts kept elsewhere (atomic counters): `counts` per bucket of `bounds`
    /// (ascending), `count` every observation, `sum` their total.
    public init(bounds: [Double], counts: [UInt64], count: UInt64, sum: Double) {
        precondition(counts.count == bounds.count, "one count per bound")
        self.bounds = bounds
        self.counts = counts
        self.count = count
        self.sum = sum
    }

    /// The bucket `value` falls in: the index of its bound, or `bounds.count` above the last.
    public func bucket(of value: Double) -> Int {
        bounds.firstIndex { value <= $0 } ?? bounds.count
    }

    public mutating func record(_ value: Double) {
        count &+= 1
        sum += value
        // A handful of bounds: a scan beats a binary search here.
        if let bucket = bounds.firstIndex(where: { value <= $0 }) { counts[bucket] &+= 1 }
    }

    /// Observations at or below each bound, as Prometheus writes the `le` buckets.
    public var cumulativeCounts: [UInt64] {
        var running: UInt64 = 0
        return counts.map { running &+= $0; return running }
    }

    /// Seconds from 100 µs to 10 s: waits and request latencies.
    public static let latencyBounds: [Double] = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
    /// Units of work per commit, 1 to 1024.
    public static let groupSizeBounds: [Double] = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
}
