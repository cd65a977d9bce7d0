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
        // An object deleted in the store has nothing to merge with; a change based on a version
        // the store never reached (above the stored one) is not stale but wrong; a uniqueness
        // conflict of an object already saved (an update taking a value another holds) has
        // nothing to fold into.
        guard conflicts.allSatisfy({ $0.persistedSnapshot != nil && $0.oldVersion < $0.newVersion }),
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
            guard let state = try readStore({ session in try persistedState(entity, pk: pk, session) }) else {
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
        let mineRelationships = object.relationships, mineOrders = object.destinationOrder
        // Overwrite: the relationships the store changed and this context did not, at the base
        // version. A destination deleted since then cannot be put back: the conflict stands
        // (rather than a validation error about a property the save never set). Checked before
        // the object changes, so that a refused save leaves it as it was.
        var relationshipsAtBase: [Int: Set<ManagedObjectID>] = [:]
        if let base {
            for (r, relationship) in entity.relationships.enumerated() where conflict.storeChanged(relationship.name) {
                if changed.contains(relationship.name), loadedDestinations(mineRelationships[r]) != nil { continue }
                let before: Set<ManagedObjectID>
                switch base[relationship.name] {
                case .object(let id)?: before = id.map { [$0] } ?? []
                case .objects(let ids)?: before = Set(ids)
                default: continue
                }
                guard before.allSatisfy(exists) else { throw .conflict(mergeConflicts: [conflict], constraintConflicts: []) }
                relationshipsAtBase[r] = before
            }
        }
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
                    setLoadedRelationship(of: object, r, stored: persisted.loadOrder(r))
                    setRelationship(object, r, to: mine, order: mineOrders[r])
                } else {
                    // From this context's destinations back to the store's: what it moved in
                    // goes back where the store has it.
                    object.committedRelationships[r] = relationshipState(stored, toMany: relationship.isToMany)
                    if relationship.isOrdered { object.committedDestinationOrder[r] = persisted.loadOrder(r) }
                    setRelationship(object, r, to: stored, order: relationship.isOrdered ? persisted.loadOrder(r) : nil)
                    for destination in mine.subtracting(stored) {
                        restoreInverse(of: destination, relationship.inverseIndex, awayFrom: object.objectID)
                    }
                }
                continue
            }
            setLoadedRelationship(of: object, r, stored: persisted.loadOrder(r))
            if let before = relationshipsAtBase[r] { setRelationship(object, r, to: before) }
        }
        // What the object sets now (R, should the save conflict again) is what it kept of its
        // own; the values put back to the base version are the policy's, not its.
        object.clearSetProperties()
        for (index, name) in entity.propertyNames.enumerated() where keepsMine(name) { object.noteSet(index) }
    }

    /// Whether `id` names an object the store holds and this context has not deleted.
    private func exists(_ id: ManagedObjectID) -> Bool {
        guard let object = try? existingObject(with: id) else { return false }
        return !object.isDeleted
    }

    private func relationshipState(_ destinations: Set<ManagedObjectID>, toMany: Bool) -> RelationshipState {
        toMany ? .toMany(destinations) : .toOne(destinations.first)
    }

    /// Sets relationship `r` of `object` to `destinations`, with inverse maintenance.
    /// `order`: an ordered relationship's order to take (nil: its members keep theirs).
    private func setRelationship(_ object: ManagedObject, _ r: Int, to destinations: Set<ManagedObjectID>, order: [ManagedObjectID]? = nil) {
        if object.entity.relationships[r].isToMany {
            setToMany(object, r, destinations, order: object.entity.relationships[r].isOrdered ? order : nil)
        } else {
            setToOne(object, r, destinations.first)
        }
    }

    /// After `owner` let go of `destination`, puts the destination's side of the relationship
    /// back to the store's value when it is a to-one left empty by that (a task moved into a
    /// project by this context, taken out again: its stored project).
    private func restoreInverse(of destination: ManagedObjectID, _ inverse: Int?, awayFrom owner: ManagedObjectID) {
        guard let inverse, let target = lookup(destination), !target.isFault, !target.isDeleted, !target.isInserted,
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
        object.clearSetProperties()
        for r in object.changedRelationships {
            guard let stored = loadedDestinations(object.committedRelationships[r]) else { continue }
            let mine = loadedDestinations(object.relationships[r]) ?? []
            setRelationship(object, r, to: stored)
            for destination in mine.subtracting(stored) { restoreInverse(of: destination, entity.relationships[r].inverseIndex, awayFrom: object.objectID) }
        }
        object.changedRelationships = []
        object.clearSetProperties()
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
        // Objects of different entities (kinds of one parent sharing its constraint) have
        // different properties: one cannot become the other, so the conflict stands.
        guard folding.allSatisfy({ $0.entity.index == survivor.entity.index }) else {
            throw .conflict(mergeConflicts: [], constraintConflicts: [conflict])
        }
        for insert in folding {
            fold(insert, into: survivor, policy: policy)
        }
        resolution.uniqueness.append((conflict, survivor, folding.map(\.objectID)))
    }

    /// Folds `insert` into `survivor`, the object holding its unique values, and drops it
    /// (without delete rules). What the insert set itself is its values: object-trump sets them
    /// on the survivor, overwrite too and every other property back to its default (or to
    /// nothing), store-trump and rollback leave them out. What other objects of the save set
    /// (their relationship to the insert, seen from its side) is theirs: it goes to the
    /// survivor under every policy, as the insert's ref now names the survivor.
    private func fold(_ insert: ManagedObject, into survivor: ManagedObject, policy: MergePolicy) {
        let takesValues: Bool, replacing: Bool
        switch policy {
        case .objectTrump: (takesValues, replacing) = (true, false)
        case .overwrite: (takesValues, replacing) = (true, true)
        default: (takesValues, replacing) = (false, false)
        }
        let entity = insert.entity
        if takesValues {
            for (a, attribute) in entity.attributes.enumerated() {
                if insert.wasSet(a) {
                    survivor.setAttribute(insert.attributes[a], at: a)
                } else if replacing {
                    survivor.setAttribute(attribute.defaultValue, at: a)
                }
            }
        }
        for (r, relationship) in entity.relationships.enumerated() {
            let destinations = loadedDestinations(insert.relationships[r]) ?? []
            let setByInsert = insert.wasSet(entity.attributes.count + r)
            // The insert lets go first, so that each destination moves once.
            if !destinations.isEmpty { setRelationship(insert, r, to: []) }
            if setByInsert && !takesValues {
                // Its own value, left out: the destinations go back to what the store holds.
                for destination in destinations { restoreInverse(of: destination, relationship.inverseIndex, awayFrom: insert.objectID) }
            } else if setByInsert || replacing {
                setRelationship(survivor, r, to: destinations)
            } else if !destinations.isEmpty {
                setRelationship(survivor, r, to: relationship.isToMany ? toManyValue(of: survivor, r).union(destinations) : destinations)
            }
        }
        insertedList.removeAll { $0 === insert }
        registered[insert.objectID] = nil
        insert.isDetached = true
    }
}
