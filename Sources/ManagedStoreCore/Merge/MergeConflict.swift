/// An optimistic-locking conflict on one object [NSMergeConflict].
///
/// The change was based on `oldVersion`; the store now holds `newVersion` (0 when the object
/// was deleted there). Snapshots hold every property, relationships included.
public struct MergeConflict: Sendable, Hashable {
    public let objectID: ManagedObjectID
    public let oldVersion: Int64
    public let newVersion: Int64
    /// The values this context would have saved; nil if the context deleted the object.
    public let objectSnapshot: ObjectSnapshot?
    /// The values at `oldVersion`; nil when they are not known (the persistent history no
    /// longer reaches that version, and this context did not read it).
    public let cachedSnapshot: ObjectSnapshot?
    /// The values in the store now; nil when the store no longer has the object.
    public let persistedSnapshot: ObjectSnapshot?
    /// The properties this context changed (R).
    public let changedProperties: Set<String>
    /// The properties the store changed after `oldVersion` (C), from the persistent history;
    /// nil when that is not known, and then every property counts as changed.
    public let storeChangedProperties: Set<String>?

    public init(objectID: ManagedObjectID, oldVersion: Int64, newVersion: Int64, objectSnapshot: ObjectSnapshot?,
                cachedSnapshot: ObjectSnapshot?, persistedSnapshot: ObjectSnapshot?, changedProperties: Set<String>,
                storeChangedProperties: Set<String>?) {
        self.objectID = objectID
        self.oldVersion = oldVersion
        self.newVersion = newVersion
        self.objectSnapshot = objectSnapshot
        self.cachedSnapshot = cachedSnapshot
        self.persistedSnapshot = persistedSnapshot
        self.changedProperties = changedProperties
        self.storeChangedProperties = storeChangedProperties
    }

    /// Whether the store changed `property` after `oldVersion` (true when that is not known).
    public func storeChanged(_ property: String) -> Bool { storeChangedProperties?.contains(property) ?? true }

    /// Properties both sides changed: R ∩ C in the API contract (all of R when C is not known).
    public var conflictingProperties: Set<String> {
        storeChangedProperties.map { changedProperties.intersection($0) } ?? changedProperties
    }
}

/// A uniqueness-constraint violation [NSConstraintConflict].
public struct ConstraintConflict: Sendable, Hashable {
    public let entityName: String
    /// The attributes of the violated constraint.
    public let constraint: [String]
    /// The values they share.
    public let values: [String: AttributeValue]
    /// Objects already in the store with those values.
    public let conflictingObjects: [ManagedObjectID]
    /// Objects of this save that have those values.
    public let objects: [ManagedObjectID]

    package init(entityName: String, constraint: [String], values: [String: AttributeValue], conflictingObjects: [ManagedObjectID], objects: [ManagedObjectID]) {
        self.entityName = entityName
        self.constraint = constraint
        self.values = values
        self.conflictingObjects = conflictingObjects
        self.objects = objects
    }
}

/// A conflict a merge policy resolved, as a save reports it.
public enum ResolvedConflict: Sendable, Hashable {
    case optimisticLocking(MergeConflict)
    /// A uniqueness conflict of inserts; `survivor` is the object that now holds the values
    /// (the stored one, or the first insert), `merged` the inserts folded into it.
    case uniqueness(ConstraintConflict, survivor: ManagedObjectID, merged: [ManagedObjectID])
}
