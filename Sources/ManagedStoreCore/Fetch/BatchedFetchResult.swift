/// A long fetch result walked a batch at a time, holding only the objects' IDs and the batch in
/// use [the array a fetch with `fetchBatchSize` returns in Core Data]. Made by
/// `ManagedObjectContext.fetchBatched(_:)`; use it on the context's queue, like its objects.
///
/// Reading element `i` makes the objects of its batch (or finds them registered) and reads
/// their rows in one query; the batch is kept until an element of another batch is read. With
/// `retainsRegisteredObjects = false` on the context, a walk through a million objects holds
/// one batch of them at a time (`fetch(_:)` with a batch size makes every object up front, only
/// reading the rows by batch).
public final class BatchedFetchResult: RandomAccessCollection {
    /// The result, in order: permanent IDs of saved objects, temporary ones of unsaved inserts.
    public let objectIDs: [ManagedObjectID]
    public let batchSize: Int
    private let context: ManagedObjectContext
    private let request: FetchRequest
    private var current: (batch: Int, objects: [ManagedObject])?

    init(context: ManagedObjectContext, objectIDs: [ManagedObjectID], request: FetchRequest) {
        self.context = context
        self.objectIDs = objectIDs
        self.batchSize = request.fetchBatchSize
        self.request = request
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { objectIDs.count }

    /// The object at `position`, its batch read if it is not the current one. A store failure
    /// stops the program, as a fault's would: use `object(at:)` to handle it.
    public subscript(position: Int) -> ManagedObject {
        do { return try object(at: position) } catch {
            preconditionFailure("ManagedStore could not read batch \(position / batchSize) of a fetch: \(error)")
        }
    }

    /// The object at `position`, or the error reading its batch.
    public func object(at position: Int) throws(FetchError) -> ManagedObject {
        context.assertOnQueue()
        // As an Array subscript does: an index out of range is the caller's bug, not the store's state.
        precondition(indices.contains(position), "index \(position) is out of the result's \(count) objects")
        let batch = position / batchSize
        if let current, current.batch == batch { return current.objects[position - batch * batchSize] }
        let ids = objectIDs[batch * batchSize..<Swift.min((batch + 1) * batchSize, objectIDs.count)]
        let objects = try context.objectsReadTogether(Array(ids), request: request)
        current = (batch, objects)
        return objects[position - batch * batchSize]
    }
}

extension ManagedObjectContext {
    /// The objects matching `request` (whose `fetchBatchSize` must be above 0), as a collection
    /// that makes them and reads their rows a batch at a time as it is walked. Pending changes
    /// count as for `fetch(_:)`; the IDs are found when this is called.
    public func fetchBatched(_ request: FetchRequest) throws(FetchError) -> BatchedFetchResult {
        assertOnQueue()
        guard request.fetchBatchSize > 0 else { throw .invalidRequest("fetchBatched needs a fetchBatchSize above 0") }
        let prepared = try prepare(request)
        return BatchedFetchResult(context: self, objectIDs: try objectIDs(prepared), request: request)
    }

    /// The objects of `ids`, registered ones as they are, with the rows of those not yet read
    /// read in one question to the store (or the parent).
    func objectsReadTogether(_ ids: [ManagedObjectID], request: FetchRequest) throws(FetchError) -> [ManagedObject] {
        let objects = ids.map { id in lookupIncludingAliases(id) ?? makeFault(id) }
        let waiting = objects.filter { $0.isFault && $0.prefetchedRow == nil }
        do { try readTogether(waiting, prefetching: request.relationshipKeyPathsForPrefetching) } catch { throw Self.fetchError(error) }
        if !request.returnsObjectsAsFaults { for object in objects { object.fireFaultIfNeeded() } }
        return objects
    }
}
