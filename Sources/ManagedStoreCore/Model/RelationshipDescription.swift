/// What deleting an object does to the objects at the other end of a relationship [NSDeleteRule].
public enum DeleteRule: String, Sendable, Codable, CaseIterable {
    /// Remove the deleted object from the inverse relationship of each destination.
    case nullify
    /// Delete the destinations too.
    case cascade
    /// Refuse the delete while the relationship holds any object.
    case deny
    /// Leave the destinations as they are, pointing at an object that no longer exists.
    case noAction
}

/// One relationship of an entity [NSRelationshipDescription]. Every relationship names its
/// inverse, or says it has none (a one-way relationship).
public struct RelationshipDescription: Sendable, Hashable {
    public var name: String
    public var destination: String
    /// The destination's relationship back; nil for a one-way relationship, which nothing
    /// keeps in step from the other side: deleting a destination only takes it out.
    public var inverse: String?
    public var isToMany: Bool
    public var deleteRule: DeleteRule
    /// A to-one relationship that must hold an object when saved. A to-many is always optional
    /// here; Core Data's non-optional to-many ("at least one") is `minCount` 1.
    public var isOptional: Bool
    /// A to-many relationship: the fewest destinations a saved object may hold [minCount].
    public var minCount: Int?
    /// A to-many relationship: the most destinations a saved object may hold [maxCount].
    public var maxCount: Int?
    /// A to-many relationship whose destinations keep the order they were given in
    /// [isOrdered, NSOrderedSet].
    public var isOrdered: Bool
    /// The name this relationship had in the model a store was made with, when it was renamed
    /// [renamingIdentifier]: lightweight migration keeps its links under the new name.
    public var renamingIdentifier: String?

    /// A non-optional to-many becomes `minCount` 1 (at least the count given), as Core Data reads it.
    public init(name: String, destination: String, inverse: String?, isToMany: Bool = false,
                deleteRule: DeleteRule = .nullify, isOptional: Bool = true, minCount: Int? = nil, maxCount: Int? = nil,
                isOrdered: Bool = false, renamingIdentifier: String? = nil) {
        self.name = name
        self.destination = destination
        self.inverse = inverse
        self.isToMany = isToMany
        self.deleteRule = deleteRule
        self.isOptional = isOptional || isToMany
        self.minCount = isToMany && !isOptional ? max(minCount ?? 1, 1) : minCount
        self.maxCount = maxCount
        self.isOrdered = isOrdered
        self.renamingIdentifier = renamingIdentifier
    }

    /// Whether saving checks how many destinations this relationship holds.
    public var hasCountRule: Bool { minCount != nil || maxCount != nil }
}
