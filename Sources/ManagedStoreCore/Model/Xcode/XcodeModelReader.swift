import Foundation

/// Reads the `contents` file Xcode's model editor writes (an `.xcdatamodel`) into entity
/// descriptions: what Core Data compiles into an `NSManagedObjectModel`, read the way Core Data
/// reads it, with the same names, types, rules and defaults.
///
/// What has no meaning for a store a server shares, or is not supported yet, is refused, each
/// naming the entity, the property and the reason, never dropped: Transformable and other
/// attribute types whose values only the app's classes know, transient and derived attributes,
/// fetched properties, stored fetch requests, configurations. Parent and abstract entities are
/// read as they are (`parentEntity`, `isAbstract`); a relationship without an inverse is a
/// one-way relationship.
/// What only Xcode or code generation uses (class names, scalar types, Spotlight, the
/// diagram's layout, user info, version hash modifiers) is left aside: it does not change
/// what is stored.
package struct XcodeModelReader {
    private(set) var problems: [ModelProblem] = []
    /// The value transformers whose Transformable attributes are read as binary: the bytes
    /// the transformer writes, kept and served as they are.
    let binaryTransformers: Set<String>

    /// The transformer Core Data uses for a Transformable that names none.
    package static let defaultTransformerName = "NSKeyedUnarchiveFromData"

    /// The entities of the model document `root` (the `<model>` element), and every problem
    /// that keeps it from being used.
    package static func entities(of root: XMLTreeElement, binaryTransformers: Set<String> = [])
        -> (entities: [EntityDescription], problems: [ModelProblem]) {
        var reader = XcodeModelReader(binaryTransformers: binaryTransformers)
        guard root.name == "model" else {
            return ([], [ModelProblem(message: "not an Xcode model: the document's root is <\(root.name)>, not <model>")])
        }
        var entities: [EntityDescription] = []
        for child in root.children {
            switch child.name {
            case "entity": if let entity = reader.entity(child) { entities.append(entity) }
            case "elements": break  // the diagram's layout
            case "configuration": reader.refuse(nil, nil, "configurations (\(child[attribute: "name"] ?? "?")) are not supported: one store holds every entity")
            case "fetchRequest": reader.refuse(nil, nil, "stored fetch requests (\(child[attribute: "name"] ?? "?")) are not supported: send the predicate with the fetch")
            default: reader.refuse(nil, nil, "<\(child.name)> is not part of a model this version reads")
            }
        }
        return (entities, reader.problems)
    }

    private mutating func refuse(_ entity: String?, _ property: String?, _ message: String) {
        problems.append(ModelProblem(entity: entity, property: property, message: message))
    }

    private static func flag(_ element: XMLTreeElement, _ name: String) -> Bool { element[attribute: name] == "YES" }

    // MARK: Entities

    private mutating func entity(_ element: XMLTreeElement) -> EntityDescription? {
        guard let name = element[attribute: "name"] else {
            refuse(nil, nil, "an entity without a name")
            return nil
        }
        var entity = EntityDescription(name: name, renamingIdentifier: element[attribute: "elementID"],
                                       parent: element[attribute: "parentEntity"], isAbstract: Self.flag(element, "isAbstract"))
        for child in element.children {
            switch child.name {
            case "attribute":
                if let attribute = attribute(child, of: name) {
                    entity.attributes.append(attribute)
                    if Self.flag(child, "indexed") { entity.indexes.append([attribute.name]) }
                }
            case "relationship":
                if let relationship = relationship(child, of: name) { entity.relationships.append(relationship) }
            case "fetchedProperty":
                refuse(name, child[attribute: "name"], "fetched properties are not supported: fetch with the predicate instead")
            case "uniquenessConstraints":
                for constraint in child.children(named: "uniquenessConstraint") {
                    entity.uniquenessConstraints.append(constraint.children(named: "constraint").compactMap { $0[attribute: "value"] })
                }
            case "fetchIndex":
                // Xcode 9 and later; "Binary" is a B-tree index, "RTree" a spatial one.
                let elements = child.children(named: "fetchIndexElement")
                if let spatial = elements.first(where: { $0[attribute: "type"] == "RTree" }) {
                    refuse(name, spatial[attribute: "property"], "an R-tree fetch index (\(child[attribute: "name"] ?? "?")) is not supported")
                } else if let expression = elements.first(where: { $0[attribute: "expression"] != nil }) {
                    refuse(name, nil, "a fetch index on an expression (\(expression[attribute: "expression"] ?? "")) is not supported")
                } else {
                    entity.indexes.append(elements.compactMap { $0[attribute: "property"] })
                }
            case "compoundIndexes":
                // Before Xcode 9.
                for index in child.children(named: "compoundIndex") {
                    entity.indexes.append(index.children(named: "index").compactMap { $0[attribute: "value"] })
                }
            case "userInfo": break
            default:
                refuse(name, nil, "<\(child.name)> is not part of an entity this version reads")
            }
        }
        return entity
    }

    // MARK: Attributes

    /// Core Data's attribute types by the names the model file gives them.
    static let attributeTypes: [String: AttributeType] = [
        "Integer 16": .integer16, "Integer 32": .integer32, "Integer 64": .integer64, "Decimal": .decimal,
        "Double": .double, "Float": .float, "String": .string, "Boolean": .boolean, "Date": .date,
        "Binary": .binary, "UUID": .uuid, "URI": .uri,
    ]

    private mutating func attribute(_ element: XMLTreeElement, of entity: String) -> AttributeDescription? {
        guard let name = element[attribute: "name"] else {
            refuse(entity, nil, "an attribute without a name")
            return nil
        }
        let typeName = element[attribute: "attributeType"] ?? "Undefined"
        if Self.flag(element, "transient") {
            refuse(entity, name, "transient attributes are not supported: they are not stored, and a server has no object to keep them on")
            return nil
        }
        if Self.flag(element, "derived") || element[attribute: "derivationExpression"] != nil {
            refuse(entity, name, "derived attributes are not supported yet: store the value, or compute it in the client")
            return nil
        }
        var transformer: String?
        if typeName == "Transformable" {
            let named = element[attribute: "valueTransformerName"] ?? Self.defaultTransformerName
            guard binaryTransformers.contains(named) else {
                refuse(entity, name, "Transformable through \(named): its values are objects of the app's own classes, which a server cannot read; "
                       + "store them as Binary, or name \(named) among the binary transformers (--binary-transformers) to keep the bytes it writes")
                return nil
            }
            transformer = named
        }
        guard let type = transformer == nil ? Self.attributeTypes[typeName] : .binary else {
            switch typeName {
            default:
                refuse(entity, name, "attribute type \(typeName) is not supported")
            }
            return nil
        }
        var attribute = AttributeDescription(name: name, type: type, isOptional: Self.flag(element, "optional"),
                                             renamingIdentifier: element[attribute: "elementID"], valueTransformerName: transformer)
        if let text = element[attribute: "defaultValueString"] {
            if let value = Self.value(text, type) { attribute.defaultValue = value } else { refuse(entity, name, "default \(text) is not a \(typeName)") }
        } else if type == .date, let seconds = element[attribute: "defaultDateTimeInterval"] {
            if let interval = Double(seconds) { attribute.defaultValue = .date(Date(timeIntervalSinceReferenceDate: interval)) } else { refuse(entity, name, "default date \(seconds) is not a number") }
        }
        for (key, bound) in [("minValueString", true), ("maxValueString", false)] {
            guard let text = element[attribute: key] else { continue }
            switch type {
            case .string, .uri:
                guard let length = Int(text), length >= 0 else { refuse(entity, name, "length bound \(text) is not a whole number"); continue }
                if bound { attribute.minLength = length } else { attribute.maxLength = length }
            case .binary, .uuid, .boolean:
                refuse(entity, name, "a \(bound ? "minimum" : "maximum") on a \(typeName) attribute is not supported")
            default:
                guard let value = Self.value(text, type) else { refuse(entity, name, "bound \(text) is not a \(typeName)"); continue }
                if bound { attribute.minValue = value } else { attribute.maxValue = value }
            }
        }
        if let pattern = element[attribute: "regularExpressionString"] { attribute.pattern = pattern }
        return attribute
    }

    /// A value as the model file writes it for `type`: numbers in C notation, booleans as
    /// YES/NO (or a number: Xcode has written "0.0" for NO), dates as seconds since 2001.
    static func value(_ text: String, _ type: AttributeType) -> AttributeValue? {
        switch type {
        case .integer16, .integer32, .integer64:
            if let integer = Int64(text) { return .integer(integer) }
            if let number = Double(text), number.rounded() == number, abs(number) < 9.2e18 { return .integer(Int64(number)) }
            return nil
        case .decimal: return Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")).map(AttributeValue.decimal)
        case .double: return Double(text).map(AttributeValue.double)
        case .float: return Float(text).map(AttributeValue.float)
        case .string: return .string(text)
        case .boolean:
            switch text {
            case "YES", "yes", "true", "TRUE": return .boolean(true)
            case "NO", "no", "false", "FALSE": return .boolean(false)
            default: return Double(text).map { .boolean($0 != 0) }
            }
        case .date: return Double(text).map { .date(Date(timeIntervalSinceReferenceDate: $0)) }
        case .binary: return nil
        case .uuid: return UUID(uuidString: text).map(AttributeValue.uuid)
        case .uri: return URL(string: text).map(AttributeValue.uri)
        }
    }

    // MARK: Relationships

    static let deleteRules: [String: DeleteRule] = ["Nullify": .nullify, "Cascade": .cascade, "Deny": .deny, "No Action": .noAction]

    private mutating func relationship(_ element: XMLTreeElement, of entity: String) -> RelationshipDescription? {
        guard let name = element[attribute: "name"] else {
            refuse(entity, nil, "a relationship without a name")
            return nil
        }
        guard let destination = element[attribute: "destinationEntity"] else {
            refuse(entity, name, "has no destination entity")
            return nil
        }
        // Without an inverse: a one-way relationship, as Core Data takes it (with a warning).
        let inverse = element[attribute: "inverseName"]
        if Self.flag(element, "transient") {
            refuse(entity, name, "transient relationships are not supported")
            return nil
        }
        let isToMany = Self.flag(element, "toMany")
        var counts: [String: Int] = [:]
        if isToMany {
            // Xcode writes maxCount="1" on every to-one; on a to-many, 0 means no limit.
            for key in ["minCount", "maxCount"] {
                guard let text = element[attribute: key] else { continue }
                guard let count = Int(text), count >= 0 else {
                    refuse(entity, name, "\(key) \"\(text)\" is not a whole number, 0 or more")
                    continue
                }
                if count > 0 { counts[key] = count }
            }
        }
        let ruleName = element[attribute: "deletionRule"] ?? "Nullify"
        guard let rule = Self.deleteRules[ruleName] else {
            refuse(entity, name, "delete rule \(ruleName) is not one of Nullify, Cascade, Deny, No Action")
            return nil
        }
        // A non-optional to-many means at least one destination, as in Core Data.
        return RelationshipDescription(name: name, destination: destination, inverse: inverse, isToMany: isToMany, deleteRule: rule,
                                       isOptional: Self.flag(element, "optional"), minCount: counts["minCount"], maxCount: counts["maxCount"],
                                       isOrdered: isToMany && Self.flag(element, "ordered"), renamingIdentifier: element[attribute: "elementID"])
    }
}
