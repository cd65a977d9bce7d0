import Foundation

/// A generation of the store: its state as of one moment, which a context can be pinned to so
/// that several fetches and faults, across `perform` blocks, see one consistent snapshot while
/// other contexts save [NSQueryGenerationToken].
///
/// `current` pins a context to the generation current when it next reads; a context's own
/// `queryGenerationToken` pins another context to the very same generation.
public final class QueryGenerationToken: Sendable, Equatable, CustomStringConvertible {
    /// Pins a context to the store's current generation (taken at the context's next read).
    public static let current = QueryGenerationToken(snapshot: nil, coordinator: nil)

    /// nil for `current`.
    let snapshot: (any StoreSnapshot)?
    /// The coordinator whose store the snapshot is of (nil for `current`).
    let coordinator: ObjectIdentifier?

    init(snapshot: (any StoreSnapshot)?, coordinator: PersistentStoreCoordinator?) {
        self.snapshot = snapshot
        self.coordinator = coordinator.map(ObjectIdentifier.init)
    }

    public static func == (a: QueryGenerationToken, b: QueryGenerationToken) -> Bool { a.snapshot === b.snapshot }

    public var description: String {
        guard let snapshot else { return "<QueryGenerationToken current>" }
        return snapshot.commit.map { "<QueryGenerationToken after commit \($0)>" } ?? "<QueryGenerationToken not yet read>"
    }
}

/// Why a context cannot be pinned to a query generation.
public enum QueryGenerationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// An in-memory store has one connection, the writer's; it keeps no older states to read.
    case inMemoryStore
    /// The context reads through the writer (a write queue's), so that it sees a group
    /// commit's own writes; it cannot read an older state.
    case readsThroughWriter
    /// The token is another store's.
    case foreignToken
    /// A child context reads its parent, which holds no older states: pin the root context.
    case childContext

    public var description: String {
        switch self {
        case .inMemoryStore: return "query generations need a store file: an in-memory store keeps no older states"
        case .readsThroughWriter: return "a context that reads through the writer cannot be pinned to a query generation"
        case .foreignToken: return "the query generation token belongs to another store"
        case .childContext: return "a child context reads its parent, not the store: pin the root context of its chain to a query generation"
        }
    }
}

extension ManagedObjectContext {
    /// The generation the context is pinned to; nil when it reads the latest state (the default)
    /// [queryGenerationToken].
    public var queryGenerationToken: QueryGenerationToken? {
        assertOnQueue()
        return pinnedGeneration
    }

    /// Pins the context to a generation of the store, or unpins it with nil
    /// [setQueryGenerationFrom(_:)]. With `.current`, the generation is the store's state at the
    /// context's next read; with another context's `queryGenerationToken`, that context's.
    ///
    /// Until unpinned, every fetch, count and fault of the context reads that state, whatever
    /// other contexts save meanwhile. A pinned context moves on to the current generation when it
    /// saves (a save always compares with, and merges from, the latest state) and on `reset()`.
    /// Objects already registered keep the values they were read with; `refresh` or `reset`
    /// re-reads them.
    public func setQueryGenerationFrom(_ token: QueryGenerationToken?) throws(QueryGenerationError) {
        assertOnQueue()
        guard let token else {
            pinnedGeneration = nil
            return
        }
        guard parent == nil else { throw .childContext }
        // A store that keeps no older states makes no snapshots (an in-memory one).
        guard let fresh = coordinator.store.makeSnapshot() else { throw .inMemoryStore }
        guard !readsThroughWriter else { throw .readsThroughWriter }
        if token.snapshot != nil {
            guard token.coordinator == ObjectIdentifier(coordinator) else { throw .foreignToken }
            pinnedGeneration = token
        } else {
            pinnedGeneration = QueryGenerationToken(snapshot: fresh, coordinator: coordinator)
        }
    }

    /// A pinned context's move to the current generation (after a save, on reset).
    func advancePinnedGeneration() {
        guard pinnedGeneration != nil else { return }
        pinnedGeneration = QueryGenerationToken(snapshot: coordinator.store.makeSnapshot(), coordinator: coordinator)
    }
}
