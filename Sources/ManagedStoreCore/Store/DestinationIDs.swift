import Foundation

// A store keeps a relationship's destinations as keys. An entity's keys come from its
// hierarchy's sequence (`Entity.keyRoot`), so a key names one object across the hierarchy, as
// Core Data's Z_PK does, and a relationship to a parent entity holds just the key. Which kind
// the object is, is where its row is: for a destination without sub-entities that is known
// from the model and costs nothing; for a parent entity it is read from its kinds' tables.

extension StoreReadSession {
    package func existingKeys(of entity: Entity, among keys: [Int64]) throws(StoreError) -> Set<Int64> {
        Set(try rows(of: entity, keys: keys).keys)
    }

    /// The entity (index) of the object each of `keys` names, among `destination`'s kinds
    /// (`Entity.kinds`). A key no kind holds (its object deleted) is left out.
    package func kinds(ofKeys keys: [Int64], in destination: Entity, model: ManagedObjectModel) throws(StoreError) -> [Int64: Int] {
        var found: [Int64: Int] = [:]
        var remaining = keys
        for kind in destination.kinds where !remaining.isEmpty {
            let held = try existingKeys(of: model.schema[kind], among: remaining)
            guard !held.isEmpty else { continue }
            for key in held { found[key] = kind }
            remaining.removeAll { held.contains($0) }
        }
        return found
    }
}

/// Makes the object IDs of stored destination keys, each named by its own entity.
package struct DestinationIDs {
    package let model: ManagedObjectModel
    package let storeIdentifier: UUID

    package init(model: ManagedObjectModel, storeIdentifier: UUID) {
        self.model = model
        self.storeIdentifier = storeIdentifier
    }

    /// The IDs of `keys`, objects of `destination` or of its sub-entities, in the same order.
    /// Reads nothing unless `destination` has sub-entities. A key whose object is gone keeps
    /// the destination's name: reading that ID finds no object, as it would under any name.
    package func ids(_ keys: [Int64], of destination: Entity, session: any StoreReadSession) throws(StoreError) -> [ManagedObjectID] {
        if destination.isSingleKind || keys.isEmpty { return keys.map { id(destination.name, $0) } }
        let kinds = try session.kinds(ofKeys: keys, in: destination, model: model)
        return keys.map { id(kinds[$0].map { model.schema[$0].name } ?? destination.name, $0) }
    }

    /// `ids` for owners' destinations read at once (`StoreReadSession.destinationKeys(of:relationship:owners:)`).
    package func ids(_ keysByOwner: [Int64: [Int64]], of destination: Entity, session: any StoreReadSession) throws(StoreError) -> [Int64: [ManagedObjectID]] {
        if destination.isSingleKind { return keysByOwner.mapValues { $0.map { id(destination.name, $0) } } }
        let kinds = try session.kinds(ofKeys: Array(Set(keysByOwner.values.joined())), in: destination, model: model)
        return keysByOwner.mapValues { keys in keys.map { id(kinds[$0].map { model.schema[$0].name } ?? destination.name, $0) } }
    }

    /// `values` with every object named by its own entity: a store's query reads a to-one's
    /// key, and names it after the relationship's destination, a parent entity perhaps.
    package func namingKinds(_ values: [[PropertyValue]], session: any StoreReadSession) throws(StoreError) -> [[PropertyValue]] {
        var keysByParent: [String: Set<Int64>] = [:]
        for row in values {
            for case .object(let id?) in row {
                guard let entity = model.resolvedEntity(named: id.entityName), !entity.isSingleKind, let key = id.primaryKey else { continue }
                keysByParent[entity.name, default: []].insert(key)
            }
        }
        guard !keysByParent.isEmpty else { return values }
        var named: [String: [Int64: ManagedObjectID]] = [:]
        for (parent, keys) in keysByParent {
            let keys = Array(keys)
            named[parent] = Dictionary(uniqueKeysWithValues: zip(keys, try ids(keys, of: model.resolvedEntity(named: parent)!, session: session)))
        }
        return values.map { row in
            row.map { value in
                guard case .object(let id?) = value, let key = id.primaryKey, let renamed = named[id.entityName]?[key] else { return value }
                return .object(renamed)
            }
        }
    }

    private func id(_ entity: String, _ key: Int64) -> ManagedObjectID {
        ManagedObjectID(storeIdentifier: storeIdentifier, entityName: entity, key: .permanent(key))
    }
}

extension ManagedObjectModel {
    /// Whether an object of entity `kind` can be a destination of a relationship to
    /// `destination`: it is that entity or one below it, and not abstract (an abstract entity
    /// has no objects: `Item/3` names nothing, whichever kind holds key 3).
    package func isKind(_ kind: Int, of destination: Int) -> Bool {
        schema[destination].kinds.contains(kind)
    }

    /// The entity whose objects (its kinds' too) hold this side of `relationship`'s links, as
    /// declared: for a relationship a sub-entity inherits, the parent that declares it, whose
    /// links every kind shares. A one-way relationship keeps each entity's links apart.
    package func linkOwner(of entity: Entity, _ relationship: Relationship) -> Entity {
        guard let inverse = relationship.inverseIndex else { return entity }
        return schema[schema[relationship.destinationIndex].relationships[inverse].destinationIndex]
    }

    /// `entity` and every entity below it (abstract ones too), in model order: the tables that
    /// hold a column `entity` declares.
    package func withSubentities(_ entity: Entity) -> [Entity] {
        schema.filter { candidate in
            var current: Int? = candidate.index
            while let index = current {
                if index == entity.index { return true }
                current = schema[index].parentIndex
            }
            return false
        }
    }

    /// `isKind` by entity names; false for a name the model does not have.
    package func isKind(named kind: String, of destination: String) -> Bool {
        guard let k = entityIndexByName[kind], let d = entityIndexByName[destination] else { return false }
        return isKind(k, of: d)
    }
}
