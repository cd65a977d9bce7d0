// Saving: validate, turn the changes into a change set, write it in one transaction on the
// store's writer, then make the context's objects match what was committed.

extension ManagedObjectContext {
    /// Writes every change in one transaction [save()], and returns what changed in the store
    /// (the did-save notification's inserted, updated and deleted objects).
    ///
    /// Conflicts with changes committed elsewhere after the versions the changes were based on
    /// are resolved by `mergePolicy` (the context's, unless one is given for this save): the
    /// objects take in the store's state as the policy says, and the save runs again. Under
    /// `error`, or when a conflict cannot be resolved, the save fails.
    ///
    /// Throws `SaveError.validation` with every broken rule, `SaveError.conflict` with every
    /// conflict (and every uniqueness violation), or `SaveError.store`. In each case nothing is
    /// written and the context keeps its changes; `refresh(_:mergeChanges: true)` or
    /// `rollback()` are the ways forward.
    ///
    /// A context pinned to a query generation saves against the store's latest state (that is
    /// what conflicts are found in and merged from) and is pinned to the current generation
    /// after a successful save.
    ///
    /// A child context's save writes nothing to the store: it pushes its changes into its
    /// parent, where they become the parent's unsaved changes (ManagedObjectContext+ChildSave.swift).
    @discardableResult
    public func save(mergePolicy: MergePolicy? = nil) throws(SaveError) -> SavedChanges {
        assertOnQueue()
        precondition(snapshotSession == nil, "save() inside performInSnapshot: the snapshot is read-only; save after the block")
        if parent != nil { return try saveIntoParent() }
        tellWillSave()
        guard let pinned = pinnedGeneration else {
            let saved = try saveOnLatestState(mergePolicy: mergePolicy)
            tellDidSave(saved)
            return saved
        }
        pinnedGeneration = nil
        let saved: SavedChanges
        do { saved = try saveOnLatestState(mergePolicy: mergePolicy) } catch {
            pinnedGeneration = pinned
            throw error
        }
        pinnedGeneration = pinned
        advancePinnedGeneration()
        tellDidSave(saved)
        return saved
    }

    private func saveOnLatestState(mergePolicy: MergePolicy?) throws(SaveError) -> SavedChanges {
        let policy = mergePolicy ?? _mergePolicy
        var resolution = MergeResolution()
        for attempt in 1...Self.mergeAttempts {
            guard try validateForSave() else { return resolution.saved(.none) }
            do throws(ChangeSetRejection) {
                return resolution.saved(try writeChanges())
            } catch {
                guard case let .conflicts(versions, constraints) = error else { throw saveError(for: error) }
                let merge = try mergeConflicts(versions.map(\.id))
                guard policy.resolves, attempt < Self.mergeAttempts else {
                    throw .conflict(mergeConflicts: merge, constraintConflicts: constraints)
                }
                try resolve(merge, constraints, policy: policy, into: &resolution)
            }
        }
        preconditionFailure("unreachable: the last attempt returns or throws")
    }

    /// Validates the pending changes for a save, throwing every broken rule; false when there is
    /// nothing to write, after ending what was set without changing anything.
    func validateForSave() throws(SaveError) -> Bool {
        compactChangeLists()
        guard hasChanges || !baseVersionList.isEmpty || !discardedInsertList.isEmpty else {
            forgetUnwrittenSets()
            return false
        }
        let errors = validationErrors()
        guard errors.isEmpty else { throw .validation(errors) }
        guard hasChanges || !baseVersionList.isEmpty else {
            // Only objects inserted and deleted again (their deletion allowed): nothing to write.
            forgetDiscardedInserts()
            forgetUnwrittenSets()
            return false
        }
        return true
    }

    /// How many times a save resolves conflicts and tries again before it gives up: another
    /// context may commit between two tries (inside a group commit none can).
    static let mergeAttempts = 8

    /// Writes the pending changes once; throws the store's refusal (conflicts, references).
    private func writeChanges() throws(ChangeSetRejection) -> SavedChanges {
        var changes = makeChangeSet()
        if coordinator.storeDescription.recordsHistory { changes.history = historyDraft(for: changes) }
        var altered = objectsAlteredThroughInverses()
        altered.formUnion(touchedObjectsWithChanges())
        let written: WrittenChanges
        do {
            written = try writeInOwnUnit { session in try session.write(changes) }
        } catch let rejection as ChangeSetRejection {
            throw rejection
        } catch {
            throw .store(StoreError(wrapping: error))
        }
        let deleted = changes.deletes.map(\.id)
        altered.formUnion(changes.updates.map(\.id))
        if !altered.isEmpty {
            altered.subtract(deleted)
            altered = altered.filter { !$0.isTemporaryID }  // objects of this save, or discarded before it
        }
        didSave(changes, permanentIDs: written.insertedIDs)
        return SavedChanges(inserted: written.insertedIDs, updated: altered.sortedByEntityAndKey(), deleted: deleted.sortedByEntityAndKey(),
                            token: written.token)
    }

    /// Runs `body` in a write of its own: a savepoint of the group commit the context runs, or
    /// a transaction of its own. Nothing of it is kept if it throws.
    private func writeInOwnUnit<T>(_ body: (any StoreWriteSession) throws -> T) throws -> T {
        if let activeGroup { return try activeGroup.inSavepoint(body) }
        return try coordinator.store.write(body)
    }

    /// The conflict records of the objects `ids` (their stored versions are not the base ones).
    private func mergeConflicts(_ ids: [ManagedObjectID]) throws(SaveError) -> [MergeConflict] {
        do {
            return try readStore { session in
                try ids.compactMap { id throws -> MergeConflict? in try lookup(id).map { try mergeConflict(for: $0, session) } }
            }
        } catch {
            throw .store(StoreError(wrapping: error))
        }
    }

    /// Every rule the pending changes break, as `save()` would report them, without saving
    /// [validateForInsert, validateForUpdate, validateForDelete]. Empty when a save would pass
    /// validation (it may still meet conflicts in the store).
    public func validatePendingChanges() -> [ValidationError] {
        assertOnQueue()
        compactChangeLists()
        return validationErrors()
    }

    private func validationErrors() -> [ValidationError] {
        let validator = ObjectValidator(context: self)
        var errors: [ValidationError] = []
        for object in insertedList { errors += validator.validateForSave(object) }
        // An object whose row vanished is not validated: the store reports it as a conflict.
        for object in updatedList where !object.isFault && !object.isInaccessible { errors += validator.validateForSave(object) }
        for object in touchedList where object.entity.hasCountRules && !object.isInserted && !object.isDeleted && !object.isFault
            && !object.isInaccessible && !object.isListedAsUpdated {
            errors += validator.validateCounts(object)
        }
        for object in deletedList { errors += validator.validateForDelete(object) }
        // Inserted and deleted again: not written, but a deny rule still refuses the delete.
        for object in discardedInsertList { errors += validator.validateForDelete(object) }
        return errors
    }

    /// Objects inserted and deleted again are dropped once a save no longer needs them.
    private func forgetDiscardedInserts() {
        for object in discardedInsertList {
            object.isDetached = true
            registered[object.objectID] = nil
        }
        discardedInsertList = []
    }

    /// Gives inserted objects their permanent IDs now, before saving [obtainPermanentIDs(for:)].
    public func obtainPermanentIDs(for objects: [ManagedObject]) throws(StoreError) {
        assertOnQueue()
        let pending = objects.filter { $0.isInserted && $0.objectID.isTemporaryID && $0.context === self }
        guard !pending.isEmpty else { return }
        var byEntity: [Int: [ManagedObject]] = [:]
        for object in pending { byEntity[object.entity.index, default: []].append(object) }
        let model = coordinator.model
        let firstKeys: [Int: Int64]
        do {
            firstKeys = try writeInOwnUnit { session in
                var result: [Int: Int64] = [:]
                for (entityIndex, group) in byEntity {
                    result[entityIndex] = try session.allocateKeys(of: model.schema[entityIndex], count: group.count)
                }
                return result
            }
        } catch {
            throw StoreError(wrapping: error)
        }
        var pairs: [(ManagedObject, ManagedObjectID)] = []
        for (entityIndex, group) in byEntity {
            var next = firstKeys[entityIndex]!
            for object in group {
                pairs.append((object, ManagedObjectID(storeIdentifier: coordinator.storeIdentifier,
                                                      entityName: object.entity.name, key: .permanent(next))))
                next += 1
            }
        }
        applyPermanentIDs(pairs.map(\.0), pairs.map(\.1))
    }

    // MARK: Steps

    /// Drops list entries that no longer stand for a change (deleted inserts, refreshed objects).
    /// A save with nothing to write still ends what was set before it, so that the next
    /// save's R starts empty: objects set only to the values they had leave the updated list.
    private func forgetUnwrittenSets() {
        for object in updatedList where !object.isUpdated {
            object.clearSetProperties()
            object.isListedAsUpdated = false
        }
        updatedList.removeAll { !$0.isListedAsUpdated }
    }

    private func compactChangeLists() {
        insertedList.removeAll { !$0.isInserted || $0.isDeleted }
        discardedInsertList.removeAll { !$0.isInserted || !$0.isDeleted }
        deletedList.removeAll { !$0.isDeleted || $0.isInserted }
        updatedList.removeAll { !$0.isListedAsUpdated || $0.isInserted || $0.isDeleted }
    }

    private func makeChangeSet() -> ChangeSet {
        var changes = ChangeSet()
        changes.inserts.reserveCapacity(insertedList.count)
        for object in insertedList {
            let entity = object.entity
            changes.inserts.append(ChangeSet.Insert(
                id: object.objectID, entity: entity, attributes: object.attributes, relationships: object.relationships))
            if entity.hasJoinTables { addLinkChanges(of: object, to: &changes) }
            if !entity.orderedRelationships.isEmpty { addOrderChanges(of: object, to: &changes) }
        }
        for object in updatedList where !object.isFault {
            let entity = object.entity
            let changedAttributes = object.changedAttributes.filter { object.attributes[$0] != object.committedAttributes[$0] }.sorted()
            var changedForeignKeys: [Int] = []
            var otherRelationshipChanged = false
            for r in object.changedRelationships {
                if let position = entity.foreignKeyRelationships.firstIndex(of: r) {
                    if toOneTarget(object.relationships[r]) != toOneTarget(object.committedRelationships[r]) { changedForeignKeys.append(position) }
                } else {
                    // A new order of the same members is a change of the object too.
                    otherRelationshipChanged = otherRelationshipChanged || !sameValue(object.relationships[r], object.committedRelationships[r])
                        || orderChanged(of: object, r)
                }
            }
            addLinkChanges(of: object, to: &changes)
            if !entity.orderedRelationships.isEmpty { addOrderChanges(of: object, to: &changes) }
            guard !changedAttributes.isEmpty || !changedForeignKeys.isEmpty || otherRelationshipChanged else { continue }
            changes.updates.append(ChangeSet.Update(
                id: object.objectID, entity: entity, baseVersion: object.expectedVersion,
                attributes: object.attributes, changedAttributes: changedAttributes,
                foreignKeys: entity.foreignKeyRelationships.map { toOneTarget(object.relationships[$0]) },
                changedForeignKeys: changedForeignKeys.sorted()))
        }
        for object in touchedList where !object.isInserted && !object.isDeleted && !object.isFault {
            addLinkChanges(of: object, to: &changes)
            // An object both updated and touched had its orders written above.
            if !object.entity.orderedRelationships.isEmpty && !object.isListedAsUpdated { addOrderChanges(of: object, to: &changes) }
        }
        for object in deletedList {
            changes.deletes.append(ChangeSet.Delete(id: object.objectID, entity: object.entity, baseVersion: object.expectedVersion))
        }
        if !baseVersionList.isEmpty {
            let written = Set(changes.updates.map(\.id)).union(changes.deletes.map(\.id))
            for object in baseVersionList where !object.isInserted && !object.isDetached && !written.contains(object.objectID) {
                changes.versionChecks.append(ChangeSet.VersionCheck(id: object.objectID, entity: object.entity, baseVersion: object.expectedVersion))
            }
        }
        return changes
    }

    private func toOneTarget(_ state: RelationshipState) -> ManagedObjectID? {
        if case .toOne(let id) = state { return id }
        return nil
    }

    private func sameValue(_ a: RelationshipState, _ b: RelationshipState) -> Bool {
        switch (a, b) {
        case let (.toOne(x), .toOne(y)): return x == y
        case let (.toMany(x), .toMany(y)): return x == y
        case (.unloaded, .unloaded): return true
        default: return false
        }
    }

    /// The new orders of `object`'s ordered relationships, written whole.
    private func addOrderChanges(of object: ManagedObject, to changes: inout ChangeSet) {
        for (r, members) in orderChanges(of: object) {
            changes.orderings.append(ChangeSet.Ordering(owner: object.objectID, entity: object.entity, relationship: r, members: members))
        }
    }

    /// Join-table rows to add and remove for the many-to-many relationships of `object`.
    private func addLinkChanges(of object: ManagedObject, to changes: inout ChangeSet) {
        let entity = object.entity
        for r in entity.joinTableRelationships {
            guard case .toMany(let now) = object.relationships[r] else { continue }
            var before: Set<ManagedObjectID> = []
            if !object.isInserted, case .toMany(let committed) = object.committedRelationships[r] { before = committed }
            if now.isEmpty && before.isEmpty { continue }  // a new object without links: the common case
            let relationship = entity.relationships[r]
            guard case let .joinTable(table, isFirstSide) = relationship.storage else { continue }
            func link(_ other: ManagedObjectID) -> ChangeSet.Link {
                isFirstSide ? .init(table: table, a: object.objectID, b: other, relationship: relationship.name)
                            : .init(table: table, a: other, b: object.objectID, relationship: relationship.name)
            }
            for added in now.subtracting(before) { changes.addedLinks.insert(link(added)) }
            for removed in before.subtracting(now) { changes.removedLinks.insert(link(removed)) }
        }
    }

    private func saveError(for rejection: ChangeSetRejection) -> SaveError {
        switch rejection {
        case .conflicts(_, let constraints):
            // `save` builds the records of version conflicts itself (they need the store).
            return .conflict(mergeConflicts: [], constraintConflicts: constraints)
        case .invalidReferences(let references):
            return .validation(references.map { reference in
                .invalidDestination(of: reference.owner, reference.relationship, target: reference.target)
            })
        case .store(let error):
            return .store(error)
        }
    }

    /// Makes the context's objects match the committed store: permanent IDs, new versions,
    /// new committed snapshots, no pending changes.
    private func didSave(_ changes: ChangeSet, permanentIDs: [ManagedObjectID]) {
        // `changes.inserts` was made from `insertedList`, in its order.
        applyPermanentIDs(insertedList, permanentIDs)
        commitPendingChanges(insertedVersion: 1, versionBumped: changes.updates.isEmpty ? [] : Set(changes.updates.map(\.id)))
    }

    /// Ends every pending change as saved: inserted objects are inserted no more and have
    /// `insertedVersion`, the objects of `versionBumped` go one version up, deleted objects
    /// leave the context. A child's save, which writes no version, passes 0 and nothing.
    func commitPendingChanges(insertedVersion: Int64, versionBumped written: Set<ManagedObjectID>) {
        for object in insertedList {
            object.isInserted = false
            object.committedVersion = insertedVersion
            commit(object)
        }
        for object in updatedList {
            if written.contains(object.objectID) { object.committedVersion += 1 }
            commit(object)
        }
        for object in touchedList where !object.isFault { commit(object) }
        for object in deletedList {
            object.isDetached = true
            registered[object.objectID] = nil
        }
        insertedList = []
        updatedList = []
        deletedList = []
        touchedList = []
        for object in baseVersionList { object.claimedBaseVersion = nil }
        baseVersionList = []
        deletionEffects = [:]
        forgetDiscardedInserts()
    }

    private func refersToAnything(_ states: [RelationshipState]) -> Bool {
        states.contains { state in
            switch state {
            case .unloaded, .toOne(nil): return false
            case .toOne: return true
            case .toMany(let ids): return !ids.isEmpty
            }
        }
    }

    private func commit(_ object: ManagedObject) {
        object.changedAttributes = []
        object.changedRelationships = []
        object.clearSetProperties()
        object.isListedAsUpdated = false
        object.isListedAsTouched = false
        object.committedAttributes = object.attributes
        object.committedRelationships = object.relationships
        commitOrder(of: object)
    }

    /// Gives objects their permanent IDs and rewrites every pending reference to them. The
    /// temporary ID's registration stays, so an old temporary ID still finds its object.
    private func applyPermanentIDs(_ objects: [ManagedObject], _ permanentIDs: [ManagedObjectID]) {
        let retained = retainsRegisteredObjectsNow
        var changed: [(ManagedObject, ManagedObjectID)] = []
        changed.reserveCapacity(objects.count)
        registered.reserveCapacity(registered.count + objects.count)
        for (object, permanent) in zip(objects, permanentIDs) where object.objectID != permanent {
            changed.append((object, object.objectID))
            object.objectID = permanent
            registered[permanent] = Registration(object, retained: retained)
        }
        guard !changed.isEmpty else { return }
        if childCount.load(ordering: .relaxed) > 0 {
            temporaryAliases.withLock { aliases in for (object, temporary) in changed { aliases[object.objectID] = temporary } }
        }
        // Only objects with pending changes can refer to an object that is not saved yet; most
        // saves (a bulk insert) have nothing to remap, and build no map for it.
        let lists = [insertedList, updatedList, touchedList, deletedList]
        let holders = lists.flatMap { $0.filter { !$0.isFault && (refersToAnything($0.relationships) || refersToAnything($0.committedRelationships)) } }
        guard !holders.isEmpty else { return }
        let mapping = Dictionary(changed.map { ($0.1, $0.0.objectID) }, uniquingKeysWith: { a, _ in a })
        func remap(_ state: RelationshipState) -> RelationshipState {
            switch state {
            case .unloaded: return state
            case .toOne(let id): return .toOne(id.map { mapping[$0] ?? $0 })
            case .toMany(let ids): return .toMany(Set(ids.map { mapping[$0] ?? $0 }))
            }
        }
        for object in holders {
            object.relationships = object.relationships.map(remap)
            if !object.isInserted { object.committedRelationships = object.committedRelationships.map(remap) }
            if !object.destinationOrder.isEmpty {
                object.destinationOrder = object.destinationOrder.mapValues { $0.map { mapping[$0] ?? $0 } }
                object.committedDestinationOrder = object.committedDestinationOrder.mapValues { $0.map { mapping[$0] ?? $0 } }
            }
        }
    }
}
