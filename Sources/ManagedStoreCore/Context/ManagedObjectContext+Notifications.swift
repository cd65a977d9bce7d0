// Telling observers what a context did, and taking in what other contexts saved.

import Synchronization

extension ManagedObjectContext {
    // MARK: Observing

    /// Calls `observer` with each of this context's notifications, on the context's queue,
    /// until the returned observation is cancelled. May be called from any thread.
    @discardableResult
    public func addObserver(_ observer: @escaping @Sendable (ContextNotification) -> Void) -> ContextObservation {
        let observers = self.observers
        let id = observers.add(observer)
        return ContextObservation(id: id, context: ObjectIdentifier(self)) { observers.remove(id) }
    }

    /// Stops the notifications of `observation` [removeObserver(_:)].
    public func removeObserver(_ observation: ContextObservation) {
        precondition(observation.context == ObjectIdentifier(self), "removeObserver: the observation belongs to another context")
        observers.remove(observation.id)
    }

    /// This context's notifications as an asynchronous sequence, from now until the consuming
    /// task stops iterating (or is cancelled). None is dropped: the stream buffers what the
    /// consumer has not read yet.
    public func notifications() -> AsyncStream<ContextNotification> {
        let (stream, continuation) = AsyncStream<ContextNotification>.makeStream(bufferingPolicy: .unbounded)
        let observation = addObserver { notification in continuation.yield(notification) }
        continuation.onTermination = { _ in observation.cancel() }
        return stream
    }

    /// Tells observers now what changed since they last heard [processPendingChanges()]. Runs by
    /// itself at the end of each outermost `perform` / `performAndWait` block and before a save.
    public func processPendingChanges() {
        assertOnQueue()
        tellUnprocessedChanges()
    }

    /// Sends the objects-did-change notification of the changes gathered so far, if any.
    func tellUnprocessedChanges() {
        guard !unprocessedChanges.isEmpty else { return }
        let changes = unprocessedChanges.notice()
        unprocessedChanges = UnprocessedChanges()
        if !changes.isEmpty { observers.post(.objectsDidChange(changes)) }
    }

    /// Adds `id` to one list of the next objects-did-change notification. Callers check
    /// `observers.isObserved` first: a context nobody observes gathers nothing.
    func noteForObservers(_ list: WritableKeyPath<UnprocessedChanges, Set<ManagedObjectID>>, _ id: ManagedObjectID) {
        unprocessedChanges[keyPath: list].insert(id)
    }

    // MARK: Saves

    /// Before a save: pending changes are told, then will-save, if there is anything to save.
    func tellWillSave() {
        tellUnprocessedChanges()
        if observers.isObserved && (hasChanges || !baseVersionList.isEmpty) { observers.post(.willSave) }
    }

    /// After a save that wrote something: did-save to this context's observers, and the save to
    /// the contexts that merge automatically: this context's children that do, and for a root
    /// context (whose save reached the store) the other root contexts that do (after the
    /// group's COMMIT, inside a group commit). A child's save reached only its parent, so no
    /// other context of the coordinator hears of it.
    func tellDidSave(_ saved: SavedChanges) {
        guard !saved.isEmpty else { return }
        if observers.isObserved { observers.post(.didSave(saved)) }
        if parent == nil { coordinator.announceSave(saved, from: self) }
        mergingChildren.deliver(saved, except: nil)
    }

    // MARK: Merging

    /// Whether changes to the context's parent are merged into it as they happen, on its
    /// queue [automaticallyMergesChangesFromParent]. Off by default.
    ///
    /// For a root context the "parent" is the store: every other root context's committed
    /// save reaches it. For a child, it is its parent context: the parent's own saves (to the
    /// store or to its parent) and the saves its other children push into it. Either way the
    /// context's registered objects take the new state, with its own unsaved changes on top.
    public var automaticallyMergesChangesFromParent: Bool {
        get { assertOnQueue(); return mergesAutomatically }
        set {
            assertOnQueue()
            guard newValue != mergesAutomatically else { return }
            mergesAutomatically = newValue
            if let parent {
                parent.mergingChildren.set(self, merging: newValue)
            } else {
                coordinator.mergingContexts.set(self, merging: newValue)
            }
        }
    }

    /// Takes in another context's save [mergeChanges(fromContextDidSave:)]. Objects the save
    /// inserted are new to this context: each is registered as a fault (read from the store
    /// when used) and listed as inserted, as Core Data faults them in, so that a list on
    /// screen learns of a new row from the notification alone. (A context that does not retain
    /// its registered objects lists them without keeping a fault nobody holds.) Registered
    /// objects the save updated take in the store's current values and version, keeping this
    /// context's own unsaved changes on top (`refresh(_:mergeChanges: true)`); faults need
    /// nothing, they read the store when used. Registered objects the save deleted lose their
    /// changes and become inaccessible (as if their row had vanished before they were read).
    /// Observers hear of all three in an objects-did-change notification (inserted, refreshed
    /// and invalidated). A context pinned to a query generation moves to the current one first.
    public func mergeChanges(fromContextDidSave saved: SavedChanges) {
        assertOnQueue()
        precondition(snapshotSession == nil, "mergeChanges inside performInSnapshot: merge after the block")
        advancePinnedGeneration()
        let observed = observers.isObserved
        for id in saved.inserted where lookupIncludingAliases(id) == nil && canHoldMergedInsert(id) {
            if retainsRegisteredObjectsNow { _ = makeFault(id) }
            if observed { noteForObservers(\.inserted, id) }
        }
        for id in saved.deleted {
            guard let object = lookupIncludingAliases(id), !object.isInserted else { continue }
            forgetPendingChanges(of: object)
            markInaccessible(object)
            if observed { noteForObservers(\.invalidated, id) }
        }
        for id in saved.updated {
            guard let object = lookupIncludingAliases(id), !object.isFault, !object.isInserted, !object.isDeleted, !object.isInaccessible else { continue }
            refresh(object, mergeChanges: true)
        }
        tellUnprocessedChanges()
    }

    /// Whether a merged save's inserted `id` names an object this context can read: one of its
    /// store and model, and, for a root context, a permanent ID (a child's save into its parent
    /// carries temporary IDs, which only the parent's other children can follow).
    private func canHoldMergedInsert(_ id: ManagedObjectID) -> Bool {
        coordinator.isValid(id) && (!id.isTemporaryID || parent != nil)
    }

    /// Merges a save made elsewhere (another process, another coordinator on the same store, a
    /// batch request), known only by its object IDs, into each of `contexts`, on each one's
    /// queue, waiting for all [mergeChanges(fromRemoteContextSave:into:)].
    public static func mergeChanges(fromRemoteContextSave saved: SavedChanges, into contexts: [ManagedObjectContext]) {
        for context in contexts {
            context.performAndWait { context.mergeChanges(fromContextDidSave: saved) }
        }
    }

    /// The save's pending changes to `object` are dropped: its row is gone.
    private func forgetPendingChanges(of object: ManagedObject) {
        if object.isListedAsUpdated { updatedList.removeAll { $0 === object } }
        if object.isListedAsTouched { touchedList.removeAll { $0 === object } }
        if object.isDeleted {
            deletedList.removeAll { $0 === object }
            deletionEffects[ObjectIdentifier(object)] = nil
        }
        baseVersionList.removeAll { $0 === object }
        object.claimedBaseVersion = nil
        restoreCommittedState(object)  // clears the change marks; markInaccessible sets the values
    }

    /// Runs `body` on the context's queue later, as an outermost block, without waiting.
    func performLater(_ body: @escaping @Sendable () -> Void) {
        queue.async { self.runBlock(body) }
    }
}

// MARK: The coordinator's side of automatic merging

/// A context that merges automatically, held weakly: neither the coordinator nor a parent
/// keeps it alive.
///
/// Sendable: the reference never changes after `init` (`weak let`), and the context is Sendable.
final class WeakContextReference: Sendable {
    weak let context: ManagedObjectContext?
    init(_ context: ManagedObjectContext) { self.context = context }
}

/// The contexts that take in saves as they happen (`automaticallyMergesChangesFromParent`):
/// the coordinator's root contexts, or one context's children. Any thread may change or read
/// the set; each context merges on its own queue, later, so delivering never waits for one.
final class MergingContexts: Sendable {
    private let contexts = Mutex<[ObjectIdentifier: WeakContextReference]>([:])

    func set(_ context: ManagedObjectContext, merging: Bool) {
        contexts.withLock { contexts in
            contexts = contexts.filter { $0.value.context != nil }
            contexts[ObjectIdentifier(context)] = merging ? WeakContextReference(context) : nil
        }
    }

    var isEmpty: Bool { contexts.withLock { $0.isEmpty } }

    /// Every context of the set but `origin` merges `saved`, on its own queue.
    func deliver(_ saved: SavedChanges, except origin: ObjectIdentifier?) {
        let targets = contexts.withLock { contexts in contexts.compactMap { $0.key == origin ? nil : $0.value.context } }
        for context in targets {
            context.performLater { context.mergeChanges(fromContextDidSave: saved) }
        }
    }
}

extension PersistentStoreCoordinator {
    /// A context's save wrote something: every other context that merges automatically takes
    /// it in, on its own queue, once it is committed. Inside a group commit that is after the
    /// group's COMMIT (`GroupCommit.committedSaves`); a group the store rolls back forgets them.
    func announceSave(_ saved: SavedChanges, from origin: ManagedObjectContext) {
        guard !mergingContexts.isEmpty else { return }
        if let group = origin.activeGroup {
            group.committedSaves.append((saved, ObjectIdentifier(origin)))
        } else {
            deliverSave(saved, from: ObjectIdentifier(origin))
        }
    }

    func deliverSave(_ saved: SavedChanges, from origin: ObjectIdentifier) {
        mergingContexts.deliver(saved, except: origin)
    }
}
