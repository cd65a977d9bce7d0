// A child context's save: its changes, validated in the child, are pushed into its parent on
// the parent's queue and become the parent's unsaved changes. Nothing reaches the store until
// the root context of the chain saves (and validates again).
//
// What a Core Data user expects, and what this does:
// - the child's changed properties overwrite the parent's values, property by property; the
//   parent's own unsaved changes to other properties stay. There is no version check between
//   a child and its parent, so the child's `mergePolicy` is not used by its saves: conflicts
//   with the store are found, and resolved by the root's policy, when the root saves;
// - inserted objects keep their IDs: temporary ones (or those `obtainPermanentIDs` gave);
// - delete rules ran in the child when it deleted; the parent runs its own on the deletes it
//   takes in (they find what the child's already did done);
// - an object the child changed that the parent has deleted meanwhile (or no longer has,
//   after its `reset()`) fails the save with `SaveError.conflict`, a conflict with
//   `newVersion` 0 and no persisted snapshot, as for an object deleted in the store; nothing
//   is pushed (an object both deleted is simply gone). `rollback()` or `refresh(_:mergeChanges: false)` of those objects lets the
//   child save the rest. A relationship set to an object the parent has deleted fails it with
//   a validation error, as the root's save would.

/// A child's changes, made on the child's queue and taken in on the parent's while the child
/// waits: values only (IDs and attribute values), never the child's objects.
struct ChildChanges {
    struct Insert {
        let id: ManagedObjectID
        let entity: Entity
        let attributes: [AttributeValue]
        let relationships: [RelationshipState]
        /// The order of each ordered relationship (by index).
        let orders: [Int: [ManagedObjectID]]
        /// Properties set explicitly (attributes first, then relationships): what a merge
        /// policy of the root's save counts as set by the insert.
        let setProperties: [Int]
    }

    struct Update {
        let id: ManagedObjectID
        /// The attributes and relationships set in the child, with their new values.
        var attributes: [(index: Int, value: AttributeValue)] = []
        var relationships: [(index: Int, value: RelationshipState)] = []
        /// The order of each ordered relationship among them (by index).
        var orders: [Int: [ManagedObjectID]] = [:]
        /// The version the child's change is based on, when it says so (`baseVersion`).
        var claimedBaseVersion: Int64?
    }

    var inserts: [Insert] = []
    var updates: [Update] = []
    var deletes: [ManagedObjectID] = []
    /// What the child's did-save tells: passed on to the parent's other children that merge.
    var saved = SavedChanges.none
}

extension ManagedObjectContext {
    /// `save()` of a child context: validate, push into the parent, end the changes here.
    func saveIntoParent() throws(SaveError) -> SavedChanges {
        tellWillSave()
        guard try validateForSave() else { return .none }
        let changes = makeChildChanges()
        let origin = ObjectIdentifier(self)
        let missing = try askParent(throwing: { parent throws(SaveError) in try parent.takeInChildChanges(changes, from: origin) })
        guard missing.isEmpty else {
            throw .conflict(mergeConflicts: missing.compactMap { lookup($0).map(conflictWithParent) }, constraintConflicts: [])
        }
        commitPendingChanges(insertedVersion: 0, versionBumped: [])
        tellDidSave(changes.saved)
        return changes.saved
    }

    /// The pending changes as values, and the did-save they make.
    private func makeChildChanges() -> ChildChanges {
        var changes = ChildChanges()
        let attributeCount = { (object: ManagedObject) in object.entity.attributes.count }
        for object in insertedList {
            let setProperties = (0..<(attributeCount(object) + object.entity.relationships.count)).filter(object.wasSet)
            changes.inserts.append(.init(id: object.objectID, entity: object.entity, attributes: object.attributes,
                                         relationships: object.relationships, orders: currentOrders(of: object), setProperties: setProperties))
        }
        var reallyChanged: Set<ManagedObjectID> = []
        for object in updatedList where !object.isFault {
            var update = ChildChanges.Update(id: object.objectID, claimedBaseVersion: object.claimedBaseVersion)
            for a in object.entity.attributes.indices where object.changedAttributes.contains(a) || object.wasSet(a) {
                update.attributes.append((a, object.attributes[a]))
                if object.attributes[a] != object.committedAttributes[a] { reallyChanged.insert(object.objectID) }
            }
            for r in object.entity.relationships.indices
            where object.changedRelationships.contains(r) || object.wasSet(attributeCount(object) + r) {
                if case .unloaded = object.relationships[r] { continue }  // set means loaded; never here
                update.relationships.append((r, object.relationships[r]))
                if object.entity.relationships[r].isOrdered { update.orders[r] = orderedValue(of: object, r) }
                if loadedDestinations(object.relationships[r]) != loadedDestinations(object.committedRelationships[r]) || orderChanged(of: object, r) {
                    reallyChanged.insert(object.objectID)
                }
            }
            changes.updates.append(update)
        }
        // A base version claimed on an object this save does not otherwise change.
        let updated = Set(changes.updates.map(\.id))
        for object in baseVersionList where !object.isInserted && !object.isDetached && !object.isDeleted && !updated.contains(object.objectID) {
            changes.updates.append(.init(id: object.objectID, claimedBaseVersion: object.claimedBaseVersion))
        }
        changes.deletes = deletedList.map(\.objectID)

        let inserted = insertedList.map(\.objectID)
        var altered = objectsAlteredThroughInverses()
        altered.formUnion(touchedObjectsWithChanges())
        altered.formUnion(reallyChanged)
        altered.subtract(changes.deletes)
        altered.subtract(inserted)
        altered.subtract(discardedInsertList.map(\.objectID))
        changes.saved = SavedChanges(inserted: inserted, updated: altered.sortedByEntityAndKey(),
                                     deleted: changes.deletes.sortedByEntityAndKey())
        return changes
    }

    /// The conflict of `object`, which the child changed and the parent no longer has.
    private func conflictWithParent(_ object: ManagedObject) -> MergeConflict {
        let entity = object.entity
        return MergeConflict(
            objectID: object.objectID, oldVersion: object.expectedVersion, newVersion: 0,
            objectSnapshot: object.isDeleted ? nil : snapshot(entity, attributes: object.attributes, relationships: object.relationships.map(loadedDestinations)),
            cachedSnapshot: snapshot(entity, attributes: object.committedAttributes, relationships: object.committedRelationships.map(loadedDestinations)),
            persistedSnapshot: nil, changedProperties: changedPropertyNames(object), storeChangedProperties: nil)
    }

    // MARK: The parent's side

    /// Takes in a child's changes as this context's own unsaved changes (on this context's
    /// queue, the child waiting). Returns the objects the child changed that this context no
    /// longer has, and then changes nothing; throws a validation error for a relationship to
    /// an object deleted here, or a store error reading an object.
    func takeInChildChanges(_ changes: ChildChanges, from child: ObjectIdentifier) throws(SaveError) -> [ManagedObjectID] {
        // 1. Every object the child changed must still be here; checked before anything changes.
        var updated: [(ManagedObject, ChildChanges.Update)] = []
        var missing: [ManagedObjectID] = []
        for update in changes.updates {
            if let object = try existingObject(forChange: update.id) { updated.append((object, update)) } else { missing.append(update.id) }
        }
        guard missing.isEmpty else { return missing }
        var deleted: [ManagedObject] = []
        for id in changes.deletes {
            if let object = try existingObject(forChange: id) { deleted.append(object) }  // deleted here too: nothing to do
        }
        let invalid = invalidReferences(in: changes)
        guard invalid.isEmpty else { throw .validation(invalid) }

        // 2. Inserts first (what the others may point at), then values, relationships, deletes.
        var inserted: [(ManagedObject, ChildChanges.Insert)] = []
        for insert in changes.inserts {
            let object = lookup(insert.id) ?? self.insert(insert.entity, id: insert.id)
            object.attributes = insert.attributes
            inserted.append((object, insert))
        }
        for (object, update) in updated {
            for (a, value) in update.attributes { object.setAttribute(value, at: a) }
            if let base = update.claimedBaseVersion {
                object.claimedBaseVersion = base
                noteBaseVersion(object)
            }
        }
        for (object, insert) in inserted {
            // A new object has every relationship empty already: only the others are set.
            for (r, state) in insert.relationships.enumerated() where !Self.isEmpty(state) {
                setRelationship(r, of: object, to: state, order: insert.orders[r])
            }
            // The setters mark what they set; an insert brings only what the child set.
            object.clearSetProperties()
            for index in insert.setProperties { object.noteSet(index) }
        }
        for (object, update) in updated {
            for (r, state) in update.relationships { setRelationship(r, of: object, to: state, order: update.orders[r]) }
        }
        for object in deleted where !object.isDeleted { delete(object) }

        // 3. This context's other children that merge hear of it (by the IDs they may hold).
        mergingChildren.deliver(withCurrentIDs(changes.saved), except: child)
        return []
    }

    /// The object a child's change is about, loaded; nil when this context no longer has it.
    private func existingObject(forChange id: ManagedObjectID) throws(SaveError) -> ManagedObject? {
        do { return try existingObjectForChild(id) } catch {
            guard case .store(let storeError) = error else { return nil }
            throw .store(storeError)
        }
    }

    /// Relationships of the child's changes pointing at an object this context deleted, or at
    /// a temporary ID no context of the chain has.
    private func invalidReferences(in changes: ChildChanges) -> [ValidationError] {
        let insertedHere = Set(changes.inserts.map(\.id))
        var errors: [ValidationError] = []
        func check(_ owner: ManagedObjectID, _ entity: Entity, _ r: Int, _ state: RelationshipState) {
            for target in loadedDestinations(state) ?? [] where !insertedHere.contains(target) {
                let known = lookupIncludingAliases(target)
                let unknownTemporary = known == nil && target.isTemporaryID && parent == nil
                if known?.isDeleted == true || unknownTemporary {
                    errors.append(.invalidDestination(of: owner, entity.relationships[r].name, target: target, deleted: true))
                }
            }
        }
        for insert in changes.inserts {
            for (r, state) in insert.relationships.enumerated() { check(insert.id, insert.entity, r, state) }
        }
        for update in changes.updates where !update.relationships.isEmpty {
            guard let entity = lookupIncludingAliases(update.id)?.entity else { continue }
            for (r, state) in update.relationships { check(update.id, entity, r, state) }
        }
        return errors
    }

    /// Sets relationship `r` of `object` as the child had it, keeping inverses here in step.
    /// IDs are taken as this context knows them now: an object the child knows by its
    /// temporary ID may have its permanent one here since this context saved.
    private func setRelationship(_ r: Int, of object: ManagedObject, to state: RelationshipState, order: [ManagedObjectID]?) {
        switch state {
        case .unloaded: return
        case .toOne(let target):
            setToOne(object, r, target.map(currentID))
        case .toMany(let targets):
            setToMany(object, r, Set(targets.map(currentID)), order: order?.map(currentID))
        }
    }

    /// The order of each loaded ordered relationship of `object`, for its parent.
    private func currentOrders(of object: ManagedObject) -> [Int: [ManagedObjectID]] {
        guard !object.entity.orderedRelationships.isEmpty else { return [:] }
        var orders: [Int: [ManagedObjectID]] = [:]
        for r in object.entity.orderedRelationships {
            if case .toMany = object.relationships[r] { orders[r] = orderedValue(of: object, r) }
        }
        return orders
    }

    private static func isEmpty(_ state: RelationshipState) -> Bool {
        switch state {
        case .unloaded, .toOne(nil): return true
        case .toOne: return false
        case .toMany(let ids): return ids.isEmpty
        }
    }

    /// The ID this context holds the object `id` by now (its permanent one after a save).
    private func currentID(_ id: ManagedObjectID) -> ManagedObjectID { lookupIncludingAliases(id)?.objectID ?? id }

    /// `saved` with the IDs this context holds the objects by added, for children that read
    /// them here after this context saved them.
    private func withCurrentIDs(_ saved: SavedChanges) -> SavedChanges {
        func both(_ ids: [ManagedObjectID]) -> [ManagedObjectID] {
            var result = ids
            for id in ids where currentID(id) != id { result.append(currentID(id)) }
            return result
        }
        return SavedChanges(inserted: saved.inserted, updated: both(saved.updated), deleted: both(saved.deleted))
    }
}
