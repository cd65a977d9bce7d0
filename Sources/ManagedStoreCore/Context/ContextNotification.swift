import Synchronization

/// What a context tells its observers [NSManagedObjectContext.Notification]: changes to its
/// objects, and its saves. Only IDs travel (they are Sendable): an observer that wants the
/// objects asks its own context for them.
///
/// Delivered on the context's queue, while the context is in the state the notification
/// describes: an observer may use the context (it runs inside the context's `perform`).
public enum ContextNotification: Sendable, Hashable {
    /// Objects changed in memory since the last such notification
    /// [objectsDidChangeNotification]. Sent when the context processes its pending changes:
    /// at the end of each outermost `perform` / `performAndWait` block, before a save, after a
    /// merge, and on `processPendingChanges()`.
    case objectsDidChange(ObjectChanges)
    /// A save is about to start [willSaveObjectsNotification]. Sent only when there is
    /// something to save.
    case willSave
    /// A save committed [didSaveObjectsNotification]: what changed in the store. Inside a group
    /// commit, "committed" means written into the group's transaction, which commits with the
    /// group; other contexts merging automatically hear of it only after that COMMIT. A child
    /// context's save "commits" into its parent: the notification carries the child's IDs.
    case didSave(SavedChanges)
}

/// The objects of an objects-did-change notification [NSInsertedObjectsKey, NSUpdatedObjectsKey,
/// NSDeletedObjectsKey, NSRefreshedObjectsKey, NSInvalidatedObjectsKey,
/// NSInvalidatedAllObjectsKey]. Inserted objects carry their temporary IDs. Each list is sorted
/// by entity, then by key.
public struct ObjectChanges: Sendable, Hashable {
    public var inserted: [ManagedObjectID] = []
    public var updated: [ManagedObjectID] = []
    public var deleted: [ManagedObjectID] = []
    /// Objects that took in the store's state (a merge, `refresh`).
    public var refreshed: [ManagedObjectID] = []
    /// Objects that can no longer be used: their store row is gone (merged deletions).
    public var invalidated: [ManagedObjectID] = []
    /// `reset()` detached every object the context held.
    public var invalidatedAll = false

    public init() {}

    public var isEmpty: Bool {
        inserted.isEmpty && updated.isEmpty && deleted.isEmpty && refreshed.isEmpty && invalidated.isEmpty && !invalidatedAll
    }
}

/// Changes not yet told to observers, gathered on the context's queue.
struct UnprocessedChanges {
    var inserted: Set<ManagedObjectID> = []
    var updated: Set<ManagedObjectID> = []
    var deleted: Set<ManagedObjectID> = []
    var refreshed: Set<ManagedObjectID> = []
    var invalidated: Set<ManagedObjectID> = []
    var invalidatedAll = false

    var isEmpty: Bool {
        inserted.isEmpty && updated.isEmpty && deleted.isEmpty && refreshed.isEmpty && invalidated.isEmpty && !invalidatedAll
    }

    /// The notification's lists. An object inserted and deleted again before anyone heard of it
    /// is in neither; an inserted object is not also updated.
    func notice() -> ObjectChanges {
        var changes = ObjectChanges()
        let insertedAndDeleted = inserted.intersection(deleted)
        changes.inserted = inserted.subtracting(insertedAndDeleted).sortedByEntityAndKey()
        changes.deleted = deleted.subtracting(insertedAndDeleted).sortedByEntityAndKey()
        changes.updated = updated.subtracting(inserted).subtracting(deleted).sortedByEntityAndKey()
        changes.refreshed = refreshed.subtracting(invalidated).sortedByEntityAndKey()
        changes.invalidated = invalidated.sortedByEntityAndKey()
        changes.invalidatedAll = invalidatedAll
        return changes
    }
}

/// A context's observers. Any thread may add or remove one; the context calls them on its
/// queue, from a copy taken under the lock, so an observer may add or remove observers.
final class ContextObservers: Sendable {
    typealias Observer = @Sendable (ContextNotification) -> Void
    /// In the order they were added, which is the order they are called in.
    private let observers = Mutex<(next: UInt64, list: [(id: UInt64, observer: Observer)])>((0, []))
    /// How many observers there are, read without the lock on every change of an object: a
    /// context nobody observes gathers nothing.
    private let count = Atomic<Int>(0)

    var isObserved: Bool { count.load(ordering: .relaxed) > 0 }

    func add(_ observer: @escaping Observer) -> UInt64 {
        observers.withLock { state in
            state.next += 1
            state.list.append((state.next, observer))
            count.store(state.list.count, ordering: .relaxed)
            return state.next
        }
    }

    func remove(_ id: UInt64) {
        observers.withLock { state in
            state.list.removeAll { $0.id == id }
            count.store(state.list.count, ordering: .relaxed)
        }
    }

    /// Calls every observer with `notification`, in the order they were added.
    func post(_ notification: ContextNotification) {
        let current = observers.withLock { state in state.list }
        for entry in current { entry.observer(notification) }
    }
}

/// An observer's registration: `cancel()` (or `removeObserver`) stops its notifications.
/// Dropping the token does not: like NotificationCenter's, the observer stays until removed.
public struct ContextObservation: Sendable, Hashable {
    let id: UInt64
    let context: ObjectIdentifier
    private let remove: @Sendable () -> Void

    init(id: UInt64, context: ObjectIdentifier, remove: @escaping @Sendable () -> Void) {
        self.id = id
        self.context = context
        self.remove = remove
    }

    public func cancel() { remove() }

    public static func == (a: Self, b: Self) -> Bool { a.id == b.id && a.context == b.context }
    public func hash(into hasher: inout Hasher) {
        hasher.combine(id)
        hasher.combine(context)
    }
}
