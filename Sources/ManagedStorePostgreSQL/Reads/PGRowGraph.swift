import Foundation
import ManagedStoreCore

/// The rows of the entities a fetch reads, loaded from one snapshot, with the destinations of
/// their relationships indexed both ways: what the in-memory evaluator walks.
///
/// Not Sendable: built and used inside one session's call.
final class PGLoadedRows {
    /// Per entity (by index): its rows by key; empty for entities the fetch does not read.
    var rows: [[Int64: StoredRow]]
    /// Per entity and relationship: owner key → destination keys, ascending.
    private var destinations: [[Int: [Int64: [Int64]]]]
    /// The kind of every object of the parent entities the loaded relationships point at,
    /// by key: an ID compared with a stored key names the key's own entity, loaded or not.
    private var kindOfKey: [Int64: Int] = [:]

    init(entities: Set<Int>, session: PGSession) throws(StoreError) {
        let model = session.model
        rows = Array(repeating: [:], count: model.schema.count)
        destinations = Array(repeating: [:], count: model.schema.count)
        // A parent entity's objects are its kinds' rows (a relationship to it reaches them).
        let entities = entities.union(entities.flatMap { model.schema[$0].kinds })
        for index in entities {
            for (key, row) in try session.allRows(of: model.schema[index]) { rows[index][key] = row }
        }
        // Every relationship of a loaded entity: a comparison with an object reads the stored
        // key even when the destination's rows are not loaded.
        var parents: Set<Int> = []
        for index in entities {
            let entity = model.schema[index]
            for relationship in entity.relationships {
                destinations[index][relationship.index] = try destinationIndex(entity, relationship, session: session)
                if !model.schema[relationship.destinationIndex].isSingleKind { parents.insert(relationship.destinationIndex) }
            }
        }
        for kind in Set(parents.flatMap { model.schema[$0].kinds }) {
            let result = try session.connection.execute("SELECT _pk FROM \(session.schema.tables[kind].table)")
            for i in 0..<result.rowCount { if let key = result.int64(i, 0) { kindOfKey[key] = kind } }
        }
    }

    /// Only `rows` of `entity` (the rows a fetch's compiled conditions let through), for a
    /// predicate that reads nothing but the fetched objects' own columns.
    init(entity: Entity, rows loaded: [(key: Int64, row: StoredRow)], session: PGSession) throws(StoreError) {
        rows = Array(repeating: [:], count: session.model.schema.count)
        destinations = Array(repeating: [:], count: session.model.schema.count)
        for (key, row) in loaded { rows[entity.index][key] = row }
    }

    private func destinationIndex(_ entity: Entity, _ relationship: Relationship, session: PGSession) throws(StoreError) -> [Int64: [Int64]] {
        var index: [Int64: [Int64]] = [:]
        switch relationship.storage {
        case .foreignKey:
            guard let position = entity.foreignKeyRelationships.firstIndex(of: relationship.index) else { return [:] }
            for (key, row) in rows[entity.index] { if let target = row.foreignKeys[position] { index[key] = [target] } }
        case .inverseForeignKey:
            let destination = session.schema.tables[relationship.destinationIndex].kindsSource
            let column = PGValues.quote(relationship.destinationKeyName)
            let result = try session.connection.execute("SELECT \(column), _pk FROM \(destination) AS d WHERE \(column) IS NOT NULL")
            for i in 0..<result.rowCount {
                guard let owner = result.int64(i, 0), let target = result.int64(i, 1) else { continue }
                index[owner, default: []].append(target)
            }
        case let .joinTable(table, isFirstSide):
            let (mine, other) = isFirstSide ? ("a", "b") : ("b", "a")
            let result = try session.connection.execute("SELECT \(mine), \(other) FROM \(PGValues.quote(table))")
            for i in 0..<result.rowCount {
                guard let owner = result.int64(i, 0), let target = result.int64(i, 1) else { continue }
                index[owner, default: []].append(target)
            }
        }
        for key in index.keys { index[key]!.sort() }
        return index
    }

    func destinationKeys(_ entity: Int, _ relationship: Int, of key: Int64) -> [Int64] {
        destinations[entity][relationship]?[key] ?? []
    }

    /// The loaded node `key` names among `destination`'s kinds (itself for an entity without
    /// sub-entities), nil when none holds it.
    func node(_ key: Int64, of destination: Entity) -> PGRowGraph.Node? {
        if destination.isSingleKind { return rows[destination.index][key] != nil ? PGRowGraph.Node(entity: destination.index, key: key) : nil }
        return destination.kinds.first { rows[$0][key] != nil }.map { PGRowGraph.Node(entity: $0, key: key) }
    }

    /// The entity of the object `key` names among `destination`'s kinds, whether or not its
    /// rows are loaded; the destination itself when no kind holds it.
    func kind(of key: Int64, in destination: Entity) -> Int {
        destination.isSingleKind ? destination.index : kindOfKey[key] ?? destination.index
    }
}

/// The loaded rows as the predicate evaluator walks them.
struct PGRowGraph: PredicateGraph {
    struct Node {
        let entity: Int
        let key: Int64
    }

    let rows: PGLoadedRows
    let model: ManagedObjectModel
    let storeIdentifier: UUID

    func objectID(of node: Node) -> ManagedObjectID {
        ManagedObjectID(storeIdentifier: storeIdentifier, entityName: model.schema[node.entity].name, key: .permanent(node.key))
    }

    func isAccessible(_ node: Node) -> Bool { rows.rows[node.entity][node.key] != nil }

    func attribute(_ index: Int, of node: Node) -> AttributeValue { rows.rows[node.entity][node.key]?.attributes[index] ?? .null }

    /// The stored key, whether or not its object is still there (as the SQLite store reads the column).
    /// A stored key's object is named by the kind that holds it; a key no loaded kind holds
    /// (its object gone) keeps the relationship's destination.
    func toOneID(_ relationship: Int, of node: Node) -> ManagedObjectID? {
        let destination = model.schema[model.schema[node.entity].relationships[relationship].destinationIndex]
        return rows.destinationKeys(node.entity, relationship, of: node.key).first.map {
            objectID(of: Node(entity: rows.kind(of: $0, in: destination), key: $0))
        }
    }

    func toOne(_ relationship: Int, of node: Node) -> Node? {
        let destination = model.schema[model.schema[node.entity].relationships[relationship].destinationIndex]
        return rows.destinationKeys(node.entity, relationship, of: node.key).first.flatMap { rows.node($0, of: destination) }
    }

    func toMany(_ relationship: Int, of node: Node) -> [Node] {
        let destination = model.schema[model.schema[node.entity].relationships[relationship].destinationIndex]
        return rows.destinationKeys(node.entity, relationship, of: node.key).compactMap { rows.node($0, of: destination) }
    }
}
