// A child context's fetches: the parent answers what the store answers for a root context,
// with its own unsaved changes (and its parent chain's) in; the child then applies its own
// pending changes as a root does (`fetchIncludingPendingChanges`). The parent runs the
// request on its queue, with the same predicate, order, cursor and window, and hands back
// object IDs only; the child's objects are faults that ask the parent when used, unless the
// fetch needs their values at once, and then one question fills them all.

extension ManagedObjectContext {
    /// The request the parent runs for this child: the same entity, predicate (none when the
    /// child checks every object itself), order and cursor, the window given, the parent's
    /// unsaved changes included (they are this child's "store"), object IDs only.
    private func requestForParent(_ prepared: PreparedFetch, limit: Int, offset: Int) -> FetchRequest {
        var request = prepared.request
        if prepared.predicate == nil { request.predicate = nil }
        request.after = prepared.after
        request.fetchLimit = limit
        request.fetchOffset = offset
        request.includesPendingChanges = true
        request.relationshipKeyPathsForPrefetching = []
        request.resultType = .managedObjectIDs
        return request
    }

    /// The IDs of the objects the parent finds for `prepared`, in its order, as this context
    /// knows them (`canonicalID`).
    func objectIDsFromParent(_ prepared: PreparedFetch, limit: Int, offset: Int) throws(FetchError) -> [ManagedObjectID] {
        let request = requestForParent(prepared, limit: limit, offset: offset)
        return try askParent(throwing: { parent throws(FetchError) in try parent.fetchObjectIDs(request) }).map(canonicalID)
    }

    /// How many objects the parent finds for `prepared`, within the request's window.
    func countFromParent(_ prepared: PreparedFetch) throws(FetchError) -> Int {
        let request = requestForParent(prepared, limit: prepared.request.fetchLimit, offset: prepared.request.fetchOffset)
        return try askParent(throwing: { parent throws(FetchError) in try parent.count(for: request) })
    }

    /// The objects the parent finds for `prepared`: those this context holds, and faults for
    /// the others (filled at once when the request wants objects, or their relationships, now).
    func fetchThroughParent(_ prepared: PreparedFetch, limit: Int, offset: Int) throws(FetchError) -> [ManagedObject] {
        let ids = try objectIDsFromParent(prepared, limit: limit, offset: offset)
        let objects = ids.map { lookup($0) ?? makeFault($0) }
        if !prepared.request.returnsObjectsAsFaults || !prepared.request.relationshipKeyPathsForPrefetching.isEmpty {
            try loadFaultsThroughParent(objects)
        }
        return objects
    }

    /// Fills the faults among `objects` from the parent, in one question.
    func loadFaultsThroughParent(_ objects: [ManagedObject]) throws(FetchError) {
        do { try loadFaultsFromParent(objects) } catch { throw Self.fetchError(error) }
    }

    /// `relationshipKeyPathsForPrefetching` in a child: relationship `r` of every owner, from
    /// the parent in one question, with this context's own changes applied.
    func prefetchThroughParent(relationship r: Int, of owners: [ManagedObject]) throws(FetchError) {
        let ids = owners.map(\.objectID)
        let destinations: [[ManagedObjectID]]
        do {
            destinations = try askParent(throwing: { parent throws(ContextError) in try parent.destinationsForChild(ids, relationship: r) })
        } catch {
            throw Self.fetchError(error)
        }
        for (owner, stored) in zip(owners, destinations) { setLoadedRelationship(of: owner, r, stored: stored.map(canonicalID)) }
    }

    /// A parent's failure to read an object, as the fetch's error.
    static func fetchError(_ error: ContextError) -> FetchError {
        if case .store(let storeError) = error { return .store(storeError) }
        return .invalidRequest(error.description)  // not thrown by the parent's reads; kept honest
    }
}
