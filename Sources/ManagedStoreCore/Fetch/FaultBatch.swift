// Fetch batch size [NSFetchRequest.fetchBatchSize]: a fetch with a batch size reads only the
// matching objects' keys, and hands back data-less faults grouped in batches. The first fault of
// a batch to fire reads the rows of its whole batch in one query; the others find their row
// waiting, like the faults of an ordinary fetch. Walking a long result therefore reads the store
// one batch at a time, and holds rows only for the batches walked so far.

/// The objects of one batch of a batched fetch, by ID (not by reference: a batch must not keep
/// objects alive that the caller and the context have let go).
final class FaultBatch {
    let objectIDs: [ManagedObjectID]
    /// `relationshipKeyPathsForPrefetching` of the request, applied to each batch as it loads.
    let prefetching: [String]

    init(objectIDs: [ManagedObjectID], prefetching: [String]) {
        self.objectIDs = objectIDs
        self.prefetching = prefetching
    }
}

extension ManagedObjectContext {
    /// `fetch(_:)` with a batch size: the matching objects, in order, as faults in batches of
    /// `batchSize`; the first batch is read at once.
    func fetchInBatches(_ prepared: PreparedFetch, batchSize: Int) throws(FetchError) -> [ManagedObject] {
        try batchedFaults(for: try objectIDs(prepared), batchSize: batchSize, request: prepared.request)
    }

    /// The objects of `ids`, in order: registered ones as they are, the rest as faults in
    /// batches of `batchSize`, the first batch read now.
    func batchedFaults(for ids: [ManagedObjectID], batchSize: Int, request: FetchRequest) throws(FetchError) -> [ManagedObject] {
        let objects = ids.map { id in lookupIncludingAliases(id) ?? makeFault(id) }
        var start = 0
        while start < objects.count {
            let end = min(start + batchSize, objects.count)
            // Only data-less faults need the batch: inserted, loaded or prefetched objects do not.
            let members = objects[start..<end].filter { $0.isFault && $0.prefetchedRow == nil }
            if !members.isEmpty {
                let batch = FaultBatch(objectIDs: members.map(\.objectID), prefetching: request.relationshipKeyPathsForPrefetching)
                for object in members { object.faultBatch = batch }
            }
            start = end
        }
        // The first batch is read now, as Core Data does: most callers look at it straight away.
        if let first = objects.first, let batch = first.faultBatch {
            do { try loadBatch(batch) } catch { throw Self.fetchError(error) }
        }
        if !request.returnsObjectsAsFaults {
            for object in objects.prefix(batchSize) { object.fireFaultIfNeeded() }
        }
        return objects
    }

    /// Reads the rows of every member of `batch` still waiting for one (from the parent, in a
    /// child context). A member whose row is gone turns inaccessible, as any fault would.
    func loadBatch(_ batch: FaultBatch) throws(ContextError) {
        var waiting: [ManagedObject] = []
        for id in batch.objectIDs {
            guard let object = lookup(id), object.faultBatch === batch else { continue }
            object.faultBatch = nil
            if object.isFault && object.prefetchedRow == nil { waiting.append(object) }
        }
        try readTogether(waiting, prefetching: batch.prefetching)
    }

    /// Gives each of `faults` (data-less, of one fetch) its row, with one question to the store
    /// or the parent, and prefetches the `prefetching` relationships for all of them.
    func readTogether(_ faults: [ManagedObject], prefetching: [String]) throws(ContextError) {
        guard !faults.isEmpty else { return }
        if parent != nil {
            try loadFaultsFromParent(faults)
        } else {
            try loadRows(of: faults)
        }
        if !prefetching.isEmpty, let entity = faults.first?.entity {
            // Failing here only costs speed: the relationships then load one fault at a time.
            try? prefetch(prefetching, of: faults, entity: entity)
        }
    }

    /// Gives each object (all saved, of one fetch) its row, read in one snapshot.
    private func loadRows(of objects: [ManagedObject]) throws(ContextError) {
        let byEntity = Dictionary(grouping: objects, by: { $0.entity.index })
        do {
            try readStore { session in
                for (_, group) in byEntity {
                    let rows = try session.rows(of: group[0].entity, keys: group.compactMap(\.objectID.primaryKey))
                    try noteDestinationKinds(of: rows.values, entity: group[0].entity, session: session)
                    for object in group where object.isFault {
                        if let row = object.objectID.primaryKey.flatMap({ rows[$0] }) { object.prefetchedRow = row } else { markInaccessible(object) }
                    }
                }
            }
        } catch {
            throw .store(StoreError(wrapping: error))
        }
    }
}
