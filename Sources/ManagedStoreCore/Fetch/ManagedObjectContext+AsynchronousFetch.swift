// Running an asynchronous fetch: one turn on the context's queue per page. A page is read by
// keyset (the sort values and key of the last object found so far), so pages neither skip nor
// repeat objects, and each turn costs the same however deep into the result it is.

extension ManagedObjectContext {
    /// Starts `request` and returns at once [execute(_:) with an NSAsynchronousFetchRequest].
    /// `progress` is called after each page and `completion` once at the end, both on the
    /// context's queue; the objects handed to `completion` are faults read a batch at a time
    /// (`fetchBatchSize`, or the page size when it is 0). Callable from any thread.
    @discardableResult
    public func execute(_ request: AsynchronousFetchRequest, progress: (@Sendable (FetchProgress) -> Void)? = nil,
                        completion: @escaping @Sendable (Result<[ManagedObject], FetchError>) -> Void) -> AsynchronousFetch {
        let handle = AsynchronousFetch()
        let batchSize = request.fetchRequest.fetchBatchSize > 0 ? request.fetchRequest.fetchBatchSize : request.pageSize
        AsynchronousFetchRun(context: self, request: request, handle: handle, progress: progress) { context, result in
            completion(result.flatMap { ids in
                Result { () throws(FetchError) in try context.batchedFaults(for: ids, batchSize: batchSize, request: request.fetchRequest) }
            })
        }.schedule()
        return handle
    }

    /// The IDs of the objects matching `request`, read a page at a time on the context's queue;
    /// cancelling the calling task stops the fetch with `FetchError.cancelled`. `progress` is
    /// called on the context's queue after each page.
    public func fetchObjectIDs(_ request: AsynchronousFetchRequest,
                               progress: (@Sendable (FetchProgress) -> Void)? = nil) async throws(FetchError) -> [ManagedObjectID] {
        let handle = AsynchronousFetch()
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<[ManagedObjectID], FetchError>, Never>) in
                AsynchronousFetchRun(context: self, request: request, handle: handle, progress: progress) { _, result in
                    continuation.resume(returning: result)
                }.schedule()
            }
        } onCancel: {
            handle.cancel()
        }
        return try result.get()
    }
}

/// The state of one asynchronous fetch between its turns.
///
/// `@unchecked Sendable`: it is handed to the context's queue from the caller's thread once,
/// and from then on touched only in its own turns on that queue, one after another.
final class AsynchronousFetchRun: @unchecked Sendable {
    typealias Completion = (ManagedObjectContext, Result<[ManagedObjectID], FetchError>) -> Void

    private let context: ManagedObjectContext
    private let request: AsynchronousFetchRequest
    private let handle: AsynchronousFetch
    private let progress: (@Sendable (FetchProgress) -> Void)?
    private let completion: Completion

    private var prepared: PreparedFetch?
    private var found: [ManagedObjectID] = []
    private var total = 0
    /// For a context that reads a store that keeps snapshots: a snapshot of the fetch's own, from
    /// the first turn to the last, and the fetch's keys read from it a page per turn. The store
    /// sorts once, and every page sees the same snapshot.
    private var snapshot: (any StoreSnapshot)?
    private var stream: (any StoreKeyStream)?
    /// Otherwise (an in-memory store, a context reading through the writer or pinned to a
    /// query generation): each page is a query of its own, after this cursor, skipping
    /// `offset` objects (the request's own offset, on the first page only), for at most
    /// `remaining` objects.
    private var next: FetchCursor?
    private var offset = 0
    private var remaining = Int.max
    /// The result was read whole, unsaved changes counted (a child context asks its parent once).
    private var answeredWhole = false

    init(context: ManagedObjectContext, request: AsynchronousFetchRequest, handle: AsynchronousFetch,
         progress: (@Sendable (FetchProgress) -> Void)?, completion: @escaping Completion) {
        self.context = context
        self.request = request
        self.handle = handle
        self.progress = progress
        self.completion = completion
    }

    /// Queues the next turn.
    func schedule() {
        context.queue.async { self.context.runBlock { self.turn() } }
    }

    private func turn() {
        guard !handle.isCancelled else { return finish(.failure(.cancelled)) }
        do throws(FetchError) {
            let prepared: PreparedFetch
            if let begun = self.prepared { prepared = begun } else { prepared = try begin() }
            let before = found.count
            let more = try readPage(prepared)
            if found.count > before { report(FetchProgress(completedCount: found.count, totalCount: max(total, found.count))) }
            if more { return schedule() }
            // The context's own unsaved changes count as they stand now, at the end: with any
            // that touch the fetched entities, the fetch runs once more with them, in the same
            // snapshot, exactly as `fetchObjectIDs(_:)` would (rare for a long read).
            if !answeredWhole && prepared.request.includesPendingChanges && context.hasPendingChanges(in: prepared.entitiesRead) {
                found = try inSnapshot { () throws(FetchError) in try context.objectIDs(prepared) }
            }
            let final = FetchProgress(completedCount: found.count, totalCount: found.count)
            if handle.progress != final { report(final) }
            finish(.success(found))
        } catch {
            finish(.failure(error))
        }
    }

    /// The first turn: checks the request, takes the snapshot, counts the result and prepares
    /// the statement.
    private func begin() throws(FetchError) -> PreparedFetch {
        guard request.pageSize > 0 else { throw .invalidRequest("the page size of an asynchronous fetch must be at least 1") }
        let prepared = try context.prepare(request.fetchRequest)
        next = request.fetchRequest.after
        offset = request.fetchRequest.fetchOffset
        remaining = request.fetchRequest.fetchLimit > 0 ? request.fetchRequest.fetchLimit : Int.max
        if context.parent == nil && context.pinnedGeneration == nil && !context.readsThroughWriter && !prepared.acrossKinds,
           let snapshot = context.coordinator.store.makeSnapshot() {
            self.snapshot = snapshot
            stream = try snapshot.openKeyStream(context.storeFetch(prepared, limit: request.fetchRequest.fetchLimit, offset: offset))
        }
        total = try inSnapshot { () throws(FetchError) in try context.count(for: request.fetchRequest) }
        report(FetchProgress(completedCount: 0, totalCount: total))
        self.prepared = prepared
        return prepared
    }

    /// Reads one page into `found`; false when the result is complete.
    private func readPage(_ prepared: PreparedFetch) throws(FetchError) -> Bool {
        if let stream {
            let entity = prepared.entity.name, store = context.coordinator.storeIdentifier
            let keys = try stream.next(request.pageSize)
            found += keys.map { ManagedObjectID(storeIdentifier: store, entityName: entity, key: .permanent($0)) }
            return keys.count == request.pageSize
        }
        if context.parent != nil || prepared.acrossKinds {
            // A child's result comes from its parent, which holds no snapshot to page through;
            // an entity with sub-entities merges its kinds' fetches (KindsFetch): one turn each.
            found = try context.objectIDs(prepared)
            answeredWhole = true
            return false
        }
        var page = prepared
        page.after = next
        let size = min(request.pageSize, remaining)
        let (ids, last) = try context.storedPage(page, limit: size, offset: offset)
        found += ids
        offset = 0
        remaining -= ids.count
        next = last
        return ids.count == size && remaining > 0
    }

    /// Runs `body` with the context reading the fetch's snapshot, when it has one.
    private func inSnapshot<T>(_ body: () throws(FetchError) -> T) throws(FetchError) -> T {
        guard let snapshot else { return try body() }
        do {
            return try snapshot.read { session in try context.inSnapshot(on: session) { () throws(FetchError) in try body() } }
        } catch {
            if let fetchError = error as? FetchError { throw fetchError }
            throw .store(StoreError(wrapping: error))
        }
    }

    private func report(_ now: FetchProgress) {
        handle.report(now)
        progress?(now)
    }

    private func finish(_ result: Result<[ManagedObjectID], FetchError>) {
        // Ends the snapshot: the store may let go of what it kept for it.
        stream = nil
        snapshot = nil
        completion(context, result)
    }
}

extension ManagedObjectContext {
    /// Saved matches of `prepared` (its cursor, predicate and order; pending changes not
    /// counted): at most `limit` after skipping `offset`, and the cursor after the last of them.
    func storedPage(_ prepared: PreparedFetch, limit: Int, offset: Int) throws(FetchError) -> ([ManagedObjectID], FetchCursor?) {
        let rows = try readFetch(storeFetch(prepared, limit: limit, offset: offset)) { session, fetch throws(FetchError) in
            try session.fetchKeysAndSortValues(fetch)
        }
        let entity = prepared.entity.name, store = coordinator.storeIdentifier
        let ids = rows.map { ManagedObjectID(storeIdentifier: store, entityName: entity, key: .permanent($0.0)) }
        let cursor = rows.last.map {
            FetchCursor(fingerprint: FetchCursor.fingerprint(entity: entity, sorts: prepared.request.sortDescriptors), values: $0.1, primaryKey: $0.0)
        }
        return (ids, cursor)
    }
}
