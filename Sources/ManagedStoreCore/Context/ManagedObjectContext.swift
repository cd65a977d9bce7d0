import Dispatch
import Foundation
import Synchronization

/// A scratch pad of objects confined to its own serial queue [NSManagedObjectContext].
///
/// Everything a context holds, and every object in it, is used only on the context's queue:
/// inside `perform` (async) or `performAndWait`. A call from anywhere else traps with a message
/// saying so; it never silently works. Pass `ManagedObjectID`s (Sendable) between contexts.
///
/// `@unchecked Sendable`: the context itself may be handed to any task, because all its mutable
/// state is touched only on `queue`, which `assertOnQueue` checks on every entry point. For the
/// same reason its stored state is `@exclusivity(unchecked)` (see `ManagedObject`): one thread,
/// and no access held open across a call that could come back to the same property.
public final class ManagedObjectContext: @unchecked Sendable, CustomStringConvertible {
    public var coordinator: PersistentStoreCoordinator { coordinatorReference }
    /// Keeps the coordinator alive; nil for the read contexts of the coordinator's own pool,
    /// which it owns (a strong reference back would keep both alive forever).
    private let owningCoordinator: PersistentStoreCoordinator?
    private unowned let coordinatorReference: PersistentStoreCoordinator
    public let name: String
    /// The context this one reads from and saves into, or nil for a root context, which reads
    /// and saves the store [parent]. Held strongly, as Core Data does: a child keeps its whole
    /// chain alive (ManagedObjectContext+Nesting.swift).
    public let parent: ManagedObjectContext?
    /// Whether the context keeps every object it registered until `reset()` (true, the
    /// default), or only those with unsaved changes [retainsRegisteredObjects]. Set it to false
    /// for a long-lived reading context that should not grow.
    public var retainsRegisteredObjects: Bool {
        get { assertOnQueue(); return _retainsRegisteredObjects }
        set { assertOnQueue(); _retainsRegisteredObjects = newValue }
    }
    @exclusivity(unchecked) private var _retainsRegisteredObjects = true
    var retainsRegisteredObjectsNow: Bool { _retainsRegisteredObjects }

    /// How a save treats a conflict with changes saved elsewhere since this context read them.
    public var mergePolicy: MergePolicy {
        get { assertOnQueue(); return _mergePolicy }
        set { assertOnQueue(); _mergePolicy = newValue }
    }

    let queue: DispatchQueue
    @exclusivity(unchecked) var _mergePolicy: MergePolicy = .error
    /// `transactionAuthor`'s storage.
    @exclusivity(unchecked) var author: String?

    /// Objects by ID. Held strongly while `retainsRegisteredObjects` (the default): objects
    /// cannot leave a `perform` block, so the context is what keeps what it read (and the
    /// version it read it at) from one block to the next. Otherwise held weakly, and objects
    /// with changes are kept alive by the change lists below.
    @exclusivity(unchecked) var registered: [ManagedObjectID: Registration] = [:]
    @exclusivity(unchecked) private var registrationsSincePurge = 0
    /// Bumped by `reset()`: objects of an earlier generation are detached.
    @exclusivity(unchecked) private(set) var generation = 0

    @exclusivity(unchecked) var insertedList: [ManagedObject] = []
    @exclusivity(unchecked) var updatedList: [ManagedObject] = []
    @exclusivity(unchecked) var deletedList: [ManagedObject] = []
    /// Objects whose loaded relationships changed through inverse maintenance only.
    @exclusivity(unchecked) var touchedList: [ManagedObject] = []
    /// Objects inserted and deleted again since the last save: never written, but their delete
    /// rules are checked when saving, and they stay registered until then.
    @exclusivity(unchecked) var discardedInsertList: [ManagedObject] = []
    /// Objects given a `baseVersion`: the save checks their version even if it changes nothing.
    @exclusivity(unchecked) var baseVersionList: [ManagedObject] = []
    /// What each pending delete did to other objects (`delete(_:)`), by deleted object.
    @exclusivity(unchecked) var deletionEffects: [ObjectIdentifier: DeletionEffects] = [:]

    /// The kinds of keys read in to-ones to parent entities (`DestinationKindCache`).
    @exclusivity(unchecked) var destinationKinds = DestinationKindCache()

    /// The read session of a `performInSnapshot` block in progress: every read uses it.
    @exclusivity(unchecked) var snapshotSession: (any StoreReadSession)?
    /// The query generation the context is pinned to (`setQueryGenerationFrom`), if any:
    /// every read outside a save uses its snapshot.
    @exclusivity(unchecked) var pinnedGeneration: QueryGenerationToken?
    /// The knobs of the store's fetch plans for this context, and their counters.
    let fetchTuning = FetchTuning()
    /// Whether a store may answer part of a predicate in its own query language (the
    /// PostgreSQL store's SQL); off, it evaluates every row in memory: the twin tests' plain path.
    var storeCompilesPredicates: Bool {
        get { fetchTuning.compilesPredicates }
        set { fetchTuning.compilesPredicates = newValue }
    }

    /// Who hears of this context's changes and saves (ContextNotification.swift).
    let observers = ContextObservers()
    /// Changes made since the last objects-did-change notification, gathered only while the
    /// context has observers.
    @exclusivity(unchecked) var unprocessedChanges = UnprocessedChanges()
    /// `automaticallyMergesChangesFromParent`'s storage.
    @exclusivity(unchecked) var mergesAutomatically = false
    /// Child contexts that merge this context's saves, and the saves their siblings push into
    /// it, as they happen (`automaticallyMergesChangesFromParent` on a child).
    let mergingChildren = MergingContexts()
    /// How many child contexts this one has. While it has any, the permanent IDs it gives
    /// objects (saving, `obtainPermanentIDs`) are remembered with the temporary IDs they
    /// replace, for the children that hold those objects by the temporary ones.
    let childCount = Atomic<Int>(0)
    /// Permanent ID → the temporary ID it replaced (see `childCount`); read by descendants,
    /// emptied when the last child goes. A long-lived parent keeps one entry per object it
    /// gave a permanent ID while it had children.
    let temporaryAliases = Mutex<[ManagedObjectID: ManagedObjectID]>([:])

    /// Reads go to the writer's side of the store instead of its readers, so that they see
    /// what the context itself wrote in a transaction in progress.
    public let readsThroughWriter: Bool
    /// The group commit this context runs (`PersistentStoreCoordinator.performGroupCommit(in:)`):
    /// while it is set, the context's saves go into the group's transaction, each in a
    /// savepoint, and its reads see that transaction.
    @exclusivity(unchecked) var activeGroup: GroupCommit?

    /// A new context on the coordinator. Use it only inside `perform` / `performAndWait`.
    /// `readsThroughWriter` is for the one context that saves inside group commits.
    public convenience init(coordinator: PersistentStoreCoordinator, name: String = "context", readsThroughWriter: Bool = false) {
        self.init(coordinator: coordinator, name: name, readsThroughWriter: readsThroughWriter, ownedByCoordinator: false)
    }

    /// `ownedByCoordinator`: a context of the coordinator's reader pool (`withReadContext`),
    /// which does not keep its coordinator alive.
    init(coordinator: PersistentStoreCoordinator, name: String, readsThroughWriter: Bool, ownedByCoordinator: Bool,
         parent: ManagedObjectContext? = nil) {
        self.owningCoordinator = ownedByCoordinator ? nil : coordinator
        self.coordinatorReference = coordinator
        self.name = name
        self.parent = parent
        self.readsThroughWriter = readsThroughWriter
        self.queue = DispatchQueue(label: "ManagedStore.context.\(name)")
        parent?.childCount.add(1, ordering: .relaxed)
    }

    deinit {
        // With its last child gone, no context holds the temporary IDs the aliases are for.
        guard let parent, parent.childCount.subtract(1, ordering: .relaxed).newValue == 0 else { return }
        parent.temporaryAliases.withLock { $0.removeAll() }
    }

    public var description: String { "<ManagedObjectContext \(name)>" }

    // MARK: Queue confinement

    /// True when the caller runs on this context's queue.
    public var isOnQueue: Bool { RunningContext.isRunning(self) }

    package func assertOnQueue(_ function: StaticString = #function) {
        guard isOnQueue else {
            preconditionFailure("ManagedObjectContext '\(name)': \(function) was called off the context's queue. "
                + "A context and its objects may only be used inside context.perform { } or context.performAndWait { }; "
                + "pass object IDs, not objects, between contexts and tasks.")
        }
    }

    /// Runs `body` on the context's queue and returns its result [perform(_:)].
    public func perform<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async {
                continuation.resume(with: Result { try self.runBlock(body) })
            }
        }
    }

    /// Runs `body` on the context's queue and returns its result [perform(_:)].
    public func perform<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: self.runBlock(body)) }
        }
    }

    /// Runs `body` on the context's queue and waits for it [performAndWait(_:)]. Reentrant: called
    /// on the queue already, it runs `body` at once.
    ///
    /// Inlinable so that it is specialized for `T` in the caller's module: unspecialized, every
    /// call looked up the metadata of `Result<T, Error>` and `T?` at run time, on each read of
    /// one object.
    @inlinable
    public func performAndWait<T>(_ body: () throws -> T) rethrows -> T {
        if isOnQueue { return try body() }
        return try syncOnQueue(body, rethrowing: { throw $0 })
    }

    /// Runs `work` on the queue through `runOnQueue`, carrying its result or error back;
    /// `rethrowing` lets this stay `rethrows`.
    @inlinable
    func syncOnQueue<T>(_ work: () throws -> T, rethrowing: (any Error) throws -> T) rethrows -> T {
        var result: Result<T, any Error>?
        runOnQueue { result = Result { try work() } }
        switch result! {
        case .success(let value): return value
        case .failure(let error): return try rethrowing(error)
        }
    }

    /// `queue.sync` through Dispatch's plain `() -> Void` entry point, with the thread marked as
    /// running this context: the generic, throwing `sync` runs layers of unspecialized helpers
    /// on every call.
    @usableFromInline
    func runOnQueue(_ block: () -> Void) {
        queue.sync { runBlock(block) }
    }

    /// Runs the outermost block of a `perform` or `performAndWait` with the thread marked as
    /// running this context, then tells observers what the block changed.
    func runBlock<T>(_ body: () throws -> T) rethrows -> T {
        try RunningContext.run(self) {
            defer { tellUnprocessedChanges() }
            return try body()
        }
    }

    // MARK: State

    /// True when a save would write something [hasChanges].
    public var hasChanges: Bool {
        assertOnQueue()
        return insertedList.contains { $0.isInserted && !$0.isDeleted }
            || deletedList.contains { $0.isDeleted }
            || updatedList.contains { $0.isUpdated && !$0.isDeleted }
    }

    public var insertedObjects: Set<ManagedObject> {
        assertOnQueue()
        return Set(insertedList.filter { $0.isInserted && !$0.isDeleted })
    }

    public var updatedObjects: Set<ManagedObject> {
        assertOnQueue()
        return Set(updatedList.filter { $0.isUpdated && !$0.isDeleted && !$0.isInserted })
    }

    public var deletedObjects: Set<ManagedObject> {
        assertOnQueue()
        return Set(deletedList.filter(\.isDeleted))
    }

    /// Objects the context holds now (faults included).
    public var registeredObjects: Set<ManagedObject> {
        assertOnQueue()
        return Set(registered.values.compactMap(\.object))
    }

    // MARK: Registration

    /// The object registered for `id`, if the context holds one [registeredObject(for:)].
    public func registeredObject(for id: ManagedObjectID) -> ManagedObject? {
        assertOnQueue()
        return lookup(id)
    }

    func lookup(_ id: ManagedObjectID) -> ManagedObject? {
        registered[id]?.object
    }

    /// `lookup`, and in a child context also the object it holds by the temporary ID that an
    /// ancestor replaced with `id` (ManagedObjectContext+Nesting.swift).
    @inline(__always)
    func lookupIncludingAliases(_ id: ManagedObjectID) -> ManagedObject? {
        if let object = lookup(id) { return object }
        return parent == nil ? nil : objectHeldByTemporaryID(replacedBy: id)
    }

    func register(_ object: ManagedObject) {
        registered[object.objectID] = Registration(object, retained: _retainsRegisteredObjects)
        guard !_retainsRegisteredObjects else { return }
        registrationsSincePurge += 1
        // Drop entries of released objects now and then, so a long-lived reading context does
        // not grow without bound. Amortized O(1) per registration.
        if registrationsSincePurge > max(1024, registered.count) {
            registered = registered.filter { $0.value.object != nil }
            registrationsSincePurge = 0
        }
    }

    func noteUpdated(_ object: ManagedObject) {
        if observers.isObserved { noteForObservers(\.updated, object.objectID) }
        if !object.isListedAsUpdated {
            object.isListedAsUpdated = true
            updatedList.append(object)
        }
    }

    func noteBaseVersion(_ object: ManagedObject) {
        if !baseVersionList.contains(where: { $0 === object }) { baseVersionList.append(object) }
    }

    func noteTouched(_ object: ManagedObject) {
        if observers.isObserved && !object.isInserted { noteForObservers(\.updated, object.objectID) }
        if !object.isListedAsTouched && !object.isInserted {
            object.isListedAsTouched = true
            touchedList.append(object)
        }
    }

    /// Inserts a new object of `entityName` with its default values [insertNewObject(forEntityName:into:)].
    public func insertNewObject(forEntityName entityName: String) -> ManagedObject {
        assertOnQueue()
        guard let entity = coordinator.model.resolvedEntity(named: entityName) else {
            preconditionFailure("the model has no entity '\(entityName)'; its entities are "
                + coordinator.model.entities.map(\.name).joined(separator: ", "))
        }
        // As Core Data: an abstract entity has no objects of its own; callers with names from
        // outside the program check `EntityDescription.isAbstract` first (the server does).
        precondition(!entity.isAbstract, "\(entityName) is abstract: insert an object of one of its sub-entities")
        let id = ManagedObjectID.newTemporary(storeIdentifier: coordinator.storeIdentifier, entityName: entity.name)
        return insert(entity, id: id)
    }

    /// Registers a new inserted object of `entity` with `id` and its default values (an insert
    /// of this context, or one a child's save pushes in).
    @inline(__always)
    func insert(_ entity: Entity, id: ManagedObjectID) -> ManagedObject {
        let object = ManagedObject(entity: entity, objectID: id, context: self, isFault: false)
        object.attributes = entity.defaultAttributes
        object.relationships = entity.emptyRelationships
        if !entity.transientDefaults.isEmpty { object.transientValues = entity.transientDefaults }
        object.isInserted = true
        insertedList.append(object)
        register(object)
        if observers.isObserved { noteForObservers(\.inserted, id) }
        return object
    }

    /// The object for `id`: the registered one, or a fault that reads the store (a child: its
    /// parent) when used [object(with:)]. An ID of another store or model is a programming
    /// error and traps, and so is a temporary ID unknown to a root context. A child may be
    /// given the temporary ID of an object inserted in its parent chain; if no context of the
    /// chain holds it, the fault turns out `isInaccessible` when used.
    public func object(with id: ManagedObjectID) -> ManagedObject {
        assertOnQueue()
        if let object = lookupIncludingAliases(id) { return object }
        precondition(coordinator.isValid(id), "object(with:): \(id) does not belong to this store and model")
        precondition(!id.isTemporaryID || parent != nil, "object(with:): \(id) is a temporary ID of an object this context does not hold")
        return makeFault(id)
    }

    /// Registers a new fault for `id`, which the caller checked.
    func makeFault(_ id: ManagedObjectID) -> ManagedObject {
        let object = ManagedObject(entity: coordinator.model.resolvedEntity(named: id.entityName)!, objectID: id,
                                   context: self, isFault: true)
        register(object)
        return object
    }

    /// The object for `id`, read from the store (a child: from its parent) now; throws if there
    /// is no such object, or it is deleted in the parent chain [existingObject(with:)].
    public func existingObject(with id: ManagedObjectID) throws(ContextError) -> ManagedObject {
        assertOnQueue()
        if let object = lookupIncludingAliases(id), !object.isFault {
            if object.isInaccessible { throw .objectNotFound(id) }
            return object
        }
        guard coordinator.isValid(id) else { throw .foreignObjectID(id) }
        guard !id.isTemporaryID || parent != nil else { throw .objectNotFound(id) }
        let object = self.object(with: id)
        try loadFault(object)
        if object.isInaccessible { throw .objectNotFound(id) }
        return object
    }

    // MARK: Reading the store

    /// Runs `body` with every read of this context, faults and relationship faults included,
    /// seeing one snapshot of the store (one read transaction on one reader connection). Use it
    /// to read an object and its relationships consistently, and cheaply: one transaction
    /// instead of one per fault. Saving inside the block is not allowed.
    ///
    /// A child context reads its parent, not the store: it runs `body` as it is, and each read
    /// sees the parent's state at that moment.
    public func performInSnapshot<T>(_ body: () throws -> T) throws -> T {
        assertOnQueue()
        if snapshotSession != nil || parent != nil { return try body() }
        if let pinned = pinnedGeneration?.snapshot { return try pinned.read { session in try inSnapshot(on: session, body) } }
        if let activeGroup { return try inSnapshot(on: activeGroup.session, body) }
        return try coordinator.store.read(throughWriter: readsThroughWriter) { session in try inSnapshot(on: session, body) }
    }

    /// Runs `body` with every read of the context on `session`, one snapshot of the store.
    func inSnapshot<T>(on session: any StoreReadSession, _ body: () throws -> T) rethrows -> T {
        snapshotSession = session
        defer { snapshotSession = nil }
        return try body()
    }

    /// Runs one read on the snapshot in progress, the pinned query generation, or a session of
    /// its own.
    func readStore<T>(_ body: (any StoreReadSession) throws -> T) throws -> T {
        if let snapshotSession { return try body(snapshotSession) }
        if let pinned = pinnedGeneration?.snapshot { return try pinned.read(body) }
        if let activeGroup { return try body(activeGroup.session) }
        return try coordinator.store.read(throughWriter: readsThroughWriter, body)
    }

    // MARK: Faults

    /// Fills a fault from its prefetched row or the store. A row that is gone leaves the object
    /// empty and `isInaccessible`; saving changes to it then reports a conflict.
    func fireFault(_ object: ManagedObject) {
        do { try loadFault(object) } catch {
            preconditionFailure("ManagedStore could not read \(object.objectID) from the store: \(error). "
                + "Use existingObject(with:) to handle store errors.")
        }
    }

    func loadFault(_ object: ManagedObject) throws(ContextError) {
        guard object.isFault else { return }
        let row: StoredRow?
        if let prefetched = object.prefetchedRow {
            row = prefetched
        } else {
            if let batch = object.faultBatch {
                // A batched fetch's fault: its batch is read together (FaultBatch.swift).
                object.faultBatch = nil
                try loadBatch(batch)
                return try loadFault(object)
            }
            if parent != nil { return try loadFaultFromParent(object) }
            guard let pk = object.objectID.primaryKey else { return }
            do {
                row = try readStoredRow(of: object.entity, key: pk)
            } catch {
                throw .store(StoreError(wrapping: error))
            }
        }
        if let row { materialize(object, from: row) } else { markInaccessible(object) }
    }

    func materialize(_ object: ManagedObject, from row: StoredRow) {
        let entity = object.entity
        var relationships = [RelationshipState](repeating: .unloaded, count: entity.relationships.count)
        for (position, r) in entity.foreignKeyRelationships.enumerated() {
            let destination = coordinator.model.schema[entity.relationships[r].destinationIndex]
            relationships[r] = .toOne(row.foreignKeys[position].map { key in
                if destination.isSingleKind {
                    return ManagedObjectID(storeIdentifier: coordinator.storeIdentifier, entityName: destination.name, key: .permanent(key))
                }
                return destinationID(key, of: destination)
            })
        }
        fill(object, version: row.version, attributes: row.attributes, relationships: relationships)
    }

    /// Turns a fault into an object with these values, read at `version`, as its committed state.
    @inline(__always)
    func fill(_ object: ManagedObject, version: Int64, attributes: [AttributeValue], relationships: [RelationshipState]) {
        object.prefetchedRow = nil
        object.faultBatch = nil
        object.committedVersion = version
        object.attributes = attributes
        object.relationships = relationships
        object.committedAttributes = attributes
        object.committedRelationships = relationships
        if !object.destinationOrder.isEmpty || !object.committedDestinationOrder.isEmpty { forgetOrder(of: object) }
        object.isFault = false
    }

    func markInaccessible(_ object: ManagedObject) {
        object.prefetchedRow = nil
        object.faultBatch = nil
        object.isInaccessible = true
        object.attributes = object.entity.attributes.map { _ in .null }
        object.relationships = object.entity.relationships.map { $0.isToMany ? .toMany([]) : .toOne(nil) }
        object.committedAttributes = object.attributes
        object.committedRelationships = object.relationships
        forgetOrder(of: object)
        object.isFault = false
    }

    // MARK: Discarding

    /// Forgets every object and change [reset()]. Objects handed out before can no longer be used.
    public func reset() {
        assertOnQueue()
        advancePinnedGeneration()  // a pinned context moves on to the current generation
        destinationKinds.removeAll()
        // A context that holds nothing has nothing to detach (read contexts that answered a
        // request from the store directly): clearing an empty table still sweeps its buckets.
        if registered.isEmpty && insertedList.isEmpty && updatedList.isEmpty && deletedList.isEmpty && touchedList.isEmpty
            && discardedInsertList.isEmpty && baseVersionList.isEmpty && deletionEffects.isEmpty { return }
        generation += 1  // detaches every object handed out so far, in O(1)
        if observers.isObserved {
            unprocessedChanges = UnprocessedChanges()
            unprocessedChanges.invalidatedAll = true
        }
        // Keep the capacity: a context reset between batches of an import fills up again at once.
        registered.removeAll(keepingCapacity: true)
        insertedList.removeAll(keepingCapacity: true)
        updatedList.removeAll(keepingCapacity: true)
        deletedList.removeAll(keepingCapacity: true)
        touchedList.removeAll(keepingCapacity: true)
        discardedInsertList.removeAll()
        baseVersionList.removeAll()
        deletionEffects.removeAll()
        registrationsSincePurge = 0
    }

    /// Throws away every unsaved change [rollback()]: inserted objects are forgotten, changed
    /// and deleted ones return to their last read or saved state.
    public func rollback() {
        assertOnQueue()
        let observed = observers.isObserved
        for object in insertedList + discardedInsertList where object.isInserted {
            object.isDetached = true
            registered[object.objectID] = nil
            if observed { noteForObservers(\.invalidated, object.objectID) }
        }
        for object in updatedList + deletedList + touchedList where !object.isInserted {
            restoreCommittedState(object)
            if observed { noteForObservers(\.refreshed, object.objectID) }
        }
        for object in baseVersionList { object.claimedBaseVersion = nil }
        baseVersionList = []
        deletionEffects = [:]
        discardedInsertList = []
        insertedList = []
        updatedList = []
        deletedList = []
        touchedList = []
    }

    func restoreCommittedState(_ object: ManagedObject) {
        object.isDeleted = false
        object.isListedAsUpdated = false
        object.isListedAsTouched = false
        object.changedAttributes = []
        object.changedRelationships = []
        object.clearSetProperties()
        if !object.isFault {
            object.attributes = object.committedAttributes
            object.relationships = object.committedRelationships
            object.destinationOrder = object.committedDestinationOrder
        }
    }

    /// Turns `object` back into a fault, dropping its changes, or with `mergeChanges` reads the
    /// store's current values and version and keeps this context's changes on top of them
    /// [refresh(_:mergeChanges:)]. Merging is how to take in another context's save before saving.
    ///
    /// In a child context, "the store" is its parent: the object takes the parent's current
    /// state, unsaved changes of the parent chain included.
    public func refresh(_ object: ManagedObject, mergeChanges: Bool) {
        assertOnQueue()
        precondition(object.context === self, "refresh: \(object.objectID) belongs to another context")
        // A child also refreshes objects known by a temporary ID: inserted in its parent chain.
        guard !object.isInserted, !object.isDeleted, !object.objectID.isTemporaryID || parent != nil else { return }
        if observers.isObserved { noteForObservers(\.refreshed, object.objectID) }
        if !mergeChanges || object.isFault {
            let hadChanges = object.isUpdated
            object.changedAttributes = []
            object.changedRelationships = []
            object.clearSetProperties()
            object.isFault = true
            object.prefetchedRow = nil
            object.isInaccessible = false
            object.attributes = []
            object.relationships = []
            // A fault holds no values, transient ones included (mergeChanges keeps them).
            object.transientValues = []
            forgetOrder(of: object)
            if hadChanges { updatedList.removeAll { $0 === object }; object.isListedAsUpdated = false }
            return
        }
        let mine = object.attributes, myRelationships = object.relationships, myOrder = object.destinationOrder
        let changedAttributes = object.changedAttributes, changedRelationships = object.changedRelationships
        if parent != nil {
            guard refreshFromParent(object) else { return }
        } else {
            let row: StoredRow?
            do {
                row = try readStoredRow(of: object.entity, key: object.objectID.primaryKey!)
            } catch {
                preconditionFailure("refresh: could not read \(object.objectID): \(error)")
            }
            guard let row else { markInaccessible(object); return }
            materialize(object, from: row)
        }
        for a in changedAttributes { object.attributes[a] = mine[a] }
        for r in changedRelationships {
            object.relationships[r] = myRelationships[r]
            if let order = myOrder[r] { object.destinationOrder[r] = order }
        }
    }
}

/// An entry of the registration table: the object itself, or a weak reference to it.
///
/// An enum rather than a struct with both kinds of field: the default (retained) entry is one
/// pointer, with none of the weak-reference runtime calls on every copy and destroy.
enum Registration {
    case retained(ManagedObject)
    case weak(WeakObjectReference)

    init(_ object: ManagedObject, retained: Bool) {
        self = retained ? .retained(object) : .weak(WeakObjectReference(object))
    }

    var object: ManagedObject? {
        switch self {
        case .retained(let object): return object
        case .weak(let reference): return reference.object
        }
    }
}

final class WeakObjectReference {
    weak var object: ManagedObject?
    init(_ object: ManagedObject) { self.object = object }
}
