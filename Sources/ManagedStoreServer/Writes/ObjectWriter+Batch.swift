import ManagedStoreCore

// The batch writes of the contract: many inserts in one save (a JSON array, or one chunk of
// an NDJSON stream), and the library's batch update and delete for `?where=`.

extension ObjectWriter {
    /// Inserts every body in one save; answers each object's ID in the order given (an insert
    /// that a uniqueness resolution folded into a stored object answers that object's ID).
    /// `objectNames` name the objects in a 422 (`item 3`, `line 17`).
    func batchInsert(_ entity: String, _ bodies: [ObjectBody], names objectNames: [String]) throws -> (ids: [ManagedObjectID], saved: SavedChanges) {
        var applied: [(ObjectBody, ManagedObject, Bool)] = []
        var objects: [ManagedObject] = []
        objects.reserveCapacity(bodies.count)
        for (body, name) in zip(bodies, objectNames) {
            let object = context.insertNewObject(forEntityName: entity)
            names.name(object.objectID, name)
            names.noteSets(object.objectID, body.propertyNames)
            try apply(body, to: object, replace: false, refs: [:], into: &applied)
            objects.append(object)
        }
        try reportErrors(of: applied)
        let temporaryIDs = objects.map(\.objectID)
        let saved = try save()
        return (zip(objects, temporaryIDs).map { object, temporary in saved.mergedInserts[temporary] ?? object.objectID }, saved)
    }

    /// `PATCH /v1/objects/{Entity}?where=P`: the number of objects matched (all of them
    /// updated), and what the save changed.
    func batchUpdate(_ entity: String, predicate: ObjectPredicate, values: [String: PropertyValue]) throws -> (count: Int, saved: SavedChanges) {
        try runBatch(entity) { () throws(BatchError) in try context.execute(BatchUpdateRequest(entityName: entity, predicate: predicate, propertiesToUpdate: values)) }
    }

    /// `DELETE /v1/objects/{Entity}?where=P`: the number of objects matched (all of them deleted,
    /// with their cascades), and what the save changed.
    func batchDelete(_ entity: String, predicate: ObjectPredicate) throws -> (count: Int, saved: SavedChanges) {
        try runBatch(entity) { () throws(BatchError) in try context.execute(BatchDeleteRequest(entityName: entity, predicate: predicate)) }
    }

    private func runBatch(_ entity: String, _ body: () throws(BatchError) -> BatchResult) throws -> (count: Int, saved: SavedChanges) {
        do throws(BatchError) {
            let result = try body()
            return (result.count, result.changes)
        } catch {
            switch error {
            case .save(let saveError): throw Failure(problem: problem(for: saveError))
            case .fetch(let fetchError): throw Failure(problem: .fetch(fetchError, entity: entity))
            case .unknownEntity(let name): throw Failure(problem: .unknownEntity(name))
            case let .unknownProperty(name, entity): throw Failure(problem: .unknownProperty(entity, name))
            case .invalidRequest(let detail): throw Failure(problem: .badRequest(detail))
            }
        }
    }
}
