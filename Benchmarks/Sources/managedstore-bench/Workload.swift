import Foundation

/// What every benchmark works on: the same rows, keys and constants for ManagedStore and for
/// raw SQLite, all derived from the row number or a fixed seed, so two runs do the same work.
struct Workload {
    var count = 1_000_000
    /// Objects (rows) per save (commit); the context is reset after each save.
    var batchSize = 10_000
    /// Point reads by primary key.
    var lookups = 10_000
    /// Predicate fetches, and the fetch limit of each.
    var fetches = 100
    var fetchLimit = 50
    /// Each read benchmark runs this many times per side, alternating which side goes first;
    /// the fastest round counts (reads are cheap to repeat, a 1M insert is not).
    var readRounds = 3

    /// The values of Task number `i` (0-based; its primary key is i + 1 on both sides).
    struct Row {
        var title: String
        var priority: Int64
        var done: Bool
        var estimate: Double
        /// Seconds since 2001-01-01, as the store keeps a Date.
        var due: Double
    }

    func row(_ i: Int) -> Row {
        let bits = SplitMix64.mix(UInt64(i))
        return Row(title: "Task \(i + 1)",
                   priority: Int64(bits % 6),
                   done: (bits >> 8) & 1 == 1,
                   estimate: Double((bits >> 16) % 800) / 10,
                   due: 815_000_000 + Double(i) * 60)
    }

    /// `lookups` distinct random primary keys in 1...count, in random order.
    func lookupKeys() -> [Int64] {
        var generator = SplitMix64(seed: 42)
        let wanted = min(lookups, count)
        var seen = Set<Int64>(minimumCapacity: wanted)
        var keys: [Int64] = []
        keys.reserveCapacity(wanted)
        while keys.count < wanted {
            let key = Int64.random(in: 1...Int64(count), using: &generator)
            if seen.insert(key).inserted { keys.append(key) }
        }
        return keys
    }

    /// The constants of predicate fetch `k`: `done == done && priority >= minPriority`.
    func predicateConstants(_ k: Int) -> (done: Bool, minPriority: Int64) {
        (done: k % 2 == 1, minPriority: Int64((k / 2) % 6))
    }
}

/// A small seeded generator (SplitMix64), so the workload does not depend on the system's.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }

    static func mix(_ value: UInt64) -> UInt64 {
        var z = value &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        return Self.mix(state)
    }
}

/// An order-sensitive digest of what a benchmark read, to check both sides read the same rows.
struct Digest: Equatable, CustomStringConvertible {
    private(set) var value: UInt64 = 0xCBF2_9CE4_8422_2325
    private(set) var items = 0

    mutating func add(_ primaryKey: Int64, _ title: String) {
        value = (value ^ UInt64(bitPattern: primaryKey)) &* 0x100_0000_01B3
        value = (value ^ UInt64(title.utf8.count)) &* 0x100_0000_01B3
        items += 1
    }

    var description: String { "\(items) rows, digest \(String(value, radix: 16))" }
}

/// Wall-clock time of `body`, in seconds.
func measure<T>(_ body: () throws -> T) rethrows -> (result: T, seconds: Double) {
    let start = ContinuousClock.now
    let result = try body()
    return (result, start.duration(to: .now).seconds)
}

extension Duration {
    var seconds: Double {
        let (s, attoseconds) = components
        return Double(s) + Double(attoseconds) / 1e18
    }
}

/// A failed consistency check: the benchmark's numbers would mean nothing.
struct BenchmarkError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
