// Running batch requests (BatchRequests.swift): each one on a private context of its own, on
// the caller's thread, in chunks that are saved and forgotten one after the other, all inside
// one transaction.

extension ManagedObjectContext {
    /// Inserts the request's objects; nothing is inserted if any of them is refused.
    public func execute(_ request: BatchInsertRequest) throws(BatchError) -> BatchResult {
        assertOnQueue()
        let entity = try batchEntity(request.entityName)
        guard !entity.isAbstract else { throw .invalidRequest("\(entity.name) is abstract: insert objects of one of its sub-entities") }
        try checkChunkSize(request.chunkSize)
        var next: () -> [String: PropertyValue]?
        switch request.source {
        case .objects(let list):
            var iterator = list.makeIterator()
            next = { iterator.next() }
        case .generator(let generator):
            next = generator
        }
        return try runBatch { scratch throws(BatchError) in
            var changes = BatchChanges()
            var ids: [ManagedObjectID] = []
            var count = 0
            var exhausted = false
            while !exhausted {
                var inserted: [ManagedObject] = []
                var refused: [ValidationError] = []
                while inserted.count < request.chunkSize {
                    guard let values = next() else { exhausted = true; break }
                    let object = scratch.insertNewObject(forEntityName: entity.name)
                    try scratch.setBatchValues(values, on: object, entity: entity, refused: &refused)
                    inserted.append(object)
                }
                guard !inserted.isEmpty else { break }
                let temporaryIDs = inserted.map(\.objectID)
                let saved = try scratch.saveBatchChunk(policy: request.mergePolicy, refused: refused)
                if request.resultType == .objectIDs {
                    for (object, temporary) in zip(inserted, temporaryIDs) {
                        ids.append(saved.mergedInserts[temporary] ?? object.objectID)
                    }
                }
                changes.add(saved)
                count += inserted.count
                scratch.reset()
                request.progress?(count)
            }
            return BatchResult(count: count, objectIDs: request.resultType == .objectIDs ? ids : nil, changes: changes.total)
        }
    }

    /// Sets the request's values on every matching object; nothing changes if any object
    /// would become invalid.
    public func execute(_ request: BatchUpdateRequest) throws(BatchError) -> BatchResult {
        assertOnQueue()
        let entity = try batchEntity(request.entityName)
        try checkChunkSize(request.chunkSize)
        for name in request.propertiesToUpdate.keys where entity.attribute(named: name) == nil && entity.relationship(named: name) == nil {
            throw .unknownProperty(name, entity: entity.name)
        }
        return try runBatch { scratch throws(BatchError) in
            let matched = try scratch.batchMatches(entity, request.predicate)
            var changes = BatchChanges()
            for chunk in matched.chunked(request.chunkSize) {
                var refused: [ValidationError] = []
                for id in chunk {
                    try scratch.setBatchValues(request.propertiesToUpdate, on: scratch.object(with: id), entity: entity, refused: &refused)
                }
                changes.add(try scratch.saveBatchChunk(policy: .error, refused: refused))
                scratch.reset()
            }
            return BatchResult(count: matched.count, objectIDs: request.resultType == .objectIDs ? matched : nil, changes: changes.total)
        }
    }

    /// Deletes every matching object under the model's delete rules; nothing is deleted if a
    /// `deny` rule refuses one of them.
    public func execute(_ request: BatchDeleteRequest) throws(BatchError) -> BatchResult {
        assertOnQueue()
        let entity = try batchEntity(request.entityName)
        try checkChunkSize(request.chunkSize)
        return try runBatch { scratch throws(BatchError) in
            let matched = try scratch.batchMatches(entity, request.predicate)
            var changes = BatchChanges()
            for chunk in matched.chunked(request.chunkSize) {
                for id in chunk {
                    // A cascade from an earlier chunk may have deleted it already.
                    guard let object = try? scratch.existingObject(with: id) else { continue }
                    scratch.delete(object)
                }
                changes.add(try scratch.saveBatchChunk(policy: .error, refused: []))
                scratch.reset()
            }
            return BatchResult(count: matched.count, objectIDs: request.resultType == .objectIDs ? matched : nil, changes: changes.total)
        }
    }

    // MARK: Running

    private func batchEntity(_ name: String) throws(BatchError) -> EntityDescription {
        guard let entity = coordinator.model.entity(named: name) else { throw .unknownEntity(name) }
        return entity
    }

    private func checkChunkSize(_ size: Int) throws(BatchError) {
        guard size >= 1 else { throw .invalidRequest("chunkSize must be at least 1, not \(size)") }
    }

    /// Runs `body` on a new private context, on this thread, inside one transaction: the group
    /// commit this context runs (on a write queue), in a savepoint of its own, or a transaction
    /// of its own otherwise. The private context reads through the writer, so each chunk sees
    /// what the chunks before it wrote.
    private func runBatch<T>(_ body: (ManagedObjectContext) throws(BatchError) -> T) throws(BatchError) -> T {
        let scratch = ManagedObjectContext(coordinator: coordinator, name: name, readsThroughWriter: true)
        scratch.author = author
        do {
            return try RunningContext.run(scratch) {
                if let group = activeGroup {
                    // The scratch context saves into this context's group, in one savepoint.
                    scratch.activeGroup = group
                    defer { scratch.activeGroup = nil }
                    return try group.inAtomicSection { () throws -> T in try body(scratch) }
                }
                return try coordinator.performGroupCommit(in: scratch) { () throws -> T in try body(scratch) }
            }
        } catch {
            if let error = error as? BatchError { throw error }
            throw .save(.store(StoreError(wrapping: error)))
        }
    }

    /// The IDs of the objects the predicate matches, read through the writer (this transaction).
    private func batchMatches(_ entity: EntityDescription, _ predicate: ObjectPredicate?) throws(BatchError) -> [ManagedObjectID] {
        do { return try fetchObjectIDs(FetchRequest(entityName: entity.name, predicate: predicate)) } catch {
            throw .fetch(error)
        }
    }

    /// Saves one chunk. Values that could not even be set (`refused`) fail it with every other
    /// broken rule of the chunk, as a save would list them.
    private func saveBatchChunk(policy: MergePolicy, refused: [ValidationError]) throws(BatchError) -> SavedChanges {
        if !refused.isEmpty {
            let settled = Set(refused.map { "\($0.objectID)\u{0}\($0.property ?? "")" })
            let others = validatePendingChanges().filter { !settled.contains("\($0.objectID)\u{0}\($0.property ?? "")") }
            throw .save(.validation(refused + others))
        }
        do throws(SaveError) { return try save(mergePolicy: policy) } catch { throw .save(error) }
    }

    /// Sets each value on `object`. A value of the wrong kind for its property (an attribute
    /// value for a relationship, an object that does not exist) is not set but added to
    /// `refused`; an attribute of the wrong type is set and reported by validation.
    private func setBatchValues(_ values: [String: PropertyValue], on object: ManagedObject, entity: EntityDescription,
                                refused: inout [ValidationError]) throws(BatchError) {
        for (name, value) in values {
            if entity.attribute(named: name) != nil {
                guard case .attribute(let attribute) = value else {
                    refused.append(ValidationError(objectID: object.objectID, property: name, code: .invalidType,
                                                   message: "\(name) is an attribute: give it a value, not objects"))
                    continue
                }
                object.setAttributeValue(attribute, forKey: name)
            } else if let relationship = entity.relationship(named: name) {
                switch (value, relationship.isToMany) {
                case (.object(let id), false):
                    guard let id else { object.setObject(nil, forKey: name); continue }
                    if let target = batchDestination(id, of: object, relationship, refused: &refused) { object.setObject(target, forKey: name) }
                case (.objects(let ids), true):
                    let targets = ids.compactMap { batchDestination($0, of: object, relationship, refused: &refused) }
                    if targets.count == ids.count { object.setObjects(targets, forKey: name) }
                default:
                    let kind = relationship.isToMany ? "a list of object IDs" : "one object ID or none"
                    refused.append(ValidationError(objectID: object.objectID, property: name, code: .invalidType,
                                                   message: "\(name) is a relationship: give it \(kind)"))
                }
            } else {
                throw .unknownProperty(name, entity: entity.name)
            }
        }
    }

    /// The saved object `id` as a destination of `relationship`, or nil (and a refusal) when it
    /// is of another entity, not saved or missing.
    private func batchDestination(_ id: ManagedObjectID, of owner: ManagedObject, _ relationship: RelationshipDescription,
                                  refused: inout [ValidationError]) -> ManagedObject? {
        guard coordinator.isValid(id), coordinator.model.isKind(named: id.entityName, of: relationship.destination) else {
            refused.append(.wrongEntity(of: owner.objectID, relationship.name, target: id, expected: relationship.destination))
            return nil
        }
        guard !id.isTemporaryID, let target = try? existingObject(with: id) else {
            refused.append(.invalidDestination(of: owner.objectID, relationship.name, target: id))
            return nil
        }
        return target
    }
}

/// The saves of a batch's chunks, added up into one `SavedChanges`.
private struct BatchChanges {
    var inserted: [ManagedObjectID] = []
    var updated: Set<ManagedObjectID> = []
    var deleted: [ManagedObjectID] = []
    var token: PersistentHistoryToken?

    mutating func add(_ saved: SavedChanges) {
        inserted += saved.inserted
        updated.formUnion(saved.updated)
        deleted += saved.deleted
        token = saved.token ?? token
    }

    var total: SavedChanges {
        // A later chunk may delete what an earlier one updated (through an inverse).
        let gone = Set(deleted)
        return SavedChanges(inserted: inserted, updated: updated.subtracting(gone).sortedByEntityAndKey(),
                            deleted: deleted.sortedByEntityAndKey(), token: token)
    }
}

extension Array {
    /// Consecutive slices of at most `size` elements.
    package func chunked(_ size: Int) -> [ArraySlice<Element>] {
        stride(from: 0, to: count, by: size).map { self[$0..<Swift.min($0 + size, count)] }
    }
}
