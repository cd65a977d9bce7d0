extension PersistentStoreCoordinator {
    /// Runs `body` on a read context lent from the store's reader pool, on the context's queue,
    /// with every read it makes (fetches, faults, relationships) in one snapshot of the latest
    /// state; waits while every reader is lent out. The context is reset (and unpinned) when
    /// `body` returns: it must not answer the next borrower from what it read for this one.
    ///
    /// For many short reads from many threads, this is cheaper than a context of one's own:
    /// the contexts and their readers' snapshots are reused (see `ReaderPool`). Do not keep the
    /// context, or objects of it, after `body`; pass object IDs on. Do not save in it.
    public func withReadContext<T>(_ body: (ManagedObjectContext) throws -> T) throws -> T {
        try readers.withReader(currentCommit: { commitCount }) { reader in
            let context = reader.context ?? pooledContext(for: reader)
            return try context.performAndWait {
                defer { context.endLoan() }
                guard let connection = try ReaderPool.beginSnapshot(reader, now: commitCount) else {
                    return try context.performInSnapshot { try body(context) }  // in memory: the writer's connection
                }
                return try context.inSnapshot(on: connection) { try body(context) }
            }
        }
    }

    private func pooledContext(for reader: ReaderPool.Reader) -> ManagedObjectContext {
        let context = ManagedObjectContext(coordinator: self, name: "read-\(reader.number)", readsThroughWriter: false, ownedByCoordinator: true)
        reader.context = context
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
