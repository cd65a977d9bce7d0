/// What opening a store with a model changes in it: the steps of a lightweight migration
/// (`LightweightMigration`), in the order they run, each printable as one plain line.
/// Empty when the store already matches the model.
public struct MigrationPlan: Sendable, Hashable, CustomStringConvertible {
    public let steps: [MigrationStep]

    public init(steps: [MigrationStep]) { self.steps = steps }

    /// Whether the store already matches the model: opening it changes nothing.
    public var isEmpty: Bool { steps.isEmpty }

    /// One step a line.
    public var description: String { steps.map(\.description).joined(separator: "\n") }
}

/// One change a lightweight migration makes to a store [an entity or property mapping of an
/// inferred NSMappingModel]. Entity and property names are the new model's, except for what
/// is removed (named as it was) and the old side of a rename.
public enum MigrationStep: Sendable, Hashable, CustomStringConvertible {
    /// The file format is upgraded (`StoreFormatMigration`); the model is not involved.
    case upgradeFormat(from: String, to: String)
    case addEntity(String)
    /// The entity's table goes, with its `objects`.
    case removeEntity(String, objects: Int)
    case renameEntity(from: String, to: String)
    /// Existing objects take `defaultValue` (null when there is none).
    case addAttribute(entity: String, attribute: String, type: AttributeType, isOptional: Bool, defaultValue: AttributeValue)
    case removeAttribute(entity: String, attribute: String)
    case renameAttribute(entity: String, from: String, to: String)
    /// An optional attribute becomes required; the `filled` objects without a value take `defaultValue`.
    case makeAttributeRequired(entity: String, attribute: String, defaultValue: AttributeValue, filled: Int)
    case makeAttributeOptional(entity: String, attribute: String)
    /// Validation rules (`changed` names them: min, max, minLength, maxLength, pattern, default,
    /// optional, deleteRule) change; nothing stored does.
    case changeRules(entity: String, property: String, changed: [String])
    /// A relationship and its inverse are added, empty.
    case addRelationship(entity: String, relationship: String, isToMany: Bool, inverseEntity: String, inverse: String, inverseIsToMany: Bool)
    /// A relationship and its inverse go, with their links.
    case removeRelationship(entity: String, relationship: String, inverseEntity: String, inverse: String)
    case renameRelationship(entity: String, from: String, to: String)
    /// A one-way relationship is added, empty.
    case addOneWayRelationship(entity: String, relationship: String, isToMany: Bool, destination: String)
    /// A one-way relationship goes, with its links.
    case removeOneWayRelationship(entity: String, relationship: String, destination: String)
    /// The links of a one-to-one relationship move to the other side's table: which side
    /// stores them follows the names (`ManagedObjectModel`), and a rename changed it.
    case moveLinks(entity: String, relationship: String, toTableOf: String)
    /// A to-one whose inverse is to-many becomes to-many (one-to-many to many-to-many): its
    /// links move from its key column into the pair's link list, the inverse's order with them.
    case makeToMany(entity: String, relationship: String, inverseEntity: String, inverse: String)
    /// A to-many becomes ordered (its members keep their key order until a write orders
    /// them) or unordered (its order is dropped).
    case changeOrder(entity: String, relationship: String, isOrdered: Bool)
    case addIndex(entity: String, properties: [String])
    case dropIndex(entity: String, properties: [String])
    case addUniquenessConstraint(entity: String, properties: [String])
    case dropUniquenessConstraint(entity: String, properties: [String])
    /// Only the model's name or version changed: it is recorded, nothing else changes.
    case recordModel(name: String, version: Int)

    public var description: String {
        switch self {
        case let .upgradeFormat(from, to):
            return "upgrade the store file format from \(from) to \(to)"
        case .addEntity(let name):
            return "add entity \(name)"
        case let .removeEntity(name, objects):
            return "remove entity \(name) and its \(objects) object\(objects == 1 ? "" : "s")"
        case let .renameEntity(from, to):
            return "rename entity \(from) -> \(to)"
        case let .addAttribute(entity, attribute, type, isOptional, defaultValue):
            let fill = defaultValue.isNull ? "" : ", default \(Self.text(defaultValue))"
            return "add attribute \(entity).\(attribute) (\(type.rawValue), \(isOptional ? "optional" : "required")\(fill))"
        case let .removeAttribute(entity, attribute):
            return "remove attribute \(entity).\(attribute)"
        case let .renameAttribute(entity, from, to):
            return "rename attribute \(entity).\(from) -> \(entity).\(to)"
        case let .makeAttributeRequired(entity, attribute, defaultValue, filled):
            let fill = filled == 0 ? "" : " (\(filled) object\(filled == 1 ? "" : "s") without a value take the default \(Self.text(defaultValue)))"
            return "make attribute \(entity).\(attribute) required\(fill)"
        case let .makeAttributeOptional(entity, attribute):
            return "make attribute \(entity).\(attribute) optional"
        case let .changeRules(entity, property, changed):
            return "change the rules of \(entity).\(property) (\(changed.joined(separator: ", "))): nothing stored changes"
        case let .addRelationship(entity, relationship, isToMany, inverseEntity, inverse, inverseIsToMany):
            return "add relationship \(entity).\(relationship) (\(Self.kind(isToMany))) <-> \(inverseEntity).\(inverse) (\(Self.kind(inverseIsToMany)))"
        case let .removeRelationship(entity, relationship, inverseEntity, inverse):
            return "remove relationship \(entity).\(relationship) <-> \(inverseEntity).\(inverse) and its links"
        case let .renameRelationship(entity, from, to):
            return "rename relationship \(entity).\(from) -> \(entity).\(to)"
        case let .addOneWayRelationship(entity, relationship, isToMany, destination):
            return "add one-way relationship \(entity).\(relationship) (\(Self.kind(isToMany))) -> \(destination)"
        case let .removeOneWayRelationship(entity, relationship, destination):
            return "remove one-way relationship \(entity).\(relationship) -> \(destination) and its links"
        case let .moveLinks(entity, relationship, toTableOf):
            return "move the links of \(entity).\(relationship) into \(toTableOf)'s table"
        case let .changeOrder(entity, relationship, isOrdered):
            return isOrdered ? "make \(entity).\(relationship) ordered: its members keep their key order until reordered"
                : "make \(entity).\(relationship) unordered: its order is dropped"
        case let .makeToMany(entity, relationship, inverseEntity, inverse):
            return "make \(entity).\(relationship) to-many (<-> \(inverseEntity).\(inverse), to-many): its links move into a link list"
        case let .addIndex(entity, properties):
            return "add index \(entity)(\(properties.joined(separator: ", ")))"
        case let .dropIndex(entity, properties):
            return "drop index \(entity)(\(properties.joined(separator: ", ")))"
        case let .addUniquenessConstraint(entity, properties):
            return "add uniqueness constraint \(entity)(\(properties.joined(separator: ", ")))"
        case let .dropUniquenessConstraint(entity, properties):
            return "drop uniqueness constraint \(entity)(\(properties.joined(separator: ", ")))"
        case let .recordModel(name, version):
            return "record model \(name) version \(version) (nothing stored changes)"
        }
    }

    /// A value as the JSON model format writes it.
    package static func text(_ value: AttributeValue) -> String { value.jsonValue.serialized() }

    private static func kind(_ isToMany: Bool) -> String { isToMany ? "to-many" : "to-one" }
}
