/// The value of one property in a snapshot: an attribute's value or a relationship's target(s).
public enum PropertyValue: Sendable, Hashable, CustomStringConvertible {
    case attribute(AttributeValue)
    case object(ManagedObjectID?)
    case objects([ManagedObjectID])

    public var description: String {
        switch self {
        case .attribute(let v): return "\(v.anyValue.map { "\($0)" } ?? "nil")"
        case .object(let id): return id?.description ?? "nil"
        case .objects(let ids): return "[" + ids.map(\.description).joined(separator: ", ") + "]"
        }
    }
}

/// Property values by name: an object's state at one moment.
public typealias ObjectSnapshot = [String: PropertyValue]

/// An optimistic-locking conflict on one object [NSMergeConflict].
///
/// The context read the object at `oldVersion`; the store now holds `newVersion` (0 when the
/// object was deleted there). The snapshots hold attributes and to-one relationships.
public struct MergeConflict: Sendable, Hashable {
    public let objectID: ManagedObjectID
    public let oldVersion: Int64
    public let newVersion: Int64
    /// The values this context would have saved; nil if the context deleted the object.
    public let objectSnapshot: ObjectSnapshot?
    /// The values when this context read the object (at `oldVersion`); nil when they are not
    /// known (the change was based on a version the context never read: `baseVersion`).
    public let cachedSnapshot: ObjectSnapshot?
    /// The values in the store now; nil when the store no longer has the object.
    public let persistedSnapshot: ObjectSnapshot?
    /// The properties this context changed.
    public let changedProperties: Set<String>

    /// Properties the store changed after `oldVersion` (by comparing the cached and persisted snapshots).
    public var storeChangedProperties: Set<String> {
        guard let cachedSnapshot, let persistedSnapshot else { return [] }
        return Set(persistedSnapshot.keys.filter { persistedSnapshot[$0] != cachedSnapshot[$0] })
    }

    /// Properties both sides changed: R ∩ C in the API contract. When the values at
    /// `oldVersion` are not known, every property counts as changed by the store, so this is
    /// every property this context changed.
    public var conflictingProperties: Set<String> {
        guard cachedSnapshot != nil else { return changedProperties }
        return changedProperties.intersection(storeChangedProperties)
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
}
