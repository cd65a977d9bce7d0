// The resolved form of a model: what contexts and stores work with.
//
// Descriptions name things by string; here every reference is an index, checked once when the
// model is built, so no hot path looks up a destination or an inverse by name.

/// Where a relationship's links are kept, decided by the model and the same in every store
/// (`ManagedObjectModel.storage`).
package enum RelationshipStorage: Sendable, Hashable {
    /// Each object of this entity keeps its destination's key, under the relationship's name.
    case foreignKey
    /// Each destination keeps this object's key, under the inverse's name (the inverse is a
    /// to-one that owns the key).
    case inverseForeignKey
    /// Many-to-many: one link (a pair of keys) per connection, in the list `table` shared with
    /// the inverse; this side's key is the first of the pair when `isFirstSide`.
    case joinTable(table: String, isFirstSide: Bool)
}

/// A relationship with its destination and inverse resolved to indexes.
package struct Relationship: Sendable {
    package let index: Int
    package let description: RelationshipDescription
    package let destinationIndex: Int
    /// The inverse; nil for a one-way relationship.
    package let inverseIndex: Int?
    /// The inverse's name (a foreign key kept by the destination is named after it).
    package let inverseName: String?
    /// Whether the inverse is an ordered to-many: this object's place in it is kept beside the
    /// key this side stores (`positionName`).
    package let inverseIsOrdered: Bool
    package let storage: RelationshipStorage

    /// The name of the key the destinations' rows hold for this side (storage
    /// `.inverseForeignKey`, which only a relationship with an inverse has): the inverse's.
    package var destinationKeyName: String {
        guard let inverseName else { preconditionFailure("\(name) is one-way: no destination row holds a key for it") }
        return inverseName
    }

    /// Where an ordered relationship keeps each destination's place, the same name in every
    /// store: beside the key the destination's row holds (one-to-many), or in the link list,
    /// beside this side's key. Nil for every other relationship.
    package var positionName: String? {
        guard isOrdered else { return nil }
        switch storage {
        case .inverseForeignKey: return inverseName.map(Self.positionName(ofKey:))
        case .joinTable(_, let isFirstSide): return isFirstSide ? "_order_a" : "_order_b"
        case .foreignKey: return nil
        }
    }

    /// The name of the place kept beside the stored key `key` (a to-one relationship's name).
    package static func positionName(ofKey key: String) -> String { "_order_" + key }

    package var name: String { description.name }
    package var isToMany: Bool { description.isToMany }
    /// A to-many whose destinations keep an order of their own.
    package var isOrdered: Bool { description.isOrdered }
}

extension Entity {
    /// The stored to-one keys (relationship indexes) whose inverse is ordered: each has a
    /// position beside it in this entity's rows (`Relationship.positionName`).
    package var positionedKeys: [Int] { foreignKeyRelationships.filter { relationships[$0].inverseIsOrdered } }
}

/// A property of an entity, found by name.
package enum PropertyRef: Sendable, Hashable {
    case attribute(Int)
    case relationship(Int)
}

/// An entity with everything resolved; shared, immutable, so it is Sendable.
package final class Entity: Sendable {
    package let index: Int
    package let name: String
    package let attributes: [AttributeDescription]
    package let relationships: [Relationship]
    let propertyByName: [String: PropertyRef]
    /// Attribute names, then relationship names: what `property(named:)` scans.
    package let propertyNames: [String]
    /// Attribute indexes of each uniqueness constraint.
    package let uniquenessConstraints: [[Int]]
    package let indexes: [[String]]
    /// The default value of each attribute, the starting state of an inserted object.
    let defaultAttributes: [AttributeValue]
    /// Relationships whose key is stored in this entity's row, in relationship order.
    package let foreignKeyRelationships: [Int]
    /// Whether any relationship is many-to-many (stored in a join table).
    let hasJoinTables: Bool
    /// Relationships stored in a join table, in relationship order.
    let joinTableRelationships: [Int]
    /// Per attribute: whether it has a range, length or pattern rule (validation beyond its
    /// type and optionality).
    let attributeHasRules: [Bool]
    /// Ordered to-many relationships, in relationship order (their order is kept beside the
    /// membership: `ManagedObject.destinationOrder`).
    package let orderedRelationships: [Int]
    /// Whether a to-many relationship has a minimum or maximum count, which inverse maintenance
    /// must keep checkable.
    let hasCountRules: Bool
    /// The relationships of a new object (no destinations), shared by every insert until written.
    let emptyRelationships: [RelationshipState]
    /// The entity as stores and contexts see it: with every property it inherits.
    package let descriptionValue: EntityDescription
    /// The entity it inherits from, if any.
    package let parentIndex: Int?
    /// An abstract entity has no objects of its own: inserting one is refused.
    package let isAbstract: Bool
    /// The entities whose objects a fetch of this one returns: itself unless abstract, and
    /// every concrete entity below it, in model order.
    package let kinds: [Int]
    /// Whether a fetch of this entity reads its own objects only: the common case, which
    /// runs as one store fetch.
    package let isSingleKind: Bool
    /// Per uniqueness constraint: the entity that declared it, across whose kinds its values
    /// must be unique (this entity, or an ancestor for an inherited constraint).
    package let uniquenessOwners: [Int]
    /// The root of its hierarchy, whose key sequence it allocates from (`EntityHierarchyPlace`).
    package let keyRoot: Int
    /// Every entity sharing its key sequence, root first: just itself outside a hierarchy.
    package let keySharers: [Int]
    /// The transient attributes, its parents' first: never stored, held by each object in
    /// memory (`ManagedObject.transientValues`), found by `transientIndex(_:)`.
    package let transientAttributes: [AttributeDescription]
    /// Their defaults, the starting values of an inserted object; empty when every default is
    /// null, so that an insert of an entity without transient defaults does no work for them.
    let transientDefaults: [AttributeValue]

    init(index: Int, description: EntityDescription, relationships: [Relationship], place: EntityHierarchyPlace,
         transientAttributes: [AttributeDescription] = []) {
        self.transientAttributes = transientAttributes
        let defaults = transientAttributes.map(\.defaultValue)
        self.transientDefaults = defaults.allSatisfy(\.isNull) ? [] : defaults
        self.index = index
        self.parentIndex = place.parent
        self.isAbstract = description.isAbstract
        self.kinds = place.kinds
        self.isSingleKind = place.kinds == [index]
        self.uniquenessOwners = place.uniquenessOwners
        self.keyRoot = place.keyRoot
        self.keySharers = place.keySharers
        self.name = description.name
        self.attributes = description.attributes
        self.relationships = relationships
        var byName: [String: PropertyRef] = [:]
        for (i, a) in description.attributes.enumerated() { byName[a.name] = .attribute(i) }
        for (i, r) in description.relationships.enumerated() { byName[r.name] = .relationship(i) }
        self.propertyByName = byName
        self.propertyNames = description.attributes.map(\.name) + description.relationships.map(\.name)
        self.uniquenessConstraints = description.uniquenessConstraints.map { names in
            names.compactMap { name in description.attributes.firstIndex { $0.name == name } }
        }
        self.indexes = description.indexes
        self.defaultAttributes = description.attributes.map(\.defaultValue)
        let foreignKeys = relationships.filter {
            if case .foreignKey = $0.storage { return true } else { return false }
        }.map(\.index)
        self.foreignKeyRelationships = foreignKeys
        let joinTables = relationships.filter { if case .joinTable = $0.storage { return true } else { return false } }.map(\.index)
        self.joinTableRelationships = joinTables
        self.hasJoinTables = !joinTables.isEmpty
        self.attributeHasRules = description.attributes.map {
            $0.minValue != nil || $0.maxValue != nil || $0.minLength != nil || $0.maxLength != nil || $0.pattern != nil
        }
        self.orderedRelationships = relationships.filter(\.isOrdered).map(\.index)
        self.hasCountRules = relationships.contains { $0.description.hasCountRule }
        self.emptyRelationships = relationships.map { $0.isToMany ? .toMany([]) : .toOne(nil) }
        self.descriptionValue = description
    }

    package func attributeIndex(_ name: String) -> Int? {
        if case .attribute(let i)? = property(named: name) { return i }
        return nil
    }

    /// The property called `name`. Entities have few properties, and comparing small strings
    /// costs less than hashing them (the setter path does this for every value it sets).
    package func property(named name: String) -> PropertyRef? {
        if propertyNames.count <= 16 {
            guard let i = propertyNames.firstIndex(of: name) else { return nil }
            return i < attributes.count ? .attribute(i) : .relationship(i - attributes.count)
        }
        return propertyByName[name]
    }

    /// The index of the transient attribute called `name` in `transientAttributes`.
    package func transientIndex(_ name: String) -> Int? {
        transientAttributes.firstIndex { $0.name == name }
    }

    package func relationshipIndex(_ name: String) -> Int? {
        if case .relationship(let i)? = property(named: name) { return i }
        return nil
    }
}
