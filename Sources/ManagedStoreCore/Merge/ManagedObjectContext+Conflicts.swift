// The conflict records of a refused save [NSMergeConflict]: for each object whose stored
// version is not the one its change was based on, the values at that version, in the store,
// and in this context, and which properties each side changed. The persistent history says
// which properties the store changed after the base version and what they were before; without
// it, only a version this context read itself can be compared.

/// What the store holds for one object: its version and every property's value.
struct PersistedState {
    let version: Int64
    var attributes: [AttributeValue]
    /// Each relationship's destinations (to-ones as sets of at most one).
    var relationships: [Set<ManagedObjectID>]
    /// Each ordered relationship's destinations in their stored order (by relationship index).
    var orders: [Int: [ManagedObjectID]] = [:]

    /// Relationship `r`'s destinations as a relationship fault would load them: an ordered
    /// one's in its order, any other's by key.
    func loadOrder(_ r: Int) -> [ManagedObjectID] { orders[r] ?? relationships[r].sortedByKey() }
}

extension ManagedObjectContext {
    /// The stored state of `entity`'s object `pk`, relationships included; nil when it is gone.
    func persistedState(_ entity: Entity, pk: Int64, _ session: any StoreReadSession) throws(StoreError) -> PersistedState? {
        guard let row = try session.row(of: entity, key: pk) else { return nil }
        var relationships: [Set<ManagedObjectID>] = []
        var orders: [Int: [ManagedObjectID]] = [:]
        for (r, relationship) in entity.relationships.enumerated() {
            let destination = coordinator.model.schema[relationship.destinationIndex]
            let ids = coordinator.destinationIDs
            if let position = entity.foreignKeyRelationships.firstIndex(of: r) {
                relationships.append(Set(try ids.ids(row.foreignKeys[position].map { [$0] } ?? [], of: destination, session: session)))
            } else {
                let destinations = try ids.ids(session.destinationKeys(of: entity, relationship: r, key: pk), of: destination, session: session)
                relationships.append(Set(destinations))
                if relationship.isOrdered { orders[r] = destinations }
            }
        }
        return PersistedState(version: row.version, attributes: row.attributes, relationships: relationships, orders: orders)
    }

    /// A snapshot of a state: every property by name.
    func snapshot(_ entity: Entity, attributes: [AttributeValue], relationships: [Set<ManagedObjectID>?]) -> ObjectSnapshot {
        var result: ObjectSnapshot = [:]
        for (i, attribute) in entity.attributes.enumerated() where i < attributes.count { result[attribute.name] = .attribute(attributes[i]) }
        for (r, relationship) in entity.relationships.enumerated() where r < relationships.count {
            guard let destinations = relationships[r] else { continue }
            result[relationship.name] = relationship.isToMany ? .objects(destinations.sortedByKey()) : .object(destinations.first)
        }
        return result
    }

    /// The destinations a relationship state holds; nil while it is not loaded.
    func loadedDestinations(_ state: RelationshipState) -> Set<ManagedObjectID>? {
        switch state {
        case .unloaded: return nil
        case .toOne(let id): return id.map { [$0] } ?? []
        case .toMany(let ids): return ids
        }
    }

    /// The properties `object` set since it was read (R): those it changed, and those it set
    /// to the value they had (a write that sets a title to the store's title still sets it).
    func changedPropertyNames(_ object: ManagedObject) -> Set<String> {
        let entity = object.entity
        var names = Set(object.changedAttributes.filter { $0 < object.committedAttributes.count && object.attributes[$0] != object.committedAttributes[$0] }
            .map { entity.attributes[$0].name })
        for r in object.changedRelationships { names.insert(entity.relationships[r].name) }
        for (index, name) in entity.propertyNames.enumerated() where object.wasSet(index) { names.insert(name) }
        return names
    }

    /// The conflict record of `object`, whose change was based on a version the store no longer
    /// holds. Reads the store (and its history) in `session`.
    func mergeConflict(for object: ManagedObject, _ session: any StoreReadSession) throws(StoreError) -> MergeConflict {
        let entity = object.entity
        let base = object.expectedVersion
        let pk = object.objectID.primaryKey ?? 0
        let persisted = try persistedState(entity, pk: pk, session)
        let persistedSnapshot = persisted.map { snapshot(entity, attributes: $0.attributes, relationships: $0.relationships) }
        // A relationship this context never read is as the store holds it.
        let objectSnapshot = object.isDeleted ? nil
            : snapshot(entity, attributes: object.attributes, relationships: object.relationships.enumerated().map { r, state in
                loadedDestinations(state) ?? persisted?.relationships[r]
            })

        var cached: ObjectSnapshot?
        var storeChanged: Set<String>?
        let history = coordinator.storeDescription.recordsHistory ? try session.historyChanges(ofObject: entity, key: pk, after: base) : nil
        if let history {
            storeChanged = Set(history.flatMap { change in change.changeType == .delete ? entity.propertyNames : change.updatedProperties })
            cached = valuesBefore(history, entity: entity, persisted: persisted)
        } else if base == object.committedVersion && !object.isFault {
            // No history, but this context read the base version itself: compare what it read.
            let read = snapshot(entity, attributes: object.committedAttributes, relationships: object.committedRelationships.map(loadedDestinations))
            cached = read
            if let persistedSnapshot { storeChanged = Set(read.keys.filter { read[$0] != persistedSnapshot[$0] }) }
        }
        return MergeConflict(objectID: object.objectID, oldVersion: base, newVersion: persisted?.version ?? 0,
                             objectSnapshot: objectSnapshot, cachedSnapshot: cached, persistedSnapshot: persistedSnapshot,
                             changedProperties: changedPropertyNames(object), storeChangedProperties: storeChanged)
    }

    /// The values before `changes` (newest first), undone one after another from the stored
    /// state (or from what a deletion recorded, when the object is gone).
    func valuesBefore(_ changes: [PersistentHistoryChange], entity: Entity, persisted: PersistedState?) -> ObjectSnapshot {
        var attributes = persisted?.attributes ?? entity.attributes.map { _ in .null }
        var relationships = persisted?.relationships ?? entity.relationships.map { _ in [] }
        for change in changes {
            for (name, value) in change.previousValues {
                switch (entity.property(named: name), value) {
                case let (.attribute(a)?, .attribute(before)):
                    attributes[a] = before
                case let (.relationship(r)?, .destinations(added, removed)):
                    relationships[r].subtract(added)
                    relationships[r].formUnion(removed)
                default:
                    continue
                }
            }
        }
        return snapshot(entity, attributes: attributes, relationships: relationships)
    }
}
