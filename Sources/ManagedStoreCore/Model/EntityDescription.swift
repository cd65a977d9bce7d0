/// One entity of a model as written by its author [NSEntityDescription].
///
/// A description is plain data; `ManagedObjectModel` checks a set of them and resolves their
/// references (destinations, inverses) into the schema the store and contexts use.
public struct EntityDescription: Sendable, Hashable {
    public var name: String
    public var attributes: [AttributeDescription]
    public var relationships: [RelationshipDescription]
    /// Each inner list is a set of attributes whose values together must be unique.
    public var uniquenessConstraints: [[String]]
    /// Each inner list is the attributes of one index, in order.
    public var indexes: [[String]]
    /// The name this entity had in the model a store was made with, when it was renamed
    /// [renamingIdentifier]: lightweight migration keeps its objects under the new name.
    public var renamingIdentifier: String?
    /// The entity this one inherits from [superentity]: its objects have every property,
    /// constraint and index of the parent's too, and a fetch of the parent includes them.
    public var parent: String?
    /// An abstract entity has no objects of its own [isAbstract]: only its sub-entities do.
    public var isAbstract: Bool
    /// Fetched properties [NSFetchedPropertyDescription]: a fetch of another entity's objects
    /// with `$FETCH_SOURCE` standing for this object, answered when asked, never stored.
    public var fetchedProperties: [FetchedPropertyDescription]

    public init(name: String, attributes: [AttributeDescription] = [], relationships: [RelationshipDescription] = [],
                uniquenessConstraints: [[String]] = [], indexes: [[String]] = [], renamingIdentifier: String? = nil,
                parent: String? = nil, isAbstract: Bool = false, fetchedProperties: [FetchedPropertyDescription] = []) {
        self.fetchedProperties = fetchedProperties
        self.parent = parent
        self.isAbstract = isAbstract
        self.name = name
        self.attributes = attributes
        self.relationships = relationships
        self.uniquenessConstraints = uniquenessConstraints
        self.indexes = indexes
        self.renamingIdentifier = renamingIdentifier
    }

    public func attribute(named name: String) -> AttributeDescription? { attributes.first { $0.name == name } }
    public func relationship(named name: String) -> RelationshipDescription? { relationships.first { $0.name == name } }
    public func fetchedProperty(named name: String) -> FetchedPropertyDescription? { fetchedProperties.first { $0.name == name } }

    /// What the version hash covers: what is stored, without the fetched properties either
    /// (fetches answered when asked), so that adding one needs no migration.
    var hashedPart: EntityDescription {
        var stored = storedPart
        stored.fetchedProperties = []
        return stored
    }

    /// The entity without its transient attributes: what is stored.
    var storedPart: EntityDescription {
        guard attributes.contains(where: \.isTransient) else { return self }
        var stored = self
        stored.attributes.removeAll(where: \.isTransient)
        return stored
    }
}
