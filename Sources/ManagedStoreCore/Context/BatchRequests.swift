/// Requests that change many objects of the store at once, without loading them into the
/// caller's context [NSBatchInsertRequest, NSBatchUpdateRequest, NSBatchDeleteRequest].
///
/// Unlike Core Data's, these are not a way around the rules: every object is validated, delete
/// rules are applied, uniqueness is enforced and the persistent history records the change.
/// They run in chunks on a private context that is emptied after each chunk, so memory stays
/// bounded however many objects they touch, and all chunks share one transaction: a request
/// that fails writes nothing. Run them with `ManagedObjectContext.execute(_:)`.
///
/// As in Core Data, the calling context's objects do not change; merge `BatchResult.changes`
/// into the contexts that should see them (`ManagedObjectContext.mergeChanges(fromRemoteContextSave:into:)`),
/// or let contexts with `automaticallyMergesChangesFromParent` take them in by themselves.

/// What a batch request answers besides its count [NSBatchInsertRequestResultType].
public enum BatchResultType: Sendable, Hashable {
    /// The number of objects only.
    case count
    /// The number and the IDs of the objects the request matched or inserted.
    case objectIDs
}

/// Inserts objects given as property values [NSBatchInsertRequest].
///
/// Values are keyed by property name: attributes take `.attribute(value)`, to-one relationships
/// `.object(id)` and to-many relationships `.objects(ids)` of saved objects. A property left out
/// takes its default (attributes) or nothing (relationships).
public struct BatchInsertRequest {
    public var entityName: String
    /// Where the objects come from: a whole array, or a generator called until it returns nil
    /// (so that an import never holds all its objects at once).
    public var source: Source
    public var resultType: BatchResultType = .count
    /// Objects saved per chunk; memory grows with it, the speed hardly does past a few hundred.
    public var chunkSize = 1000
    /// How a uniqueness conflict with a stored object is resolved (`.error`: the request fails).
    public var mergePolicy: MergePolicy = .error
    /// Called after each chunk is written, with the number of objects inserted so far.
    public var progress: ((Int) -> Void)?

    public enum Source {
        case objects([[String: PropertyValue]])
        case generator(() -> [String: PropertyValue]?)
    }

    public init(entityName: String, objects: [[String: PropertyValue]]) {
        self.entityName = entityName
        self.source = .objects(objects)
    }

    public init(entityName: String, generator: @escaping () -> [String: PropertyValue]?) {
        self.entityName = entityName
        self.source = .generator(generator)
    }
}

/// Sets the same values on every object that matches a predicate [NSBatchUpdateRequest].
public struct BatchUpdateRequest: Sendable {
    public var entityName: String
    /// nil matches every object of the entity.
    public var predicate: ObjectPredicate?
    /// Values keyed by property name, as in `BatchInsertRequest`.
    public var propertiesToUpdate: [String: PropertyValue]
    public var resultType: BatchResultType = .count
    public var chunkSize = 1000

    public init(entityName: String, predicate: ObjectPredicate?, propertiesToUpdate: [String: PropertyValue]) {
        self.entityName = entityName
        self.predicate = predicate
        self.propertiesToUpdate = propertiesToUpdate
    }
}

/// Deletes every object that matches a predicate, applying delete rules [NSBatchDeleteRequest]:
/// cascades delete further objects, nullify clears the inverse, and one `deny` rule that still
/// holds objects makes the whole request fail (nothing deleted).
public struct BatchDeleteRequest: Sendable {
    public var entityName: String
    /// nil matches every object of the entity.
    public var predicate: ObjectPredicate?
    public var resultType: BatchResultType = .count
    public var chunkSize = 1000

    public init(entityName: String, predicate: ObjectPredicate?) {
        self.entityName = entityName
        self.predicate = predicate
    }
}

/// What a batch request did [NSBatchInsertResult and the others].
public struct BatchResult: Sendable, Hashable {
    /// Objects inserted, or matched by the predicate (and so updated or deleted).
    public let count: Int
    /// With `.objectIDs`: the inserted objects (in the order given; an insert folded into a
    /// stored object by a uniqueness resolution names that object), or the matched ones.
    public let objectIDs: [ManagedObjectID]?
    /// Everything the request changed in the store, as one save would report it: objects
    /// changed through inverse relationships and cascade deletions included; `token` is the
    /// history token of the last chunk. Merge it into live contexts to show them the change.
    public let changes: SavedChanges
}

/// Why a batch request wrote nothing.
public enum BatchError: Error, Sendable, CustomStringConvertible {
    case unknownEntity(String)
    /// A value for a property the entity does not have.
    case unknownProperty(String, entity: String)
    /// The predicate could not run.
    case fetch(FetchError)
    /// A chunk's save failed (validation, a conflict, the store); the whole request was undone.
    case save(SaveError)
    case invalidRequest(String)

    public var description: String {
        switch self {
        case .unknownEntity(let name): return "unknown entity '\(name)'"
        case let .unknownProperty(name, entity): return "\(entity) has no property '\(name)'"
        case .fetch(let error): return error.description
        case .save(let error): return "\(error)"
        case .invalidRequest(let detail): return "invalid batch request: \(detail)"
        }
    }
}
