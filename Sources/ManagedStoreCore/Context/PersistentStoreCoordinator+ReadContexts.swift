extension PersistentStoreCoordinator {
    /// Runs `body` on a read context lent with one of the store's readers, on the context's
    /// queue, with every read it makes (fetches, faults, relationships) in one snapshot of the
    /// latest state; waits while every reader is lent out. The context is reset (and unpinned)
    /// when `body` returns: it must not answer the next borrower from what it read for this one.
    ///
    /// For many short reads from many threads, this is cheaper than a context of one's own:
    /// the contexts and their readers' snapshots are reused. Do not keep the context, or
    /// objects of it, after `body`; pass object IDs on. Do not save in it.
    public func withReadContext<T>(_ body: (ManagedObjectContext) throws -> T) throws -> T {
        try store.withPooledReader { reader, session in try withLentContext(reader, session, body) }
    }

    /// `withReadContext` for a `body` that reads the object `id` by its key and nothing else
    /// (`ManagedObjectContext.withStoredObject`). When its entity names every destination without
    /// a read of their kinds (`ManagedObjectModel.readsObjectInOneStatement`), that is one
    /// statement of the store, which sees one state by itself: the store may leave out what makes
    /// its reads one snapshot (`PersistentStore.withPooledReaderForOneStatement`).
    package func withReadContext<T>(readingOnly id: ManagedObjectID, _ body: (ManagedObjectContext) throws -> T) throws -> T {
        guard let entity = model.entityIndexByName[id.entityName], model.readsObjectInOneStatement[entity] else { return try withReadContext(body) }
        return try store.withPooledReaderForOneStatement { reader, session in try withLentContext(reader, session, body) }
    }

    private func withLentContext<T>(_ reader: Int, _ session: any StoreReadSession, _ body: (ManagedObjectContext) throws -> T) throws -> T {
        let context = readContexts.context(for: reader, of: self)
        return try context.performAndWait {
            defer { context.endLoan() }
            return try context.inSnapshot(on: session) { try body(context) }
        }
    }
}

/// The read contexts lent with the store's readers, one per reader, made on its first loan.
///
/// `@unchecked Sendable`: slot `n` is only touched by the holder of reader `n`, which the store
/// lends to one caller at a time (`PersistentStore.withPooledReader`); the slots never move.
final class PooledReadContexts: @unchecked Sendable {
    private let slots: UnsafeMutableBufferPointer<ManagedObjectContext?>

    init(count: Int) {
        slots = .allocate(capacity: count)
        slots.initialize(repeating: nil)
    }

    deinit {
        slots.deinitialize()
        slots.deallocate()
    }

    /// Reader `reader`'s context (held by its borrower).
    func context(for reader: Int, of coordinator: PersistentStoreCoordinator) -> ManagedObjectContext {
        if let context = slots[reader] { return context }
        // It does not keep its coordinator alive: the coordinator keeps it.
        let context = ManagedObjectContext(coordinator: coordinator, name: "read-\(reader)", readsThroughWriter: false, ownedByCoordinator: true)
        slots[reader] = context
        return context
    }
}

extension ManagedObjectContext {
    /// A pooled read context's clean-up when it goes back to the pool.
    func endLoan() {
        pinnedGeneration = nil
        reset()
    }
}

extension PersistentStoreCoordinator {
    /// Runs `body` with a pooled read context and the read session it reads through: the
    /// history and the objects read in `body` are of one snapshot (what a live query's
    /// engine needs to know which commit an answer holds at).
    func withReadSnapshot<T>(_ body: (ManagedObjectContext, any StoreReadSession) throws -> T) throws -> T {
        try store.withPooledReader { reader, session in
            let context = readContexts.context(for: reader, of: self)
            return try context.performAndWait {
                defer { context.endLoan() }
                return try context.inSnapshot(on: session) { try body(context, session) }
            }
        }
    }

    /// Checks `request` as a fetch would (entity, key paths, predicate), without running it.
    package func prepareFetch(_ request: FetchRequest) throws(FetchError) -> PreparedFetch {
        do {
            return try withReadContext { context in try context.prepare(request) }
        } catch let error as FetchError {
            throw error
        } catch {
            throw .store(StoreError(wrapping: error))
        }
    }
}
