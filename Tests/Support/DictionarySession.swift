import Foundation
import ManagedStoreCore

/// A session on one state of a dictionary store: a read session on a copy of a committed state,
/// or a transaction's write session on the state it is building.
///
/// Not Sendable: lent to one caller at a time, as any store session.
final class DictionarySession: StoreWriteSession {
    var state: DictionaryState
    let model: ManagedObjectModel
    let storeIdentifier: UUID

    init(state: DictionaryState, model: ManagedObjectModel, storeIdentifier: UUID) {
        self.state = state
        self.model = model
        self.storeIdentifier = storeIdentifier
    }

    private func id(_ entity: Entity, _ key: Int64) -> ManagedObjectID {
        ManagedObjectID(storeIdentifier: storeIdentifier, entityName: entity.name, key: .permanent(key))
    }

    // MARK: Rows

    func row(of entity: Entity, key: Int64) throws(StoreError) -> StoredRow? { state.rows[entity.index][key] }

    func rows(of entity: Entity, keys: [Int64]) throws(StoreError) -> [Int64: StoredRow] {
        var found: [Int64: StoredRow] = [:]
        for key in keys { found[key] = state.rows[entity.index][key] }
        return found
    }

    func ownerKeys(of entity: Entity, relationship r: Int, destination: Int64) throws(StoreError) -> [Int64] {
        state.rows[entity.index].keys.filter { owner in
            state.destinationKeys(of: entity, relationship: r, key: owner, model: model).contains(destination)
        }.sorted()
    }

    func destinationKeys(of entity: Entity, relationship: Int, key: Int64) throws(StoreError) -> [Int64] {
        state.destinationKeys(of: entity, relationship: relationship, key: key, model: model)
    }

    func destinationKeys(of entity: Entity, relationship: Int, owners: [Int64]) throws(StoreError) -> [Int64: [Int64]] {
        var result: [Int64: [Int64]] = [:]
        for owner in owners {
            let keys = state.destinationKeys(of: entity, relationship: relationship, key: owner, model: model)
            if !keys.isEmpty { result[owner] = keys }
        }
        return result
    }

    func visitRow(of entity: Entity, key: Int64, _ body: (any StoredRowSource) throws -> Void) throws {
        guard let row = state.rows[entity.index][key] else { return }
        try body(LentRow(row: row, entity: entity) { [self] relationship in try destinationKeys(of: entity, relationship: relationship, key: key) })
    }

    // MARK: Fetches

    func fetchRows(_ fetch: StoreFetch) throws(FetchError) -> [(Int64, StoredRow)] {
        try matches(fetch).map { ($0.key, state.rows[$0.entity][$0.key]!) }
    }

    func fetchKeys(_ fetch: StoreFetch) throws(FetchError) -> [Int64] { try matches(fetch).map(\.key) }

    func count(_ fetch: StoreFetch) throws(FetchError) -> Int { try matches(fetch, windowed: false).count }

    func fetchValues(_ fetch: StoreFetch, keyPaths: [ResolvedKeyPath]) throws(FetchError) -> [[PropertyValue]] {
        InMemoryFetch(graph: graph).values(of: try matches(fetch), keyPaths: keyPaths, model: model)
    }

    func fetchKeysAndSortValues(_ fetch: StoreFetch) throws(FetchError) -> [(Int64, [AttributeValue])] {
        let inMemory = InMemoryFetch(graph: graph)
        return try matches(fetch).map { node in (node.key, inMemory.sortValues(of: node, fetch)) }
    }

    /// The groups of `aggregate`, computed in memory (`InMemoryAggregate`).
    func aggregate(_ aggregate: PreparedAggregate, tuning: FetchTuning) throws(AggregateError) -> [AggregateGroup] {
        let entity = aggregate.fetch.entity.index
        let candidates = state.rows[entity].keys.sorted().map { RowGraph.Node(entity: entity, key: $0) }
        return try InMemoryAggregate(graph: graph, model: model).groups(aggregate, candidates: candidates)
    }

    var graph: RowGraph { RowGraph(state: state, model: model, storeIdentifier: storeIdentifier) }

    /// The objects `fetch` matches, in its order, within its window unless `windowed` is false:
    /// the in-memory evaluator over every stored row.
    func matches(_ fetch: StoreFetch, windowed: Bool = true) throws(FetchError) -> [RowGraph.Node] {
        let entity = fetch.prepared.entity.index
        let candidates = state.rows[entity].keys.sorted().map { RowGraph.Node(entity: entity, key: $0) }
        return try InMemoryFetch(graph: graph).matches(fetch, candidates: candidates, windowed: windowed)
    }

    // MARK: History and idempotency

    func historyChanges(ofObject entity: Entity, key: Int64, after version: Int64) throws(StoreError) -> [PersistentHistoryChange]? {
        state.historyChanges(of: .init(entity: entity.index, key: key), after: version)
    }

    func historyTransactions(after token: PersistentHistoryToken, limit: Int, entities: Set<String>?) throws(StoreError) -> [PersistentHistoryTransaction] {
        var found: [PersistentHistoryTransaction] = []
        for transaction in state.transactions where transaction.token > token && found.count < limit {
            guard let entities else { found.append(transaction); continue }
            let changes = transaction.changes.filter { entities.contains($0.objectID.entityName) }
            if !changes.isEmpty {
                found.append(PersistentHistoryTransaction(token: transaction.token, timestamp: transaction.timestamp, author: transaction.author,
                                                          contextName: transaction.contextName, changes: changes))
            }
        }
        return found
    }

    func lastHistoryToken() throws(StoreError) -> PersistentHistoryToken {
        PersistentHistoryToken(rawValue: state.transactions.last?.token.rawValue ?? state.prunedThrough)
    }

    func oldestHistoryToken() throws(StoreError) -> PersistentHistoryToken { PersistentHistoryToken(rawValue: state.prunedThrough) }

    func historyTransactionCount() throws(StoreError) -> Int { state.transactions.count }

    func newestHistoryToken(before date: Date, amongOldest limit: Int?) throws(StoreError) -> PersistentHistoryToken? {
        let looked = limit.map { Array(state.transactions.prefix(max(1, $0))) } ?? state.transactions
        return looked.last { $0.timestamp < date }?.token
    }

    func idempotencyRecord(for key: IdempotencyKey) throws(StoreError) -> IdempotencyRecord? { state.idempotency[key] }

    func idempotencyRecordCount() throws(StoreError) -> Int { state.idempotency.count }

    // MARK: Writing

    func write(_ changes: ChangeSet) throws(ChangeSetRejection) -> WrittenChanges {
        // On a copy: a refused change set leaves the state as it was.
        var written = state
        let result = try written.write(changes, model: model, storeIdentifier: storeIdentifier)
        state = written
        return result
    }

    func allocateKeys(of entity: Entity, count: Int) throws(StoreError) -> Int64 {
        let first = state.lastKeys[entity.keyRoot] + 1
        state.lastKeys[entity.keyRoot] += Int64(count)
        return first
    }

    func deleteHistory(before token: PersistentHistoryToken) throws(StoreError) -> Int { state.deleteHistory(before: token) }

    func storeIdempotencyRecord(_ record: IdempotencyRecord) throws(StoreError) {
        if state.idempotency[record.key] != nil { state.idempotencyOrder.removeAll { $0 == record.key } }
        state.idempotency[record.key] = record
        state.idempotencyOrder.append(record.key)
    }

    func deleteIdempotencyRecords(createdBefore cutoff: Date, limit: Int) throws(StoreError) -> Int {
        let oldest = state.idempotencyOrder.prefix(max(1, limit)).filter { state.idempotency[$0].map { $0.created < cutoff } ?? false }
        for key in oldest { state.idempotency[key] = nil }
        state.idempotencyOrder.removeAll { state.idempotency[$0] == nil }
        return oldest.count
    }
}

/// The stored rows of a state as the predicate evaluator walks them.
struct RowGraph: PredicateGraph {
    struct Node {
        let entity: Int
        let key: Int64
    }

    let state: DictionaryState
    let model: ManagedObjectModel
    let storeIdentifier: UUID

    func objectID(of node: Node) -> ManagedObjectID {
        ManagedObjectID(storeIdentifier: storeIdentifier, entityName: model.schema[node.entity].name, key: .permanent(node.key))
    }

    func isAccessible(_ node: Node) -> Bool { state.rows[node.entity][node.key] != nil }

    func attribute(_ index: Int, of node: Node) -> AttributeValue { state.rows[node.entity][node.key]?.attributes[index] ?? .null }

    /// The stored key, whether or not its object is still there (as the SQLite store reads the column).
    func toOneID(_ relationship: Int, of node: Node) -> ManagedObjectID? {
        let entity = model.schema[node.entity]
        let destination = entity.relationships[relationship].destinationIndex
        return state.destinationKeys(of: entity, relationship: relationship, key: node.key, model: model).first
            .map { objectID(of: self.node($0, of: destination) ?? Node(entity: destination, key: $0)) }
    }

    func toOne(_ relationship: Int, of node: Node) -> Node? {
        let entity = model.schema[node.entity]
        return state.destinationKeys(of: entity, relationship: relationship, key: node.key, model: model).first
            .flatMap { self.node($0, of: entity.relationships[relationship].destinationIndex) }
    }

    func toMany(_ relationship: Int, of node: Node) -> [Node] {
        let entity = model.schema[node.entity]
        return state.destinationKeys(of: entity, relationship: relationship, key: node.key, model: model)
            .compactMap { self.node($0, of: entity.relationships[relationship].destinationIndex) }
    }

    /// The stored object `key` names among the kinds of `destination` (a parent entity's objects
    /// are its sub-entities'), nil when none holds it.
    private func node(_ key: Int64, of destination: Int) -> Node? {
        ([destination] + model.schema[destination].kinds).first { state.rows[$0][key] != nil }.map { Node(entity: $0, key: key) }
    }
}
