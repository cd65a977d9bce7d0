import Synchronization

/// The budgets of the SQLite store's own fetch plans, and what they did. The plans hand a fetch
/// over to SQLite's plain statement once they have spent their budget; tests lower the budgets
/// to reach those hand-overs with little data, and check that the plan they compare ran.
///
/// One per store, read by every connection of it. `@unchecked Sendable`: every field is an
/// atomic, read and written whole.
package final class SQLitePlanOptions: @unchecked Sendable {
    package static let defaultKeyOrderScanBudget: Int32 = 20_000
    package static let defaultGroupedOrderBudget = 8

    private let keyOrderScan = Atomic<Int32>(SQLitePlanOptions.defaultKeyOrderScanBudget)
    private let groupedOrder = Atomic<Int>(SQLitePlanOptions.defaultGroupedOrderBudget)
    private let walks = Atomic<Int>(0)

    package init() {}

    /// Rows a limited fetch in key order may scan before SQLite's own plan takes over.
    package var keyOrderScanBudget: Int32 {
        get { keyOrderScan.load(ordering: .relaxed) }
        set { keyOrderScan.store(newValue, ordering: .relaxed) }
    }

    /// Groups of equal sort values a limited descending fetch walks before SQLite's own plan
    /// takes over; 0 never walks (the twin tests' plain path).
    package var groupedOrderBudget: Int {
        get { groupedOrder.load(ordering: .relaxed) }
        set { groupedOrder.store(newValue, ordering: .relaxed) }
    }

    /// Fetches that walked groups so far.
    package var groupedOrderWalks: Int { walks.load(ordering: .relaxed) }

    func noteGroupedOrderWalk() { walks.wrappingAdd(1, ordering: .relaxed) }
}
