/// The saved state of one object, read in place from the store's row: what a caller that only
/// serializes an object (to JSON, say) needs, without making a managed object for it.
///
/// It is lent to the closure of `ManagedObjectContext.withStoredObject(_:_:)` and is valid only
/// there: it reads the columns of a statement that is reset when the closure returns. Being
/// noncopyable and lent `borrowing`, it cannot be kept past the closure.
public struct StoredObjectRow: ~Copyable {
    public let objectID: ManagedObjectID
    let source: any StoredRowSource
    let entity: Entity
    let coordinator: PersistentStoreCoordinator
    /// The read the row is lent from: where the kind of a parent entity's destination is read.
    let session: any StoreReadSession

    /// The row's version: 1 when inserted, one more on every saved change (`ManagedObject.version`).
    public var version: Int64 { source.version }

    /// The value of the attribute at `index` in `EntityDescription.attributes`.
    public func value(ofAttributeAt index: Int) -> AttributeValue { source.value(ofAttributeAt: index) }

    /// Writes the value of the attribute at `index` as `JSONWriter.write(_:)` writes
    /// `value(ofAttributeAt:)`, reading text and numbers straight from the row.
    public func writeJSON(ofAttributeAt index: Int, into writer: inout JSONWriter) {
        source.writeJSON(ofAttributeAt: index, into: &writer)
    }

    /// The destination of the to-one relationship at `index` in `EntityDescription.relationships`,
    /// or nil when it has none.
    public func destination(ofToOneAt index: Int) throws -> ManagedObjectID? {
        precondition(!entity.relationships[index].isToMany, "\(entity.name).\(entity.relationships[index].name) is to-many")
        if let stored = source.storedForeignKey(ofRelationship: index) { return try stored.map { try destinationID(index, $0) } }
        // The other side holds the key (a one-to-one whose inverse owns it).
        var found: Int64?
        try source.forEachDestinationKey(ofRelationship: index) { found = $0 }
        return try found.map { try destinationID(index, $0) }
    }

    /// Calls `body` with each destination of the to-many relationship at `index`, in key order
    /// (an ordered relationship: in its order).
    public func forEachDestination(ofToManyAt index: Int, _ body: (ManagedObjectID) throws -> Void) throws {
        precondition(entity.relationships[index].isToMany, "\(entity.name).\(entity.relationships[index].name) is to-one")
        let destination = coordinator.model.schema[entity.relationships[index].destinationIndex]
        guard destination.isSingleKind else {
            // Keys first, then their kinds in one read, then the IDs in the stored order.
            var keys: [Int64] = []
            try source.forEachDestinationKey(ofRelationship: index) { keys.append($0) }
            for id in try coordinator.destinationIDs.ids(keys, of: destination, session: session) { try body(id) }
            return
        }
        try source.forEachDestinationKey(ofRelationship: index) { try body(destinationID(index, $0)) }
    }

    private func destinationID(_ index: Int, _ pk: Int64) throws -> ManagedObjectID {
        let destination = coordinator.model.schema[entity.relationships[index].destinationIndex]
        guard destination.isSingleKind else { return try coordinator.destinationIDs.ids([pk], of: destination, session: session)[0] }
        return ManagedObjectID(storeIdentifier: coordinator.storeIdentifier, entityName: destination.name, key: .permanent(pk))
    }
}

extension ManagedObjectContext {
    /// Reads the saved state of the object `id` straight from the store and lends it to `body`,
    /// without registering a managed object; nil when the store has no such object (a
    /// temporary ID never has one).
    ///
    /// Like a Core Data fetch with the dictionary result type, this shows what the store holds:
    /// this context's unsaved changes are not applied. Inside `performInSnapshot` it reads in
    /// that snapshot. For callers that serialize an object and drop it, this skips building,
    /// registering and later resetting a managed object.
    @inlinable
    public func withStoredObject<R>(_ id: ManagedObjectID, _ body: (borrowing StoredObjectRow) throws -> R) throws -> R? {
        // The generic part stays in the caller's module, specialized: unspecialized, `R?`'s
        // metadata was looked up at run time on every call.
        var result: R?
        try visitStoredObject(id) { row in result = try body(row) }
        return result
    }

    /// `withStoredObject` without a result: `body` runs only when the row exists.
    @usableFromInline
    func visitStoredObject(_ id: ManagedObjectID, _ body: (borrowing StoredObjectRow) throws -> Void) throws {
        assertOnQueue()
        guard id.storeIdentifier == coordinator.storeIdentifier, let index = coordinator.model.entityIndexByName[id.entityName] else {
            throw ContextError.foreignObjectID(id)
        }
        guard let pk = id.primaryKey else { return }
        let entity = coordinator.model.schema[index]
        try readStore { session in
            try session.visitRow(of: entity, key: pk) { source in
                try body(StoredObjectRow(objectID: id, source: source, entity: entity, coordinator: coordinator, session: session))
            }
        }
    }
}
