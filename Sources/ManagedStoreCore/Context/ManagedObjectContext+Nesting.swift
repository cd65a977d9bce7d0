// Nested contexts [NSManagedObjectContext.parent]: a child context reads from and saves into
// another context instead of the store. Here: creating a child, how it asks its parent, and
// how it reads objects and relationships through the parent chain. Fetches through the
// parent are in Fetch/ManagedObjectContext+ParentFetch.swift, saving into the parent in
// ManagedObjectContext+ChildSave.swift.
//
// A child asks its parent on the parent's queue (`performAndWait`) and waits, as in Core Data:
// a child of a busy parent waits for it. The parent never waits for a child: what it tells
// its children (`automaticallyMergesChangesFromParent`) is queued on theirs.

/// One object as a context sees it, told to a child that reads it: its values with the
/// context's unsaved changes, and the version they are based on. Relationships the context
/// has not loaded stay `.unloaded`; the child asks for them when it uses them.
struct ObjectState: Sendable {
    let version: Int64
    let attributes: [AttributeValue]
    let relationships: [RelationshipState]
}

extension ManagedObjectContext {
    /// A child context of `parent` [init(concurrencyType:) and parent]: it reads `parent`'s
    /// state, unsaved changes included, and its `save()` pushes its changes into `parent`
    /// only. It uses the parent's coordinator and has a serial queue of its own. Children
    /// nest to any depth. The child keeps `parent` (and so the whole chain) alive.
    ///
    /// Do not call a child's `performAndWait` from a block of another context the child may
    /// be waiting for: from the parent's own block it works (the child's questions to the
    /// parent are answered on the spot), but a parent's block waiting for a child that waits
    /// for the parent cannot end.
    public convenience init(parent: ManagedObjectContext, name: String = "child") {
        self.init(coordinator: parent.coordinator, name: name, readsThroughWriter: false, ownedByCoordinator: false, parent: parent)
    }

    /// Runs `body` with the parent, on the parent's queue, and waits for it. If this thread is
    /// already inside a block of the parent (the parent's block called this child's
    /// `performAndWait`), the parent's queue is held by that very block: `body` runs at once.
    func askParent<T>(_ body: (ManagedObjectContext) -> T) -> T {
        guard let parent else { preconditionFailure("askParent on the root context '\(name)'") }
        if RunningContext.encloses(parent) { return RunningContext.run(parent) { body(parent) } }
        return parent.performAndWait { body(parent) }
    }

    /// `askParent` for a body that throws `E`, carrying its error back across the queues.
    func askParent<T, E: Error>(throwing body: (ManagedObjectContext) throws(E) -> T) throws(E) -> T {
        let result = askParent { parent -> Result<T, E> in
            do throws(E) { return .success(try body(parent)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    // MARK: The parent's side

    /// The object `id` as this context has it, for a child that reads it: the registered
    /// object or a new fault, loaded (from this context's own parent, or the store); nil when
    /// no context of the chain has it, or this context deleted it. Runs on this context's queue.
    func existingObjectForChild(_ id: ManagedObjectID) throws(ContextError) -> ManagedObject? {
        let object: ManagedObject
        if let registered = lookupIncludingAliases(id), !registered.isDetached {
            object = registered
        } else {
            // A root context knows every temporary ID it has; a child may find one further up.
            guard coordinator.isValid(id), !id.isTemporaryID || parent != nil else { return nil }
            object = makeFault(id)
        }
        try loadFault(object)
        return object.isDeleted || object.isInaccessible ? nil : object
    }

    /// The states of the objects `ids` for a child (nil for those it cannot have).
    func statesForChild(_ ids: [ManagedObjectID]) throws(ContextError) -> [ObjectState?] {
        var states: [ObjectState?] = []
        states.reserveCapacity(ids.count)
        for id in ids {
            states.append(try existingObjectForChild(id).map {
                ObjectState(version: $0.committedVersion, attributes: $0.attributes, relationships: $0.relationships)
            })
        }
        return states
    }

    /// The destinations of relationship `r` of each of the objects `ids`, for a child: loaded
    /// here if need be, with this context's unsaved changes. Empty for an object it cannot have.
    /// An ordered relationship's destinations come in their order.
    func destinationsForChild(_ ids: [ManagedObjectID], relationship r: Int) throws(ContextError) -> [[ManagedObjectID]] {
        var result: [[ManagedObjectID]] = []
        result.reserveCapacity(ids.count)
        for id in ids {
            guard let object = try existingObjectForChild(id) else { result.append([]); continue }
            if object.entity.relationships[r].isOrdered {
                result.append(orderedValue(of: object, r))
            } else if object.entity.relationships[r].isToMany {
                result.append(Array(toManyValue(of: object, r)))
            } else {
                result.append(toOneValue(of: object, r).map { [$0] } ?? [])
            }
        }
        return result
    }

    // MARK: The child's side

    /// Fills a fault with its parent's state of it; an object the parent chain does not have
    /// (or deleted) turns inaccessible, as one whose row vanished.
    func loadFaultFromParent(_ object: ManagedObject) throws(ContextError) {
        let id = object.objectID
        let state = try askParent(throwing: { parent throws(ContextError) in try parent.statesForChild([id]) })[0]
        if let state { materialize(object, fromParent: state) } else { markInaccessible(object) }
    }

    /// Fills the faults among `objects` with one question to the parent, instead of one each.
    func loadFaultsFromParent(_ objects: [ManagedObject]) throws(ContextError) {
        let faults = objects.filter(\.isFault)
        guard !faults.isEmpty else { return }
        let ids = faults.map(\.objectID)
        let states = try askParent(throwing: { parent throws(ContextError) in try parent.statesForChild(ids) })
        for (object, state) in zip(faults, states) where object.isFault {
            if let state { materialize(object, fromParent: state) } else { markInaccessible(object) }
        }
    }

    /// Turns `object` into the parent's state of it. To-one keys are taken as they are: this
    /// context cannot have changed them through an inverse while `object` was a fault
    /// (inverse maintenance loads an object whose key it changes). Any other relationship the
    /// parent had loaded goes in as a relationship fault would, with this context's unsaved
    /// changes from the other side applied.
    func materialize(_ object: ManagedObject, fromParent state: ObjectState) {
        let entity = object.entity
        var relationships = [RelationshipState](repeating: .unloaded, count: entity.relationships.count)
        for r in entity.foreignKeyRelationships {
            if case .toOne(let id?) = state.relationships[r] { relationships[r] = .toOne(canonicalID(id)) } else { relationships[r] = state.relationships[r] }
        }
        fill(object, version: state.version, attributes: state.attributes, relationships: relationships)
        // An ordered relationship stays a fault: the child asks for it (and its order) when used.
        for r in entity.relationships.indices where !entity.foreignKeyRelationships.contains(r) && !entity.relationships[r].isOrdered {
            switch state.relationships[r] {
            case .unloaded: continue
            case .toOne(let id): setLoadedRelationship(of: object, r, stored: id.map { [canonicalID($0)] } ?? [])
            case .toMany(let ids): setLoadedRelationship(of: object, r, stored: ids.map(canonicalID))
            }
        }
    }

    /// Reads the destinations of relationship `r` of `object` from the parent (a child's
    /// relationship fault), before this context's own changes are applied.
    func destinationsFromParent(of object: ManagedObject, _ r: Int) throws(ContextError) -> [ManagedObjectID] {
        let id = object.objectID
        let ids = try askParent(throwing: { parent throws(ContextError) in try parent.destinationsForChild([id], relationship: r) })[0]
        return ids.map(canonicalID)
    }

    // MARK: Temporary IDs replaced up the chain

    /// The object this child holds by the temporary ID that an ancestor replaced with the
    /// permanent `id` (when it saved, or in `obtainPermanentIDs`), as Core Data's child keeps
    /// its temporary IDs. Registered under `id` too from now on, so that everything the
    /// parent says about `id` reaches that one object: a child never holds two objects for
    /// one row.
    func objectHeldByTemporaryID(replacedBy id: ManagedObjectID) -> ManagedObject? {
        guard !id.isTemporaryID else { return nil }
        var ancestor = parent
        while let context = ancestor {
            if let temporary = context.temporaryAliases.withLock({ $0[id] }) {
                guard let object = lookup(temporary), !object.isDetached else { return nil }
                registered[id] = Registration(object, retained: retainsRegisteredObjectsNow)
                return object
            }
            ancestor = context.parent
        }
        return nil
    }

    /// The ID this context knows the object `id` by (from its parent): its own when it holds it
    /// by a temporary ID the chain has replaced since, `id` otherwise.
    func canonicalID(_ id: ManagedObjectID) -> ManagedObjectID {
        lookupIncludingAliases(id)?.objectID ?? id
    }

    /// `refresh`'s read for a child: `object` takes its parent's state; false (and the object
    /// inaccessible) when the parent chain no longer has it.
    func refreshFromParent(_ object: ManagedObject) -> Bool {
        let id = object.objectID
        let state: ObjectState?
        do {
            state = try askParent(throwing: { parent throws(ContextError) in try parent.statesForChild([id]) })[0]
        } catch {
            preconditionFailure("refresh: could not read \(id) through the parent context: \(error)")
        }
        guard let state else {
            markInaccessible(object)
            return false
        }
        materialize(object, fromParent: state)
        return true
    }
}
