import Foundation

/// What a context reads from a persistent store, all in one snapshot of it: rows by key (to
/// fulfil faults), the destinations of relationships, and checked fetch requests answered as
/// rows, keys, counts, values or groups [the reads of NSIncrementalStore: newValuesForObject,
/// newValueForRelationship, and execute(_:with:) for fetch requests].
///
/// A session is lent for one read (`PersistentStore.read`) or one write transaction; it is used
/// by one thread at a time and never kept. Requests arrive checked against the model
/// (`PreparedFetch`: a predicate tree, resolved sorts and key paths): a store answers them in
/// its own way (SQL for the SQLite store) with the results the in-memory evaluator would give.
package protocol StoreReadSession: AnyObject {
    /// The row of `entity` with primary key `key`, or nil when the store holds none.
    func row(of entity: Entity, key: Int64) throws(StoreError) -> StoredRow?
    /// The rows of `entity` with these keys, by key (a key without a row is absent).
    func rows(of entity: Entity, keys: [Int64]) throws(StoreError) -> [Int64: StoredRow]
    /// Which of `keys` `entity` has rows for: the kind of a parent entity's key
    /// (`kinds(ofKeys:in:model:)`). `rows(of:keys:)` answers it too; a store may read less.
    func existingKeys(of entity: Entity, among keys: [Int64]) throws(StoreError) -> Set<Int64>
    /// The keys of the destinations of relationship `relationship` of the object `key`, ascending.
    func destinationKeys(of entity: Entity, relationship: Int, key: Int64) throws(StoreError) -> [Int64]
    /// The destinations of to-many `relationship` for many objects at once: owner key → keys,
    /// each list ascending.
    func destinationKeys(of entity: Entity, relationship: Int, owners: [Int64]) throws(StoreError) -> [Int64: [Int64]]
    /// The keys of the objects of `entity` whose one-way `relationship` holds the object
    /// `destination`, ascending (what a delete of that object takes it out of).
    func ownerKeys(of entity: Entity, relationship: Int, destination: Int64) throws(StoreError) -> [Int64]
    /// Lends the row of the object `key` to `body` as it lies in the store, without copying its
    /// values out (an answer that only serializes it); `body` is not called when there is none.
    func visitRow(of entity: Entity, key: Int64, _ body: (any StoredRowSource) throws -> Void) throws

    /// The rows `fetch` matches, in its order, within its limit and offset.
    func fetchRows(_ fetch: StoreFetch) throws(FetchError) -> [(Int64, StoredRow)]
    /// The primary keys `fetch` matches, in its order, within its limit and offset.
    func fetchKeys(_ fetch: StoreFetch) throws(FetchError) -> [Int64]
    /// How many objects `fetch` matches (its limit and offset not applied).
    func count(_ fetch: StoreFetch) throws(FetchError) -> Int
    /// The values of `keyPaths` of the objects `fetch` matches, one list per object.
    func fetchValues(_ fetch: StoreFetch, keyPaths: [ResolvedKeyPath]) throws(FetchError) -> [[PropertyValue]]
    /// The keys `fetch` matches with their sort values: a page, and the cursor after it.
    func fetchKeysAndSortValues(_ fetch: StoreFetch) throws(FetchError) -> [(Int64, [AttributeValue])]
    /// The groups of a checked aggregate request.
    func aggregate(_ aggregate: PreparedAggregate) throws(AggregateError) -> [AggregateGroup]

    /// The recorded changes of the object `key` after its version `version`, newest first; nil
    /// when the history no longer reaches that version (pruned, or not recorded).
    func historyChanges(ofObject entity: Entity, key: Int64, after version: Int64) throws(StoreError) -> [PersistentHistoryChange]?
    /// Up to `limit` recorded saves after `token`, oldest first; with `entities`, only the
    /// changes of those entities' objects, and only saves that have one. The caller checks
    /// first that the history still reaches `token` (`oldestHistoryToken`).
    func historyTransactions(after token: PersistentHistoryToken, limit: Int, entities: Set<String>?) throws(StoreError) -> [PersistentHistoryTransaction]
    /// The token of the newest recorded save (the newest pruned one when none is left; zero before any).
    func lastHistoryToken() throws(StoreError) -> PersistentHistoryToken
    /// The oldest token the history can be read after: every save after it is retained.
    func oldestHistoryToken() throws(StoreError) -> PersistentHistoryToken
    /// How many recorded saves the history holds.
    func historyTransactionCount() throws(StoreError) -> Int
    /// The newest recorded save made before `date`, looking only at the oldest `limit` saves
    /// when a limit is given; nil when there is none.
    func newestHistoryToken(before date: Date, amongOldest limit: Int?) throws(StoreError) -> PersistentHistoryToken?

    /// The record of `key`, expired or not.
    func idempotencyRecord(for key: IdempotencyKey) throws(StoreError) -> IdempotencyRecord?
    /// How many idempotency records the store holds (expired ones not yet deleted included).
    func idempotencyRecordCount() throws(StoreError) -> Int
}

/// A row lent in place by `StoreReadSession.visitRow`: valid only inside the call that lends it.
package protocol StoredRowSource: AnyObject {
    var version: Int64 { get }
    func value(ofAttributeAt index: Int) -> AttributeValue
    /// Writes the attribute's value as `JSONWriter.write(_:)` writes `value(ofAttributeAt:)`.
    func writeJSON(ofAttributeAt index: Int, into writer: inout JSONWriter)
    /// The key in the row's own column of the relationship at `relationship` when the row stores
    /// it (`.some(nil)`: stored and empty); nil when the row does not store that relationship.
    func storedForeignKey(ofRelationship relationship: Int) -> Int64??
    /// Calls `body` with the keys of the destinations of `relationship`, ascending, read in the
    /// same snapshot as the row.
    func forEachDestinationKey(ofRelationship relationship: Int, _ body: (Int64) throws -> Void) throws
}

/// A checked fetch as a store runs it: the request, the window of it wanted, and tuning for
/// the store's plans.
package struct StoreFetch {
    package let prepared: PreparedFetch
    /// At most this many (0: no limit), after skipping `offset`.
    package let limit: Int
    package let offset: Int
    /// The plans' knobs and counters of the context asking (tests turn them).
    package let tuning: FetchTuning
    /// The read runs on the writer's connection (a context reading through it, inside or
    /// outside a group commit): no statement may be stopped part-way.
    package let onWriter: Bool

    package init(_ prepared: PreparedFetch, limit: Int, offset: Int, tuning: FetchTuning, onWriter: Bool) {
        self.prepared = prepared
        self.limit = limit
        self.offset = offset
        self.tuning = tuning
        self.onWriter = onWriter
    }
}

/// Knobs of a store's fetch plans, per context, and what they did: tests lower the budgets to
/// reach the hand-overs with little data, and check that the plan they compare ran.
///
/// Not Sendable: it belongs to one context and is used on its queue.
package final class FetchTuning {
    /// Rows a limited fetch in key order may scan before the store's own plan takes over.
    package var keyOrderScanBudget: Int32
    /// Groups of equal sort values a limited descending fetch walks before the store's own plan
    /// takes over; 0 never walks.
    package var groupedOrderBudget: Int
    /// Fetches that walked groups.
    package var groupedOrderWalks = 0
    /// Whether a store that answers part of a predicate in its query language may (false: the
    /// in-memory evaluator over every row, the twin tests' plain path).
    package var compilesPredicates = true

    static let defaultKeyOrderScanBudget: Int32 = 20_000
    static let defaultGroupedOrderBudget = 8

    package init(keyOrderScanBudget: Int32 = FetchTuning.defaultKeyOrderScanBudget,
                 groupedOrderBudget: Int = FetchTuning.defaultGroupedOrderBudget) {
        self.keyOrderScanBudget = keyOrderScanBudget
        self.groupedOrderBudget = groupedOrderBudget
    }
}

/// A snapshot of the store held open across calls: a pinned query generation, a long
/// asynchronous fetch. It begins at its first read; every read in it sees the store as it was
/// then, whatever is committed meanwhile; it ends when the last user lets it go.
package protocol StoreSnapshot: AnyObject, Sendable {
    /// The commit count when the snapshot began; nil before its first read.
    var commit: Int? { get }
    /// Runs `body` in the snapshot (beginning it, if it has not begun). Users on several
    /// threads take turns.
    func read<T>(_ body: (any StoreReadSession) throws -> T) throws -> T
    /// The keys `fetch` matches, in its order, to be read a few at a time in this snapshot.
    func openKeyStream(_ fetch: StoreFetch) throws(FetchError) -> any StoreKeyStream
}

/// The keys of one fetch, read a few at a time (an asynchronous fetch's pages).
package protocol StoreKeyStream: AnyObject {
    /// Up to `count` more keys; fewer (possibly none) once the result is complete.
    func next(_ count: Int) throws(FetchError) -> [Int64]
}
