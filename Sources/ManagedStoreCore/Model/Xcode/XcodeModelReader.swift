import Foundation

/// Reads the `contents` file Xcode's model editor writes (an `.xcdatamodel`) into entity
/// descriptions and fetch request templates: what Core Data compiles into an
/// `NSManagedObjectModel`, read the way Core Data reads it, with the same names, types, rules
/// and defaults.
///
/// Transient attributes are read as transient (never stored); Transformable attributes as the
/// bytes their transformer writes, with the transformer's name (a server never unarchives);
/// stored fetch requests as templates with their `$VARIABLES`. What has no meaning for a store
/// a server shares is refused, each naming the entity, the property and the reason, never
/// dropped: derived attributes, configurations that split the entities between stores.
/// Fetched properties are read as the fetches they are. Parent and abstract entities are read as they are (`parentEntity`,
/// `isAbstract`); a relationship without an inverse is a one-way relationship.
/// What only Xcode or code generation uses (class names, scalar types, Spotlight, the
/// diagram's layout, user info, version hash modifiers) is left aside: it does not change
/// what is stored.
package struct XcodeModelReader {
    private(set) var problems: [ModelProblem] = []

    /// The transformer Core Data uses for a Transformable that names none.
    package static let defaultTransformerName = "NSKeyedUnarchiveFromData"

    /// What one model document holds.
    package struct Contents {
        package var entities: [EntityDescription] = []
        package var fetchRequestTemplates: [FetchRequestTemplate] = []
        package var problems: [ModelProblem] = []
    }

    /// The entities and fetch request templates of the model document `root` (the `<model>`
    /// element), and every problem that keeps it from being used.
    package static func contents(of root: XMLTreeElement) -> Contents {
        var reader = XcodeModelReader()
        guard root.name == "model" else {
            return Contents(problems: [ModelProblem(message: "not an Xcode model: the document's root is <\(root.name)>, not <model>")])
        }
        var contents = Contents()
        var configurations: [(name: String, members: Set<String>)] = []
        for child in root.children {
            switch child.name {
            case "entity": if let entity = reader.entity(child) { contents.entities.append(entity) }
            case "elements": break  // the diagram's layout
            case "configuration":
                configurations.append((child[attribute: "name"] ?? "?", Set(child.children(named: "memberEntity").compactMap { $0[attribute: "name"] })))
            case "fetchRequest":
                if let template = reader.fetchRequest(child) { contents.fetchRequestTemplates.append(template) }
            default: reader.refuse(nil, nil, "<\(child.name)> is not part of a model this version reads")
            }
        }
        // One store holds every entity: a configuration (CloudKit's "Default", say) means
        // nothing more here, unless several of them put the entities in different stores.
        if Set(configurations.map(\.members)).count > 1 {
            reader.refuse(nil, nil, "configurations " + configurations.map(\.name).joined(separator: ", ")
                          + " put entities in different stores: one store holds every entity here; keep one configuration")
        }
        contents.problems = reader.problems
        return contents
    }

    /// A `<fetchRequest>` element: a stored fetch request [fetchRequestTemplate(forName:)].
    private mutating func fetchRequest(_ element: XMLTreeElement) -> FetchRequestTemplate? {
        guard let name = element[attribute: "name"], let entity = element[attribute: "entity"] else {
            refuse(nil, nil, "a stored fetch request needs a name and an entity (\(element[attribute: "name"] ?? "no name"))")
            return nil
        }
        var template = FetchRequestTemplate(name: name, entityName: entity, predicateFormat: element[attribute: "predicateString"])
        if let text = element[attribute: "fetchLimit"] {
            guard let limit = Int(text), limit >= 0 else {
                refuse(entity, nil, "fetch request \(name): fetchLimit \(text) is not a whole number")
                return nil
            }
            if limit > 0 { template.fetchLimit = limit }  // 0 is Core Data's "no limit"
        }
        return template
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
                    // A transient is never stored: an index on it has nothing to index.
                    if Self.flag(child, "indexed") && !attribute.isTransient { entity.indexes.append([attribute.name]) }
                }
            case "relationship":
                if let relationship = relationship(child, of: name) { entity.relationships.append(relationship) }
            case "fetchedProperty":
                // Answered as the fetch it is (`FetchedPropertyDescription`).
                guard let propertyName = child[attribute: "name"], let request = child.children(named: "fetchRequest").first,
                      let destination = request[attribute: "entity"] else {
                    refuse(name, child[attribute: "name"], "a fetched property needs a name and a fetch request naming its entity")
                    continue
                }
                entity.fetchedProperties.append(FetchedPropertyDescription(name: propertyName, destinationEntityName: destination,
                                                                           predicateFormat: request[attribute: "predicateString"]))
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
        let isTransient = Self.flag(element, "transient")
        if Self.flag(element, "derived") || element[attribute: "derivationExpression"] != nil {
            refuse(entity, name, "derived attributes are not supported: a server cannot compute what the app's code derives; store the value, or compute it in the client")
            return nil
        }
        // A Transformable is stored as the bytes its transformer wrote (a BLOB in Core Data's
        // own store too): kept and served as they are, the transformer's name with them. No
        // transformer is run here, Foundation's secure ones included: a server does not unarchive.
        var transformer: String?
        if typeName == "Transformable" {
            transformer = element[attribute: "valueTransformerName"] ?? Self.defaultTransformerName
        }
        guard let type = transformer == nil ? Self.attributeTypes[typeName] : .binary else {
            let undefined = typeName == "Undefined" ? ": an attribute whose values only the app's code knows" : ""
            refuse(entity, name, "attribute type \(typeName) is not supported\(undefined)")
            return nil
        }
        var attribute = AttributeDescription(name: name, type: type, isOptional: Self.flag(element, "optional"),
                                             renamingIdentifier: element[attribute: "elementID"], valueTransformerName: transformer,
                                             isTransient: isTransient)
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

    /// A value as the model file writes it for `type`, read as Core Data reads it: numbers in
    /// C notation ("3", "0.0", "1e3"), YES and NO for every number and boolean type (Xcode has
    /// written YES on an Integer 32, and "0.0" for NO), dates as seconds since 2001.
    static func value(_ text: String, _ type: AttributeType) -> AttributeValue? {
        if type.isOrdered && type != .date, let flag = yesOrNo(text) {
            return value(flag ? "1" : "0", type)
        }
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
            if let flag = yesOrNo(text) { return .boolean(flag) }
            return Double(text).map { .boolean($0 != 0) }
        case .date: return Double(text).map { .date(Date(timeIntervalSinceReferenceDate: $0)) }
        case .binary: return nil
        case .uuid: return UUID(uuidString: text).map(AttributeValue.uuid)
        case .uri: return URL(string: text).map(AttributeValue.uri)
        }
    }

    /// YES or NO (and the spellings Foundation's `boolValue` takes), else nil.
    private static func yesOrNo(_ text: String) -> Bool? {
        switch text {
        case "YES", "yes", "Yes", "true", "TRUE", "True": return true
        case "NO", "no", "No", "false", "FALSE", "False": return false
        default: return nil
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
