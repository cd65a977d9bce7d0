import Foundation

/// What a context reads from a persistent store, all in one snapshot of it [the reads of
/// NSIncrementalStore: newValuesForObject, newValueForRelationship, and execute(_:with:) for
/// fetch requests], by concern: rows and faults, the queries a store answers in its own
/// language, the persistent history, and idempotency records.
///
/// A session is lent for one read (`PersistentStore.read`) or one write transaction; it is used
/// by one thread at a time and never kept. Requests arrive checked against the model
/// (`PreparedFetch`: a predicate tree, resolved sorts and key paths): a store answers them in
/// its own way (SQL for the SQLite and PostgreSQL stores) with the results the in-memory
/// evaluator would give.
package protocol StoreReadSession: StoreRowReading, StoreQueryAnswering, StoreHistoryReading, StoreIdempotencyReading {}

/// Rows and relationships by key: what faults are fulfilled from.
package protocol StoreRowReading: AnyObject {
    /// A fault's values: the row of `entity` with primary key `key`, or nil when the store holds none.
    func row(of entity: Entity, key: Int64) throws(StoreError) -> StoredRow?
    /// Faults fired in a batch (a fetch's `relationshipKeyPathsForPrefetching`, a batch size):
    /// the rows of `entity` with these keys, by key (a key without a row is absent).
    func rows(of entity: Entity, keys: [Int64]) throws(StoreError) -> [Int64: StoredRow]
    /// Which of `keys` `entity` has rows for: the kind of a parent entity's key
    /// (`kinds(ofKeys:in:model:)`). `rows(of:keys:)` answers it too; a store may read less.
    func existingKeys(of entity: Entity, among keys: [Int64]) throws(StoreError) -> Set<Int64>
    /// A relationship fault: the keys of the destinations of `relationship` of the object `key`, ascending.
    func destinationKeys(of entity: Entity, relationship: Int, key: Int64) throws(StoreError) -> [Int64]
    /// To-many faults fired together: owner key → keys, each list ascending.
    func destinationKeys(of entity: Entity, relationship: Int, owners: [Int64]) throws(StoreError) -> [Int64: [Int64]]
    /// Delete rules of one-way relationships: the keys of the objects of `entity` whose
    /// `relationship` holds the object `destination`, ascending.
    func ownerKeys(of entity: Entity, relationship: Int, destination: Int64) throws(StoreError) -> [Int64]
    /// An answer that only serializes an object: its row lent to `body` as it lies in the
    /// store, without copying its values out; `body` is not called when there is none.
    func visitRow(of entity: Entity, key: Int64, _ body: (any StoredRowSource) throws -> Void) throws
}

/// Fetch requests and aggregates answered in the store's own query language (pushed down),
/// with the results the in-memory evaluator would give [execute(_:with:) for fetch requests].
package protocol StoreQueryAnswering: AnyObject {
    /// A fetch of objects: the rows `fetch` matches, in its order, within its limit and offset.
    func fetchRows(_ fetch: StoreFetch) throws(FetchError) -> [(Int64, StoredRow)]
    /// A fetch of object IDs (or of faults): the keys `fetch` matches, in order, within its window.
    func fetchKeys(_ fetch: StoreFetch) throws(FetchError) -> [Int64]
    /// `count(for:)`: how many objects `fetch` matches (its limit and offset not applied).
    func count(_ fetch: StoreFetch) throws(FetchError) -> Int
    /// A dictionary fetch: the values of `keyPaths` of the objects `fetch` matches, one list per object.
    func fetchValues(_ fetch: StoreFetch, keyPaths: [ResolvedKeyPath]) throws(FetchError) -> [[PropertyValue]]
    /// Keyset paging: the keys `fetch` matches with their sort values, a page and the cursor after it.
    func fetchKeysAndSortValues(_ fetch: StoreFetch) throws(FetchError) -> [(Int64, [AttributeValue])]
    /// `propertiesToGroupBy` and expression descriptions: the groups of a checked aggregate request.
    func aggregate(_ aggregate: PreparedAggregate, tuning: FetchTuning) throws(AggregateError) -> [AggregateGroup]
}

/// The persistent history as recorded by the store's saves [NSPersistentHistoryChangeRequest].
package protocol StoreHistoryReading: AnyObject {
    /// Merge policies' changed properties: the recorded changes of the object `key` after its
    /// version `version`, newest first; nil when the history no longer reaches that version.
    func historyChanges(ofObject entity: Entity, key: Int64, after version: Int64) throws(StoreError) -> [PersistentHistoryChange]?
    /// The change feed: up to `limit` recorded saves after `token`, oldest first; with
    /// `entities`, only the changes of those entities' objects, and only saves that have one.
    /// The caller checks first that the history still reaches `token` (`oldestHistoryToken`).
    func historyTransactions(after token: PersistentHistoryToken, limit: Int, entities: Set<String>?) throws(StoreError) -> [PersistentHistoryTransaction]
    /// Where the feed is now: the token of the newest recorded save (the newest pruned one when
    /// none is left; zero before any).
    func lastHistoryToken() throws(StoreError) -> PersistentHistoryToken
    /// Where the feed may resume from: every save after this token is retained.
    func oldestHistoryToken() throws(StoreError) -> PersistentHistoryToken
    /// Metrics: how many recorded saves the history holds.
    func historyTransactionCount() throws(StoreError) -> Int
    /// Pruning by age: the newest recorded save made before `date`, looking only at the oldest
    /// `limit` saves when a limit is given; nil when there is none.
    func newestHistoryToken(before date: Date, amongOldest limit: Int?) throws(StoreError) -> PersistentHistoryToken?
}

/// The records of saves made under an idempotency key, kept with the data they wrote.
package protocol StoreIdempotencyReading: AnyObject {
    /// A retry's answer: the record of `key`, expired or not.
    func idempotencyRecord(for key: IdempotencyKey) throws(StoreError) -> IdempotencyRecord?
    /// Metrics: how many idempotency records the store holds (expired ones not yet deleted included).
    func idempotencyRecordCount() throws(StoreError) -> Int
}

/// A row lent in place by `StoreReadSession.visitRow`: valid only inside the call that lends it.
package protocol StoredRowSource: AnyObject {
    /// The answer's ETag: the row's version.
    var version: Int64 { get }
    /// A value the answer needs as a value (a derived or a transformed one).
    func value(ofAttributeAt index: Int) -> AttributeValue
    /// The answer's JSON without a value in between: writes the attribute's value as
    /// `JSONWriter.write(_:)` writes `value(ofAttributeAt:)`.
    func writeJSON(ofAttributeAt index: Int, into writer: inout JSONWriter)
    /// A to-one in the answer: the key in the row's own column of the relationship at
    /// `relationship` when the row stores it (`.some(nil)`: stored and empty); nil when the row
    /// does not store that relationship.
    func storedForeignKey(ofRelationship relationship: Int) -> Int64??
    /// A to-many in the answer: calls `body` with the keys of the destinations of
    /// `relationship`, ascending, read in the same snapshot as the row.
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
    /// The read is part of a write transaction (a context reading through the writer, inside
    /// or outside a group commit): the store may not stop a statement part-way, which would
    /// end the transaction in SQLite and in PostgreSQL alike.
    package let insideWriteTransaction: Bool

    package init(_ prepared: PreparedFetch, limit: Int, offset: Int, tuning: FetchTuning, insideWriteTransaction: Bool) {
        self.prepared = prepared
        self.limit = limit
        self.offset = offset
        self.tuning = tuning
        self.insideWriteTransaction = insideWriteTransaction
    }
}

/// What a context asks of every store's fetches: whether the store may answer part of a
/// predicate in its own query language (false: the in-memory evaluator over every row, the twin
/// tests' plain path). A store's own plans have budgets of their own (the SQLite store's
/// `SQLitePlanOptions`).
///
/// Not Sendable: it belongs to one context and is used on its queue.
package final class FetchTuning {
    package var compilesPredicates = true
    /// Rows a store reads at a time where it streams a fetch through its evaluator (the
    /// PostgreSQL store, when part of a predicate is not SQL): small in the twin tests, so that
    /// their few rows span many batches.
    package var streamBatchRows = 2_000
    /// The most rows a store loads to answer one request in memory over every row of the
    /// entities it reads (the PostgreSQL store, for what follows a relationship its SQL does not
    /// follow); past it the request is refused (`FetchError.invalidRequest`, a 400), so that one
    /// query cannot grow the server with the table. About 100 MB of rows at the default.
    package var rowsInMemoryLimit = 100_000

    package init() {}
}

/// A snapshot of the store held open across calls: a pinned query generation, a long
/// asynchronous fetch. It begins at its first read; every read in it sees the store as it was
/// then, whatever is committed meanwhile; it ends when the last user lets it go.
package protocol StoreSnapshot: AnyObject, Sendable {
    /// A query generation's token: the commit count when the snapshot began; nil before its first read.
    var commit: Int? { get }
    /// A pinned context's reads: runs `body` in the snapshot (beginning it, if it has not
    /// begun). Users on several threads take turns.
    func read<T>(_ body: (any StoreReadSession) throws -> T) throws -> T
    /// An asynchronous fetch that reports progress: the keys `fetch` matches, in its order, to
    /// be read a few at a time in this snapshot.
    func openKeyStream(_ fetch: StoreFetch) throws(FetchError) -> any StoreKeyStream
}

/// The keys of one fetch, read a few at a time (an asynchronous fetch's pages).
package protocol StoreKeyStream: AnyObject {
    /// The asynchronous fetch's next batch: up to `count` more keys; fewer (possibly none) once
    /// the result is complete.
    func next(_ count: Int) throws(FetchError) -> [Int64]
}
