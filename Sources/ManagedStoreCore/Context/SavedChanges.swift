/// What one save changed in the store, by object ID: the contents of Core Data's did-save
/// notification [NSInsertedObjectsKey, NSUpdatedObjectsKey, NSDeletedObjectsKey].
///
/// `updated` holds every saved object whose stored state differs after the save, including
/// objects changed only through inverse maintenance: when a task moves from one project to
/// another, the task and both projects are updated (each project's `tasks` changed), as in
/// Core Data. Cascade deletions are in `deleted`. Objects inserted and deleted again before
/// the save appear nowhere: the store never held them.
///
/// A child context's save reached only its parent: its changes carry the child's IDs
/// (temporary ones for inserts, unless `obtainPermanentIDs` gave permanent ones) and no token.
public struct SavedChanges: Sendable, Hashable {
    /// The inserted objects' permanent IDs (a child's save: its IDs), in the order they were inserted.
    public let inserted: [ManagedObjectID]
    /// Saved objects whose stored state changed, by entity then key.
    public let updated: [ManagedObjectID]
    /// Objects deleted from the store, by entity then key.
    public let deleted: [ManagedObjectID]
    /// The save's transaction in the persistent history; nil when the store records none (or
    /// the save wrote nothing).
    public let token: PersistentHistoryToken?
    /// The conflicts the save's merge policy resolved (empty under `error`).
    public let resolved: [ResolvedConflict]
    /// Inserts a uniqueness resolution folded into another object (never saved themselves):
    /// their temporary IDs, and the ID of the object that holds their values now.
    public let mergedInserts: [ManagedObjectID: ManagedObjectID]

    public init(inserted: [ManagedObjectID] = [], updated: [ManagedObjectID] = [], deleted: [ManagedObjectID] = [],
                token: PersistentHistoryToken? = nil, resolved: [ResolvedConflict] = [], mergedInserts: [ManagedObjectID: ManagedObjectID] = [:]) {
        self.inserted = inserted
        self.updated = updated
        self.deleted = deleted
        self.token = token
        self.resolved = resolved
        self.mergedInserts = mergedInserts
    }

    /// A save that wrote nothing.
    public static let none = SavedChanges()

    public var isEmpty: Bool { inserted.isEmpty && updated.isEmpty && deleted.isEmpty }
}

extension ManagedObjectContext {
    /// The saved objects the pending changes alter besides those written as updates: the
    /// destinations whose inverse relationship gains or loses an object. Read before the save
    /// commits the objects' states (which forgets what they were).
    func objectsAlteredThroughInverses() -> Set<ManagedObjectID> {
        var altered: Set<ManagedObjectID> = []
        func addAll(_ state: RelationshipState) {
            switch state {
            case .unloaded, .toOne(nil): break
            case .toOne(let id?): altered.insert(id)
            case .toMany(let ids): altered.formUnion(ids)
            }
        }
        func addDifference(_ now: RelationshipState, _ before: RelationshipState) {
            switch (now, before) {
            case let (.toOne(a), .toOne(b)) where a != b:
                if let a { altered.insert(a) }
                if let b { altered.insert(b) }
            case let (.toMany(a), .toMany(b)):
                altered.formUnion(a.symmetricDifference(b))
            case (_, .unloaded):
                addAll(now)
            default:
                break
            }
        }
        for object in insertedList where !object.isDeleted {
            // A bulk insert of objects that refer to nothing (the common case) adds nothing.
            for state in object.relationships { addAll(state) }
        }
        for object in updatedList + touchedList where !object.isInserted && !object.isDeleted && !object.isFault {
            for r in object.relationships.indices { addDifference(object.relationships[r], object.committedRelationships[r]) }
        }
        for object in deletedList {
            // What the store held: those destinations lose it. Links made only in memory
            // before the delete never reach the store.
            for state in object.committedRelationships { addAll(state) }
        }
        return altered
    }

    /// The touched objects (changed only through inverse maintenance of a loaded to-many)
    /// whose relationships really differ from what the store holds.
    func touchedObjectsWithChanges() -> [ManagedObjectID] {
        touchedList.compactMap { object in
            guard !object.isInserted, !object.isDeleted, !object.isFault else { return nil }
            let differs = object.relationships.indices.contains { r in
                switch (object.relationships[r], object.committedRelationships[r]) {
                case let (.toOne(a), .toOne(b)): return a != b
                case let (.toMany(a), .toMany(b)): return a != b
                default: return false
                }
            }
            return differs ? object.objectID : nil
        }
    }
}

extension ManagedObjectID {
    /// By entity name, then key: the order `SavedChanges` and a history record list objects in.
    static func precedesByEntityAndKey(_ a: ManagedObjectID, _ b: ManagedObjectID) -> Bool {
        a.entityName != b.entityName ? a.entityName < b.entityName : (a.primaryKey ?? 0) < (b.primaryKey ?? 0)
    }
}

extension Sequence<ManagedObjectID> {
    func sortedByEntityAndKey() -> [ManagedObjectID] { sorted(by: ManagedObjectID.precedesByEntityAndKey) }
}
