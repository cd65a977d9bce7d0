/// What a fetch returns.
public enum FetchResultType: Sendable, Hashable {
    case managedObjects
    case managedObjectIDs
    case count
    /// Dictionaries of `propertiesToFetch`, read from the store (pending changes are not seen,
    /// as with Core Data's NSDictionaryResultType).
    case dictionaries
}

/// A description of objects to fetch [NSFetchRequest].
public struct FetchRequest: Sendable, Hashable {
    public var entityName: String
    public var predicate: ObjectPredicate?
    public var sortDescriptors: [ObjectSortDescriptor]
    /// At most this many results; 0 means no limit.
    public var fetchLimit: Int
    public var fetchOffset: Int
    public var resultType: FetchResultType
    /// Attributes and to-one relationships for `.dictionaries`; all attributes when nil.
    public var propertiesToFetch: [String]?
    /// Whether this context's unsaved inserts, updates and deletes count [includesPendingChanges].
    public var includesPendingChanges: Bool
    /// Whether fetched objects start as faults (their row is kept and turned into values on first use).
    public var returnsObjectsAsFaults: Bool
    /// To-many relationships to read for all fetched objects at once, one query each, instead of
    /// one fault per object [relationshipKeyPathsForPrefetching].
    public var relationshipKeyPathsForPrefetching: [String] = []
    /// Objects read together as a fetched result is walked [fetchBatchSize]; 0 reads every
    /// object's row with the fetch. With a batch size, `fetch(_:)` reads the matching keys, fills
    /// the first batch, and leaves the rest as faults that fill a whole batch at a time when
    /// the first of them is used (FaultBatch.swift). For `.managedObjects` results only.
    public var fetchBatchSize: Int = 0
    /// Keyset pagination: only the objects after this cursor in the request's order.
    /// Make one with `ManagedObjectContext.cursor(after:for:)`.
    public var after: FetchCursor?
    /// How long the fetch (or count) may run, in SQLite and in memory, before it stops with
    /// `FetchError.timedOut`; nil for no limit. Materializing and using the objects afterwards
    /// is not counted.
    public var timeout: Duration?
    /// Whether a fetch of an entity with sub-entities returns their objects too
    /// [includesSubentities]; false fetches the objects of this very entity only.
    public var includesSubentities: Bool = true

    public init(entityName: String, predicate: ObjectPredicate? = nil, sortDescriptors: [ObjectSortDescriptor] = [],
                fetchLimit: Int = 0, fetchOffset: Int = 0, resultType: FetchResultType = .managedObjects,
                propertiesToFetch: [String]? = nil, includesPendingChanges: Bool = true, returnsObjectsAsFaults: Bool = true,
                after: FetchCursor? = nil) {
        self.entityName = entityName
        self.predicate = predicate
        self.sortDescriptors = sortDescriptors
        self.fetchLimit = fetchLimit
        self.fetchOffset = fetchOffset
        self.resultType = resultType
        self.propertiesToFetch = propertiesToFetch
        self.includesPendingChanges = includesPendingChanges
        self.returnsObjectsAsFaults = returnsObjectsAsFaults
        self.after = after
    }
}

/// Why a fetch request cannot run; found before any SQL is run.
public enum FetchError: Error, Sendable, Equatable, CustomStringConvertible {
    case unknownEntity(String)
    /// The key path does not lead to a property, or passes through a to-many relationship
    /// (not supported yet), or continues past an attribute.
    case unknownKeyPath(String, entity: String)
    /// A key path the fetch cannot follow yet, with the reason.
    case unsupportedKeyPath(String, reason: String)
    /// The two sides of a comparison cannot be compared (a string with a number, say).
    case incompatibleTypes(keyPath: String, detail: String)
    /// The predicate cannot run as written (an aggregate on a to-one, two to-many sides, a
    /// regular expression ICU refuses, ...).
    case invalidPredicate(String)
    case invalidRequest(String)
    /// The fetch ran past the request's `timeout` and was stopped.
    case timedOut(Duration)
    /// An asynchronous fetch was cancelled (its `cancel()`, or its task's cancellation).
    case cancelled
    case store(StoreError)

    public var description: String {
        switch self {
        case .unknownEntity(let name): return "unknown entity '\(name)'"
        case let .unknownKeyPath(path, entity): return "unknown key path '\(path)' on \(entity)"
        case let .unsupportedKeyPath(path, reason): return "key path '\(path)' is not supported: \(reason)"
        case let .incompatibleTypes(path, detail): return "cannot compare '\(path)': \(detail)"
        case .invalidPredicate(let detail): return "invalid predicate: \(detail)"
        case .invalidRequest(let detail): return "invalid fetch request: \(detail)"
        case .timedOut(let limit): return "the fetch ran past its time limit of \(limit) and was stopped"
        case .cancelled: return "the fetch was cancelled"
        case .store(let error): return error.description
        }
    }
}
