// Running aggregate requests: checked against the model here (PreparedAggregate), answered by
// the store (the SQLite store: SQLiteAggregate.swift).

extension ManagedObjectContext {
    /// The groups `request` asks for, read from the store [executing an NSFetchRequest with
    /// NSDictionaryResultType, propertiesToGroupBy and havingPredicate].
    ///
    /// Like dictionary results, it reads what is saved: this context's unsaved inserts, updates
    /// and deletes are not seen (save first, as with Core Data). Every constant of the
    /// predicates is bound as an SQL parameter.
    public func aggregate(_ request: AggregateRequest) throws(AggregateError) -> [AggregateGroup] {
        assertOnQueue()
        let prepared = try prepare(request)
        do {
            return try readStore { session in try session.aggregate(prepared) }
        } catch let error as AggregateError {
            throw error
        } catch {
            throw .fetch(.store(StoreError(wrapping: error)))
        }
    }

    package func prepare(_ request: AggregateRequest) throws(AggregateError) -> PreparedAggregate {
        var fetchRequest = FetchRequest(entityName: request.entityName, predicate: request.predicate,
                                        fetchLimit: request.fetchLimit, fetchOffset: request.fetchOffset)
        fetchRequest.timeout = request.timeout
        let fetch: PreparedFetch
        do throws(FetchError) {
            fetch = try prepare(fetchRequest)
            try fetch.refuseAcrossKinds("aggregates")
        } catch {
            throw .fetch(error)
        }
        return try PreparedAggregate(request, fetch: fetch, model: coordinator.model, storeIdentifier: coordinator.storeIdentifier)
    }
}
