import Synchronization

/// A fixed number of 64-bit counters that any thread adds to without a lock (relaxed atomic
/// additions), for the counts every request adds to. A reader sums what it sees: a count may be
/// a request behind, never torn.
///
/// `@unchecked Sendable`: the counters live in memory this object allocates once and frees in
/// `deinit`, and are only ever touched through `Atomic`'s operations.
final class AtomicCounters: @unchecked Sendable {
    let count: Int
    private let storage: UnsafeMutablePointer<Atomic<UInt64>>

    init(count: Int) {
        self.count = count
        storage = .allocate(capacity: count)
        for i in 0..<count { (storage + i).initialize(to: Atomic(0)) }
    }

    deinit {
        storage.deinitialize(count: count)
        storage.deallocate()
    }

    func add(_ value: UInt64, at index: Int) {
        precondition(index >= 0 && index < count, "counter \(index) of \(count)")
        storage[index].wrappingAdd(value, ordering: .relaxed)
    }

    subscript(index: Int) -> UInt64 {
        storage[index].load(ordering: .relaxed)
    }
}
