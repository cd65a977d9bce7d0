// Resolving a save's conflicts by a merge policy (MergePolicy.swift): each conflicting object
// takes in the store's state and keeps, property by property, what the policy says; inverses
// are kept consistent through the same setters an application uses; then the save runs again.

extension MergePolicy {
    /// Whether the policy resolves conflicts (everything but `error`).
    var resolves: Bool {
        if case .error = self { return false }
        return true
    }
}

/// What the merge policy resolved over a save's attempts.
struct MergeResolution {
    var optimisticLocking: [MergeConflict] = []
    /// Uniqueness conflicts of inserts, the object that holds the values now, and the inserts
    /// folded into it.
    var uniqueness: [(conflict: ConstraintConflict, survivor: ManagedObject, folded: [ManagedObjectID])] = []

    /// `saved` with the resolution's records (the survivors' IDs are permanent by now).
    func saved(_ saved: SavedChanges) -> SavedChanges {
        guard !optimisticLocking.isEmpty || !uniqueness.isEmpty else { return saved }
        var survivors: [ManagedObjectID: ManagedObjectID] = [:]
        for (_, survivor, folded) in uniqueness { for id in folded { survivors[id] = survivor.objectID } }
        let resolved = optimisticLocking.map(ResolvedConflict.optimisticLocking)
            + uniqueness.map { ResolvedConflict.uniqueness($0.conflict, survivor: $0.survivor.objectID, merged: $0.folded) }
        return SavedChanges(inserted: saved.inserted, updated: saved.updated, deleted: saved.deleted, token: saved.token,
                            resolved: resolved, mergedInserts: survivors)
    }
}

extension ManagedObjectContext {
    /// Resolves `conflicts` and `constraints` by `policy`, or throws them when it cannot.
    func resolve(_ conflicts: [MergeConflict], _ constraints: [ConstraintConflict], policy: MergePolicy,
                 into resolution: inout MergeResolution) throws(SaveError) {
        func unresolved() -> SaveError { .conflict(mergeConflicts: conflicts, constraintConflicts: constraints) }
        // An object deleted in the store has nothing to merge with; a uniqueness conflict of an
        // object already saved (an update taking a value another holds) neither.
        guard conflicts.allSatisfy({ $0.persistedSnapshot != nil }),
              constraints.allSatisfy({ $0.objects.allSatisfy(\.isTemporaryID) }) else { throw unresolved() }
        if case .custom(let resolver) = policy {
            for conflict in conflicts { try absorbStoreState(conflict, keeping: .mine) }
            do { try resolver.resolve(conflicts, constraintConflicts: constraints, in: self) } catch { throw unresolved() }
            resolution.optimisticLocking += conflicts
            return
        }
        for conflict in conflicts {
            try absorbStoreState(conflict, keeping: Choice(policy: policy))
            resolution.optimisticLocking.append(conflict)
        }
        for constraint in constraints {
            try foldInserts(constraint, policy: policy, into: &resolution)
        }
    }

    /// Which values a conflicting object keeps for the properties this context changed.
    enum Choice {
        /// All of them (object-trump; custom resolvers start here).
        case mine
        /// The store's where it changed them too (store-trump).
        case mineUnlessStoreChanged
        /// All of them, and the store's other changes undone (overwrite).
        case mineAndBaseForTheRest
        /// None of them (rollback).
        case store

        init(policy: MergePolicy) {
            switch policy {
            case .storeTrump: self = .mineUnlessStoreChanged
            case .overwrite: self = .mineAndBaseForTheRest
            case .rollback: self = .store
            case .error, .objectTrump, .custom: self = .mine
            }
        }

        /// Whether a deletion the store conflicts with goes ahead.
        var keepsDeletion: Bool {
            switch self {
            case .mine, .mineAndBaseForTheRest: return true
            case .mineUnlessStoreChanged, .store: return false
            }
        }
    }

    /// Takes the store's state of a conflicting object as its new base (version and values),
    /// then sets each property as `choice` says, through the graph so that inverses follow.
    func absorbStoreState(_ conflict: MergeConflict, keeping choice: Choice) throws(SaveError) {
        guard let object = lookup(conflict.objectID), let pk = object.objectID.primaryKey else { return }
        let entity = object.entity
        let persisted: PersistedState
        do {
            guard let state = try readStore({ connection in try persistedState(entity, pk: pk, connection) }) else {
                throw SaveError.conflict(mergeConflicts: [conflict], constraintConflicts: [])
            }
            persisted = state
        } catch let error as SaveError {
            throw error
        } catch {
            throw .store(StoreError(wrapping: error))
        }
        if object.isDeleted {
            if choice.keepsDeletion {
                object.committedVersion = persisted.version
                object.claimedBaseVersion = nil
                return
            }
            undelete(object)
        }
        let changed = object.isDeleted ? [] : conflict.changedProperties
        func keepsMine(_ name: String) -> Bool {
            guard changed.contains(name) else { return false }
            switch choice {
            case .mine, .mineAndBaseForTheRest: return true
            case .mineUnlessStoreChanged: return !conflict.storeChanged(name)
            case .store: return false
            }
        }
        // The values at the base version, for overwrite's "C minus R back to B".
        let base = choice == .mineAndBaseForTheRest ? conflict.cachedSnapshot : nil
        if choice == .mineAndBaseForTheRest, base == nil, !(conflict.storeChangedProperties ?? ["?"]).subtracting(changed).isEmpty {
            // Overwrite needs the values at the base version, which the history no longer has.
            throw .conflict(mergeConflicts: [conflict], constraintConflicts: [])
        }

        let mineAttributes = object.attributes
        let mineRelationships = object.relationships
        // The store's state becomes what the object was read at: its version and values; the
        // relationships it did not change show the store's destinations (with this context's
        // changes from the other sides on top).
        object.committedVersion = persisted.version
        object.claimedBaseVersion = nil
        object.committedAttributes = persisted.attributes
        object.attributes = persisted.attributes
        object.changedAttributes = []
        object.changedRelationships = []
        for (a, attribute) in entity.attributes.enumerated() {
            var value: AttributeValue?
            if keepsMine(attribute.name) {
                value = mineAttributes[a]
            } else if let base, conflict.storeChanged(attribute.name), case .attribute(let before)? = base[attribute.name] {
                value = before
            }
            if let value, value != persisted.attributes[a] { object.setAttribute(value, at: a) }
        }
        for (r, relationship) in entity.relationships.enumerated() {
            let stored = persisted.relationships[r]
            let mine = loadedDestinations(mineRelationships[r])
            if changed.contains(relationship.name), let mine {
                if keepsMine(relationship.name) {
                    // From the store's destinations to this context's: the store's additions leave.
                    setLoadedRelationship(of: object, r, stored: stored)
                    setRelationship(object, r, to: mine)
                } else {
                    // From this context's destinations back to the store's: what it moved in
                    // goes back where the store has it.
                    object.committedRelationships[r] = relationshipState(stored, toMany: relationship.isToMany)
                    setRelationship(object, r, to: stored)
                    for destination in mine.subtracting(stored) {
                        restoreInverse(of: destination, relationship.inverseIndex, awayFrom: object.objectID)
                    }
                }
                continue
            }
            setLoadedRelationship(of: object, r, stored: stored)
            if let base, conflict.storeChanged(relationship.name) {
                switch base[relationship.name] {
                case .object(let id)?: setRelationship(object, r, to: id.map { [$0] } ?? [])
                case .objects(let ids)?: setRelationship(object, r, to: Set(ids))
                default: break
                }
            }
        }
    }

    private func relationshipState(_ destinations: Set<ManagedObjectID>, toMany: Bool) -> RelationshipState {
        toMany ? .toMany(destinations) : .toOne(destinations.first)
    }

    /// Sets relationship `r` of `object` to `destinations`, with inverse maintenance.
    private func setRelationship(_ object: ManagedObject, _ r: Int, to destinations: Set<ManagedObjectID>) {
        if object.entity.relationships[r].isToMany {
            setToMany(object, r, destinations)
        } else {
            setToOne(object, r, destinations.first)
        }
    }

    /// After `owner` let go of `destination`, puts the destination's side of the relationship
    /// back to the store's value when it is a to-one left empty by that (a task moved into a
    /// project by this context, taken out again: its stored project).
    private func restoreInverse(of destination: ManagedObjectID, _ inverse: Int, awayFrom owner: ManagedObjectID) {
        guard let target = lookup(destination), !target.isFault, !target.isDeleted, !target.isInserted,
              !target.entity.relationships[inverse].isToMany,
              case .toOne(let now) = target.relationships[inverse], now == nil || now == owner,
              case .toOne(let stored?) = target.committedRelationships[inverse], stored != owner,
              let storedObject = lookup(stored) ?? Optional(object(with: stored)), !storedObject.isDeleted else { return }
        setToOne(target, inverse, stored)
    }

    /// Throws away this context's changes to `object`: it takes the values it was read (or
    /// last saved) with again, and the other sides of the relationships it changed follow
    /// [refresh(_:mergeChanges: false) without turning it into a fault]. For a custom merge
    /// policy, after a conflict: the object holds the store's values then.
    public func rollbackChanges(of object: ManagedObject) {
        assertOnQueue()
        precondition(object.context === self && !object.isInserted, "rollbackChanges(of:): \(object.objectID) is not a saved object of this context")
        if object.isDeleted { undelete(object) }
        let entity = object.entity
        for a in object.changedAttributes where a < object.committedAttributes.count { object.attributes[a] = object.committedAttributes[a] }
        object.changedAttributes = []
        for r in object.changedRelationships {
            guard let stored = loadedDestinations(object.committedRelationships[r]) else { continue }
            let mine = loadedDestinations(object.relationships[r]) ?? []
            setRelationship(object, r, to: stored)
            for destination in mine.subtracting(stored) { restoreInverse(of: destination, entity.relationships[r].inverseIndex, awayFrom: object.objectID) }
        }
        object.changedRelationships = []
    }

    /// Takes back a pending delete of `object`, and what its delete rules did: the objects its
    /// cascades deleted come back too, and the inverse relationships it was taken out of hold
    /// it again.
    func undelete(_ object: ManagedObject) {
        guard object.isDeleted else { return }
        object.isDeleted = false
        deletedList.removeAll { $0 === object }
        discardedInsertList.removeAll { $0 === object }
        guard let effects = deletionEffects.removeValue(forKey: ObjectIdentifier(object)) else { return }
        for child in effects.cascaded { undelete(child) }
        for (target, inverse) in effects.nullified { link(target, inverse, to: object.objectID) }
    }

    /// A uniqueness conflict of inserts: they collapse into one object, the one the store holds
    /// (or the first insert), as the policy says.
    private func foldInserts(_ conflict: ConstraintConflict, policy: MergePolicy, into resolution: inout MergeResolution) throws(SaveError) {
        // (The survivor is remembered as an object: an insert's ID changes when it is saved.)
        let inserts = conflict.objects.compactMap(lookup).filter { $0.isInserted && !$0.isDeleted }
        guard !inserts.isEmpty else { return }
        let survivor: ManagedObject
        var folding = inserts
        if let stored = conflict.conflictingObjects.first {
            do { survivor = try existingObject(with: stored) } catch {
                throw .conflict(mergeConflicts: [], constraintConflicts: [conflict])
            }
        } else {
            survivor = folding.removeFirst()
        }
        for insert in folding {
            switch policy {
            case .objectTrump, .overwrite:
                take(insert, into: survivor, replacing: { if case .overwrite = policy { return true } else { return false } }())
            default:
                break
            }
            forget(insert)
        }
        resolution.uniqueness.append((conflict, survivor, folding.map(\.objectID)))
    }

    /// Sets on `survivor` what `insert` set (and, `replacing`, every other property back to its
    /// default or to nothing), moving its relationships' destinations over.
    private func take(_ insert: ManagedObject, into survivor: ManagedObject, replacing: Bool) {
        let entity = insert.entity
        for (a, attribute) in entity.attributes.enumerated() {
            if insert.wasSetOnInsert(a) {
                survivor.setAttribute(insert.attributes[a], at: a)
            } else if replacing {
                survivor.setAttribute(attribute.defaultValue, at: a)
            }
        }
        let attributeCount = entity.attributes.count
        for r in entity.relationships.indices {
            let set = insert.wasSetOnInsert(attributeCount + r)
            guard set || replacing else { continue }
            let destinations = set ? (loadedDestinations(insert.relationships[r]) ?? []) : []
            // The insert lets go first, so that each destination moves once.
            if entity.relationships[r].isToMany { setToMany(insert, r, []) } else { setToOne(insert, r, nil) }
            if entity.relationships[r].isToMany {
                setToMany(survivor, r, destinations)
            } else {
                setToOne(survivor, r, destinations.first)
            }
        }
    }

    /// Drops an inserted object without delete rules: its relationships let go of their
    /// destinations (which go back to what the store holds for them), and it leaves the context.
    private func forget(_ insert: ManagedObject) {
        let entity = insert.entity
        for r in entity.relationships.indices {
            guard let destinations = loadedDestinations(insert.relationships[r]), !destinations.isEmpty else { continue }
            if entity.relationships[r].isToMany { setToMany(insert, r, []) } else { setToOne(insert, r, nil) }
            for destination in destinations { restoreInverse(of: destination, entity.relationships[r].inverseIndex, awayFrom: insert.objectID) }
        }
        insertedList.removeAll { $0 === insert }
        registered[insert.objectID] = nil
        insert.isDetached = true
    }
}
