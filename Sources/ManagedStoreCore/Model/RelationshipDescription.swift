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

/// One relationship of an entity [NSRelationshipDescription]. Every relationship names its inverse.
public struct RelationshipDescription: Sendable, Hashable {
    public var name: String
    public var destination: String
    public var inverse: String
    public var isToMany: Bool
    public var deleteRule: DeleteRule
    /// A to-one relationship that must hold an object when saved.
    public var isOptional: Bool
    /// The name this relationship had in the model a store was made with, when it was renamed
    /// [renamingIdentifier]: lightweight migration keeps its links under the new name.
    public var renamingIdentifier: String?

    public init(name: String, destination: String, inverse: String, isToMany: Bool = false,
                deleteRule: DeleteRule = .nullify, isOptional: Bool = true, renamingIdentifier: String? = nil) {
        self.name = name
        self.destination = destination
        self.inverse = inverse
        self.isToMany = isToMany
        self.deleteRule = deleteRule
        self.isOptional = isOptional
        self.renamingIdentifier = renamingIdentifier
    }
}
