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
        if prepared.fetch.acrossKinds { return try aggregateAcrossKinds(prepared) }
        do {
            return try readStore { session in try session.aggregate(prepared, tuning: fetchTuning) }
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
        } catch {
            throw .fetch(error)
        }
        return try PreparedAggregate(request, fetch: fetch, model: coordinator.model, storeIdentifier: coordinator.storeIdentifier)
    }

    /// An aggregate of an entity with sub-entities: its saved objects of every kind, fetched,
    /// then grouped and computed in memory with the store's results (`InMemoryAggregate`, what
    /// the PostgreSQL store runs too).
    private func aggregateAcrossKinds(_ prepared: PreparedAggregate) throws(AggregateError) -> [AggregateGroup] {
        var stored = FetchRequest(entityName: prepared.fetch.entity.name, predicate: prepared.fetch.request.predicate)
        stored.timeout = prepared.fetch.request.timeout
        let objects: [ManagedObject]
        do throws(FetchError) {
            objects = try savedObjectsAcrossKinds(stored, of: prepared.fetch.entity, reading: prepared.entitiesRead, for: "aggregates")
        } catch {
            throw .fetch(error)
        }
        return try InMemoryAggregate(graph: ContextGraph(context: self), model: coordinator.model).groups(prepared, candidates: objects)
    }
}
