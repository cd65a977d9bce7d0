import Foundation
import ManagedStoreCore

/// Everything a dictionary store holds, as one value: a snapshot of the store is a copy of it
/// (the dictionaries are copied on write), a transaction works on its own copy and commits by
/// handing it back.
struct DictionaryState: Sendable {
    /// Per entity (by index): stored rows by primary key.
    var rows: [[Int64: StoredRow]]
    /// Per many-to-many link list (`RelationshipStorage.joinTable`): its links.
    var links: [String: Set<LinkPair>] = [:]
    /// Per ordered relationship ("Entity.relationship"): each destination's place, by owner
    /// and destination (`a` the owner, `b` the destination).
    var places: [String: [LinkPair: Int64]] = [:]
    /// Per entity: the last primary key handed out (keys are never handed out twice).
    var lastKeys: [Int64]
    /// The recorded saves, oldest first.
    var transactions: [PersistentHistoryTransaction] = []
    var lastToken: Int64 = 0
    /// The newest token pruned (0 when none was).
    var prunedThrough: Int64 = 0
    /// Per object: its recorded changes, oldest first; nil when a save that recorded nothing
    /// changed it (what changed since is unknown).
    var chains: [ObjectKey: [ChainLink]?] = [:]
    var idempotency: [IdempotencyKey: IdempotencyRecord] = [:]
    /// Idempotency keys in the order their records were stored (expiry takes the oldest).
    var idempotencyOrder: [IdempotencyKey] = []

    init(model: ManagedObjectModel) {
        rows = Array(repeating: [:], count: model.schema.count)
        lastKeys = Array(repeating: 0, count: model.schema.count)
    }

    struct LinkPair: Hashable, Sendable {
        let a: Int64
        let b: Int64
    }

    struct ObjectKey: Hashable, Sendable {
        let entity: Int
        let key: Int64
    }

    /// One recorded change of an object: the save's token, the object's version after it (nil
    /// when the save changed only links kept elsewhere, or deleted it), and the change.
    struct ChainLink: Sendable {
        let token: Int64
        let version: Int64?
        let change: PersistentHistoryChange
    }

    // MARK: Relationships

    /// The keys of the destinations of `relationship` of the object `key`, ascending: from the
    /// row's own key, the destinations' keys, or the link list.
    func destinationKeys(of entity: Entity, relationship r: Int, key: Int64, model: ManagedObjectModel) -> [Int64] {
        let keys = storedDestinationKeys(of: entity, relationship: r, key: key, model: model)
        guard entity.relationships[r].isOrdered, let places = places["\(entity.name).\(entity.relationships[r].name)"] else { return keys }
        // Placed destinations first, in place order; the others after, by key (as the SQL stores).
        return keys.sorted { x, y in
            switch (places[LinkPair(a: key, b: x)], places[LinkPair(a: key, b: y)]) {
            case let (p?, q?): return p != q ? p < q : x < y
            case (.some, nil): return true
            case (nil, .some): return false
            case (nil, nil): return x < y
            }
        }
    }

    private func storedDestinationKeys(of entity: Entity, relationship r: Int, key: Int64, model: ManagedObjectModel) -> [Int64] {
        let relationship = entity.relationships[r]
        switch relationship.storage {
        case .foreignKey:
            guard let position = entity.foreignKeyRelationships.firstIndex(of: r),
                  let target = rows[entity.index][key]?.foreignKeys[position] else { return [] }
            return [target]
        case .inverseForeignKey:
            // Every kind of the destination (a parent entity's objects are its sub-entities').
            let destination = model.schema[relationship.destinationIndex]
            guard let inverse = relationship.inverseIndex else { return [] }
            return Set([destination.index] + destination.kinds).flatMap { kind -> [Int64] in
                guard let position = model.schema[kind].foreignKeyRelationships.firstIndex(of: inverse) else { return [] }
                return rows[kind].compactMap { pk, row in row.foreignKeys[position] == key ? pk : nil }
            }.sorted()
        case let .joinTable(table, isFirstSide):
            let pairs = links[table] ?? []
            return pairs.compactMap { pair in
                isFirstSide ? (pair.a == key ? pair.b : nil) : (pair.b == key ? pair.a : nil)
            }.sorted()
        }
    }

    // MARK: History

    /// The changes of the object recorded after it reached `version`, newest first; nil when
    /// the history does not reach that version.
    func historyChanges(of object: ObjectKey, after version: Int64) -> [PersistentHistoryChange]? {
        guard let known = chains[object], let chain = known else { return nil }
        var changes: [PersistentHistoryChange] = []
        for link in chain.reversed() {
            // A change of a pruned save: the history no longer reaches `version`.
            guard link.token > prunedThrough else { return nil }
            if link.version == version { return changes }
            changes.append(link.change)
        }
        return nil
    }

    mutating func deleteHistory(before token: PersistentHistoryToken) -> Int {
        let newest = transactions.last?.token.rawValue ?? prunedThrough
        let before = transactions.count
        transactions.removeAll { $0.token.rawValue < token.rawValue && $0.token.rawValue > prunedThrough }
        prunedThrough = max(prunedThrough, min(token.rawValue - 1, newest))
        return before - transactions.count
    }
}
