// Keeping the object graph consistent in memory: reading relationships (firing relationship
// faults), setting them with inverse maintenance, and deleting with delete rules.
//
// Who writes what: a to-one that stores a foreign key is a change to its object's row, so
// inverse maintenance that alters one marks that object updated. A to-many, or a to-one whose
// key lives on the other side, is only "touched": its loaded value is kept in step, and the
// store learns of the change from the side that stores it (or, for many-to-many, from the
// link differences of every changed or touched object).

extension ManagedObjectContext {
    // MARK: Reading

    func toOneValue(of object: ManagedObject, _ r: Int) -> ManagedObjectID? {
        object.fireFaultIfNeeded()
        if case .unloaded = object.relationships[r] { loadRelationship(of: object, r) }
        guard case .toOne(let id) = object.relationships[r] else {
            preconditionFailure("\(object.entity.name).\(object.entity.relationships[r].name) is not to-one")
        }
        return id
    }

    func toManyValue(of object: ManagedObject, _ r: Int) -> Set<ManagedObjectID> {
        object.fireFaultIfNeeded()
        if case .unloaded = object.relationships[r] { loadRelationship(of: object, r) }
        guard case .toMany(let ids) = object.relationships[r] else {
            preconditionFailure("\(object.entity.name).\(object.entity.relationships[r].name) is not to-many")
        }
        return ids
    }

    /// Fires a relationship fault: reads the store's links (a child: its parent's), then applies
    /// this context's unsaved changes made from the other side.
    private func loadRelationship(of object: ManagedObject, _ r: Int) {
        let entity = object.entity
        let destination = coordinator.model.schema[entity.relationships[r].destinationIndex]
        var stored: [ManagedObjectID] = []
        if parent != nil, !object.isInaccessible, !object.isInserted {
            do { stored = try destinationsFromParent(of: object, r) } catch {
                preconditionFailure("ManagedStore could not read \(object.objectID).\(entity.relationships[r].name) through the parent context: \(error)")
            }
        } else if let pk = object.objectID.primaryKey, !object.isInaccessible {
            do {
                stored = try readStore { session in
                    try coordinator.destinationIDs.ids(session.destinationKeys(of: entity, relationship: r, key: pk), of: destination, session: session)
                }
            } catch {
                preconditionFailure("ManagedStore could not read \(object.objectID).\(entity.relationships[r].name): \(error)")
            }
        }
        setLoadedRelationship(of: object, r, stored: stored)
    }

    /// Installs a relationship's stored destinations (from a fault or a prefetch; an ordered
    /// relationship's in their order), with this context's unsaved changes from the other side
    /// applied on top.
    func setLoadedRelationship(of object: ManagedObject, _ r: Int, stored order: [ManagedObjectID]) {
        let stored = Set(order)
        if object.entity.relationships[r].isOrdered { noteLoadedOrder(of: object, r, stored: order) }
        let isToMany = object.entity.relationships[r].isToMany
        let current = applyPendingInverseChanges(to: stored, owner: object, r)
        let state = { (ids: Set<ManagedObjectID>) -> RelationshipState in
            isToMany ? .toMany(ids) : .toOne(ids.sortedByKey().first)
        }
        object.committedRelationships[r] = state(stored)
        object.relationships[r] = state(current)
        if current != stored { noteTouched(object) }
    }

    private func applyPendingInverseChanges(to stored: Set<ManagedObjectID>, owner: ManagedObject, _ r: Int) -> Set<ManagedObjectID> {
        // A context without pending changes (every read context) has nothing to apply.
        guard !insertedList.isEmpty || !updatedList.isEmpty || !touchedList.isEmpty || !deletedList.isEmpty else { return stored }
        let relationship = owner.entity.relationships[r]
        var result = stored
        guard let inverse = relationship.inverseIndex else {
            // One-way: deleting a destination takes it out, as nullify would; nothing else
            // changes it from the other side.
            for other in deletedList where coordinator.model.isKind(other.entity.index, of: relationship.destinationIndex) { result.remove(other.objectID) }
            for other in discardedInsertList where coordinator.model.isKind(other.entity.index, of: relationship.destinationIndex) { result.remove(other.objectID) }
            return result
        }
        // A deleted destination leaves the relationship only if its own delete rule towards
        // the owner took it out (nullify, cascade); under deny or noAction the link stays until
        // the save, which refuses it unless the owner lets go of it first. So it counts like a
        // live one, links it made in this context (to an owner that was a fault) included.
        let deletionUnlinks = [.nullify, .cascade].contains(coordinator.model.schema[relationship.destinationIndex]
            .relationships[inverse].description.deleteRule)
        for list in [insertedList, updatedList, touchedList, deletedList] {
            for other in list where coordinator.model.isKind(other.entity.index, of: relationship.destinationIndex) && !other.isFault {
                if other.isDeleted && deletionUnlinks {
                    result.remove(other.objectID)
                    continue
                }
                let now = contains(other.relationships[inverse], owner.objectID)
                let before = other.isInserted ? false : contains(other.committedRelationships[inverse], owner.objectID)
                if now == true && before != true { result.insert(other.objectID) }
                if before == true && now == false { result.remove(other.objectID) }
            }
        }
        return result
    }

    /// Whether a relationship value holds `id`; nil when not loaded.
    private func contains(_ state: RelationshipState, _ id: ManagedObjectID) -> Bool? {
        switch state {
        case .unloaded: return nil
        case .toOne(let target): return target == id
        case .toMany(let ids): return ids.contains(id)
        }
    }

    // MARK: Setting

    func checkDestination(_ object: ManagedObject, of owner: ManagedObject, _ r: Int) {
        let relationship = owner.entity.relationships[r]
        precondition(object.context === self && !object.isDetached,
                     "\(owner.entity.name).\(relationship.name): \(object.objectID) belongs to another context; use object(with:) on its ID")
        precondition(coordinator.model.isKind(object.entity.index, of: relationship.destinationIndex),
                     "\(owner.entity.name).\(relationship.name) holds \(relationship.description.destination) objects, not \(object.entity.name)")
        precondition(!object.isDeleted, "\(owner.entity.name).\(relationship.name): \(object.objectID) is deleted")
    }

    private func markChanged(_ object: ManagedObject, relationship r: Int) {
        guard !object.isInserted else { return }
        object.changedRelationships.insert(r)
        noteUpdated(object)
    }

    func setToOne(_ owner: ManagedObject, _ r: Int, _ target: ManagedObjectID?) {
        precondition(!owner.isDeleted, "\(owner.objectID): setting a relationship of a deleted object")
        owner.noteSet(owner.entity.attributes.count + r)
        let old = toOneValue(of: owner, r)
        guard old != target else {
            if !owner.isInserted { noteUpdated(owner) }  // the next save ends what was set (R)
            return
        }
        owner.relationships[r] = .toOne(target)
        markChanged(owner, relationship: r)
        guard let inverse = owner.entity.relationships[r].inverseIndex else { return }  // one-way
        if let old { unlink(old, inverse, from: owner.objectID) }
        if let target { link(target, inverse, to: owner.objectID) }
    }

    /// Sets a to-many relationship's destinations; `order` is an ordered relationship's new
    /// order (nil: the members it keeps stay in their order, new ones go last).
    func setToMany(_ owner: ManagedObject, _ r: Int, _ targets: Set<ManagedObjectID>, order: [ManagedObjectID]? = nil) {
        precondition(!owner.isDeleted, "\(owner.objectID): setting a relationship of a deleted object")
        owner.noteSet(owner.entity.attributes.count + r)
        let old = toManyValue(of: owner, r)
        let isOrdered = owner.entity.relationships[r].isOrdered
        if isOrdered, let order, old == targets, order != orderedValue(of: owner, r) {
            owner.destinationOrder[r] = order  // the same members in another order
            markChanged(owner, relationship: r)
            return
        }
        guard old != targets else {
            if !owner.isInserted { noteUpdated(owner) }  // the next save ends what was set (R)
            return
        }
        if isOrdered {
            owner.destinationOrder[r] = order ?? Self.reconcile(owner.destinationOrder[r] ?? [], with: old)
                + targets.subtracting(old).sortedByKey()
        }
        owner.relationships[r] = .toMany(targets)
        markChanged(owner, relationship: r)
        guard let inverse = owner.entity.relationships[r].inverseIndex else { return }  // one-way
        for removed in old.subtracting(targets) { unlink(removed, inverse, from: owner.objectID) }
        for added in targets.subtracting(old) { link(added, inverse, to: owner.objectID) }
    }

    /// Inverse maintenance: `member` no longer relates to `target` through `target`'s relationship `r`.
    func unlink(_ targetID: ManagedObjectID, _ r: Int, from member: ManagedObjectID) {
        guard let targetEntity = coordinator.model.resolvedEntity(named: targetID.entityName) else { return }
        let relationship = targetEntity.relationships[r]
        if relationship.isToMany {
            loadBeforeInverseChange(targetID, relationship)
            guard let target = lookup(targetID), !target.isFault, case .toMany(var ids) = target.relationships[r] else { return }
            if relationship.isOrdered { noteLeft(member, target, r) }
            guard ids.remove(member) != nil else { return }
            target.relationships[r] = .toMany(ids)
            noteTouched(target)
        } else if case .foreignKey = relationship.storage {
            // The target's row stores the key: it must be loaded and written.
            let target = object(with: targetID)
            target.fireFaultIfNeeded()
            guard !target.isDeleted, !target.isInaccessible, points(target.relationships[r], at: member) else { return }
            target.relationships[r] = .toOne(nil)
            markChanged(target, relationship: r)
        } else {
            guard let target = lookup(targetID), !target.isFault, points(target.relationships[r], at: member) else { return }
            target.relationships[r] = .toOne(nil)
            noteTouched(target)
        }
    }

    /// A to-many with a count rule is loaded before inverse maintenance changes it, so that the
    /// save sees (and validates) every object whose count changed, as Core Data fires the fault;
    /// an ordered one too, so that a member joining goes last and the new order is written.
    /// Loading applies this context's pending changes, the one being made included.
    private func loadBeforeInverseChange(_ targetID: ManagedObjectID, _ relationship: Relationship) {
        guard relationship.description.hasCountRule || relationship.isOrdered else { return }
        let target = object(with: targetID)
        guard !target.isDeleted else { return }
        target.fireFaultIfNeeded()
        guard !target.isInaccessible else { return }
        _ = toManyValue(of: target, relationship.index)
    }

    /// Whether a loaded to-one value is `id`.
    private func points(_ state: RelationshipState, at id: ManagedObjectID) -> Bool {
        if case .toOne(let target) = state { return target == id }
        return false
    }

    /// Inverse maintenance: `member` now relates to `target` through `target`'s relationship `r`.
    func link(_ targetID: ManagedObjectID, _ r: Int, to member: ManagedObjectID) {
        guard let targetEntity = coordinator.model.resolvedEntity(named: targetID.entityName) else { return }
        let relationship = targetEntity.relationships[r]
        if relationship.isToMany {
            loadBeforeInverseChange(targetID, relationship)
            guard let target = lookup(targetID), !target.isFault, case .toMany(var ids) = target.relationships[r] else { return }
            if relationship.isOrdered { noteJoined(member, target, r) }
            guard ids.insert(member).inserted else { return }
            target.relationships[r] = .toMany(ids)
            noteTouched(target)
            return
        }
        // A to-one: the target leaves its previous partner, whose side must forget it.
        let target = object(with: targetID)
        let previous = toOneValue(of: target, r)
        guard previous != member else { return }
        if let previous, let inverse = relationship.inverseIndex { unlink(previous, inverse, from: targetID) }
        target.relationships[r] = .toOne(member)
        if case .foreignKey = relationship.storage { markChanged(target, relationship: r) } else { noteTouched(target) }
    }

    // MARK: Deleting

    /// What deleting one object did to others: the objects its cascades deleted, and the
    /// inverse relationships its nullify rules emptied of it.
    struct DeletionEffects {
        var cascaded: [ManagedObject] = []
        var nullified: [(target: ManagedObjectID, relationship: Int)] = []
    }

    /// Marks `object` deleted and applies the delete rules of its relationships at once:
    /// cascade deletes the destinations, nullify removes it from their inverse. `deny` is
    /// checked when saving, so the destinations may still be removed before then [delete(_:)].
    public func delete(_ object: ManagedObject) {
        assertOnQueue()
        precondition(object.context === self && !object.isDetached, "delete: \(object.objectID) belongs to another context")
        guard !object.isDeleted else { return }
        object.fireFaultIfNeeded()
        object.isDeleted = true
        if observers.isObserved { noteForObservers(\.deleted, object.objectID) }
        // An object inserted since the last save is not written at all, but it stays
        // registered until the save: its delete rules are checked like any other's (a deny
        // still refuses), and whoever still points at it learns that it is deleted.
        if object.isInserted { discardedInsertList.append(object) } else { deletedList.append(object) }
        // What the delete rules did, so that a merge policy that keeps the object (store-trump,
        // rollback) can undo it (`undelete`).
        var effects = DeletionEffects()
        for relationship in object.entity.relationships {
            let targets: [ManagedObjectID] = relationship.isToMany
                ? toManyValue(of: object, relationship.index).sortedByKey()
                : toOneValue(of: object, relationship.index).map { [$0] } ?? []
            switch relationship.description.deleteRule {
            case .cascade:
                for target in targets {
                    let destination = self.object(with: target)
                    if !destination.isDeleted {
                        delete(destination)
                        effects.cascaded.append(destination)
                    }
                }
            case .nullify:
                guard let inverse = relationship.inverseIndex else { break }  // one-way: nothing points back
                for target in targets {
                    unlink(target, inverse, from: object.objectID)
                    effects.nullified.append((target, inverse))
                }
            case .deny, .noAction:
                break
            }
        }
        takeOutOfOneWayRelationships(object, effects: &effects)
        deletionEffects[ObjectIdentifier(object)] = effects
    }

    /// A deleted object leaves every one-way relationship that holds it, as nullify would:
    /// the holders this context has, and those the store has (found by key), each changed and
    /// saved with the delete.
    private func takeOutOfOneWayRelationships(_ object: ManagedObject, effects: inout DeletionEffects) {
        let holders = coordinator.model.oneWayRelationships(to: object.entity)
        guard !holders.isEmpty else { return }
        for (entityIndex, r) in holders {
            let entity = coordinator.model.schema[entityIndex]
            var owners: Set<ManagedObjectID> = []
            if let key = object.objectID.primaryKey, parent == nil {
                do {
                    let keys = try readStore { session in try session.ownerKeys(of: entity, relationship: r, destination: key) }
                    owners.formUnion(keys.map { ManagedObjectID(storeIdentifier: coordinator.storeIdentifier, entityName: entity.name, key: .permanent($0)) })
                } catch {
                    preconditionFailure("ManagedStore could not read what holds \(object.objectID) through \(entity.name).\(entity.relationships[r].name): \(error)")
                }
            }
            // Holders this context made (the store does not know them yet); in a child, whose
            // store is its parent, every loaded holder.
            let candidates = parent == nil ? insertedList + updatedList : registered.values.compactMap(\.object)
            for holder in candidates {
                guard holder.entity === entity, !holder.isFault, !holder.isDeleted else { continue }
                switch holder.relationships[r] {
                case .toOne(let id) where id == object.objectID: owners.insert(holder.objectID)
                case .toMany(let ids) where ids.contains(object.objectID): owners.insert(holder.objectID)
                default: break
                }
            }
            for ownerID in owners.sortedByKey() {
                let owner = self.object(with: ownerID)
                owner.fireFaultIfNeeded()
                guard !owner.isDeleted, !owner.isInaccessible else { continue }
                if entity.relationships[r].isToMany {
                    var ids = toManyValue(of: owner, r)
                    guard ids.remove(object.objectID) != nil else { continue }
                    owner.relationships[r] = .toMany(ids)
                } else {
                    guard toOneValue(of: owner, r) == object.objectID else { continue }
                    owner.relationships[r] = .toOne(nil)
                }
                markChanged(owner, relationship: r)
                effects.nullified.append((ownerID, r))
            }
        }
    }
}
