import Foundation
import ManagedStoreCore

/// JSON Schemas of one entity's objects, as the OpenAPI document of a loaded model shows them
/// (`ModelOpenAPI`): what a typed client is generated from.
struct EntitySchemas {
    let entity: EntityDescription
    let model: ManagedObjectModel

    /// An object as the server answers it: `_id`, `_version`, and the properties asked for
    /// (all unless `fields=`), relationships as IDs (or embedded objects with `include=`).
    var object: JSONValue {
        var properties: [(String, JSONValue)] = [
            ("_id", Self.id(of: entity.name)),
            ("_version", .object([("type", .string("integer")), ("format", .string("int64")), ("minimum", .number("1"))])),
        ]
        properties += entity.attributes.map { ($0.name, Self.attribute($0)) }
        properties += entity.relationships.map { ($0.name, relationship($0, embeddable: true)) }
        return .object([
            ("type", .string("object")),
            ("description", .string("A \(entity.name). Every property is present unless `fields` names some.")),
            ("required", .array([.string("_id"), .string("_version")])),
            ("properties", .object(properties)),
            ("additionalProperties", .bool(false)),
        ])
    }

    /// Values to set: every property optional (PATCH).
    var values: JSONValue { body(requiring: false) }

    /// Values a batch update sets on every match: as `values`, without `_version` (a batch
    /// update is based on no one version).
    var batchValues: JSONValue { body(requiring: false, versioned: false) }

    /// The values of a transaction's insert (`requiring`) or update: relationships may name
    /// the refs of the transaction's inserts as well as object IDs, and the base version is
    /// the operation's `version`, not a value.
    func transactionValues(requiring: Bool) -> JSONValue { body(requiring: requiring, versioned: false, refs: true) }

    /// A whole object to write (POST, PUT): the mandatory attributes without a default are
    /// required; what is left out takes its default (or null).
    var insert: JSONValue { body(requiring: true) }

    private func body(requiring: Bool, versioned: Bool = true, refs: Bool = false) -> JSONValue {
        var properties: [(String, JSONValue)] = []
        if versioned {
            properties.append(("_version", Self.version("The version the change is based on (as If-Match).")))
            properties.append(("_id", .object([("type", .string("string")),
                                               ("description", .string("Ignored (the path names the object): a body read back from a GET may keep it."))])))
        }
        // A default belongs to an insert only: in a PATCH's schema a generated client would send
        // it for every property left out (openapi-python-client does), resetting what it did
        // not mean to change.
        properties += entity.attributes.map { ($0.name, Self.attribute($0, showingDefault: requiring)) }
        properties += entity.relationships.map { ($0.name, refs ? Self.referenceOrRef($0) : relationship($0, embeddable: false)) }
        var members: [(String, JSONValue)] = [("type", .string("object")), ("properties", .object(properties)),
                                              ("additionalProperties", .bool(false))]
        // A batch update that sets nothing is 400.
        if !versioned && !refs { members.append(("minProperties", .number("1"))) }
        if requiring {
            // A to-many with a minimum count must be given: left out, it holds nothing.
            let required = (entity.attributes.filter { !$0.isOptional && $0.defaultValue.isNull }.map(\.name)
                            + entity.relationships.filter { ($0.minCount ?? 0) > 0 }.map(\.name)).map(JSONValue.string)
            if !required.isEmpty { members.append(("required", .array(required))) }
            if let example { members.append(("example", example)) }
        }
        return .object(members)
    }

    /// Whether an insert must give some value (a mandatory attribute without a default, or a
    /// to-many with a minimum count).
    var hasRequiredAttributes: Bool {
        entity.attributes.contains { !$0.isOptional && $0.defaultValue.isNull } || entity.relationships.contains { ($0.minCount ?? 0) > 0 }
    }

    /// An insert that the server accepts: every required attribute with a value inside its
    /// rules. None when a required attribute has a pattern (no value is known to match it).
    var example: JSONValue? {
        // Objects it must hold exist only in a store: no body is known to be accepted.
        guard !entity.relationships.contains(where: { ($0.minCount ?? 0) > 0 }) else { return nil }
        var members: [(String, JSONValue)] = []
        for attribute in entity.attributes where !attribute.isOptional && attribute.defaultValue.isNull {
            guard attribute.pattern == nil, let value = Self.example(attribute) else { return nil }
            members.append((attribute.name, value))
        }
        return .object(members)
    }

    // MARK: Properties

    /// A version: a whole number from 1 that fits 64 bits.
    static func version(_ description: String) -> JSONValue {
        .object([("type", .string("integer")), ("format", .string("int64")), ("minimum", .number("1")),
                 ("maximum", .number(String(Int64.max))), ("description", .string(description))])
    }

    /// In a transaction: an object ID of the destination, or the ref of an earlier insert (or
    /// null, for a to-one); an array of them for to-many.
    static func referenceOrRef(_ relationship: RelationshipDescription) -> JSONValue {
        let one = JSONValue.object([("type", .string("string")), ("minLength", .number("1"))])
        if relationship.isToMany {
            return .object(toManyType(relationship, nullable: true) + [("items", one)] + countBounds(relationship)
                           + [("description", .string("\(relationship.destination) IDs or refs of earlier inserts; null empties it, as [] does."))])
        }
        return .object([("type", .array([.string("string"), .string("null")])), ("minLength", .number("1")),
                        ("description", .string("A \(relationship.destination) ID, the ref of an earlier insert, or null."))])
    }

    static func id(of entity: String) -> JSONValue { id(ofAnyOf: [entity]) }

    /// An ID of an object of any of `entities`: a relationship to a parent entity holds
    /// objects of each of its kinds (`ManagedObjectModel.kindNames(of:)`).
    static func id(ofAnyOf entities: [String]) -> JSONValue {
        let names = entities.count == 1 ? entities[0] : "(?:" + entities.joined(separator: "|") + ")"
        return .object([("type", .string("string")), ("pattern", .string("^\(names)/[1-9][0-9]*$")),
                        ("example", .string("\(entities.first ?? "Entity")/1"))])
    }

    static func attribute(_ attribute: AttributeDescription, showingDefault: Bool = true) -> JSONValue {
        var members: [(String, JSONValue)]
        switch attribute.type {
        case .integer16, .integer32, .integer64:
            let range = attribute.type.integerRange ?? Int64.min...Int64.max
            let low = max(range.lowerBound, attribute.minValue?.int64 ?? range.lowerBound)
            let high = min(range.upperBound, attribute.maxValue?.int64 ?? range.upperBound)
            members = [("type", .string("integer")), ("format", .string(attribute.type == .integer64 ? "int64" : "int32")),
                       ("minimum", .number(String(low))), ("maximum", .number(String(high)))]
        case .double, .float:
            members = [("type", .string("number")), ("format", .string(attribute.type == .float ? "float" : "double"))]
            if let low = attribute.minValue?.double { members.append(("minimum", AttributeValue.double(low).jsonValue)) }
            if let high = attribute.maxValue?.double { members.append(("maximum", AttributeValue.double(high).jsonValue)) }
        case .decimal:
            members = [("type", .string("string")), ("format", .string("decimal")),
                       ("pattern", .string(#"^[-+]?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$"#)),
                       ("description", .string("An exact decimal, as a string."))]
        case .string:
            members = [("type", .string("string"))]
            if let n = attribute.minLength { members.append(("minLength", .number(String(n)))) }
            if let n = attribute.maxLength { members.append(("maxLength", .number(String(n)))) }
            if let pattern = attribute.pattern { members.append(("pattern", .string("^(?:\(pattern))$"))) }
        case .boolean:
            members = [("type", .string("boolean"))]
        case .date:
            members = [("type", .string("string")), ("format", .string("date-time"))]
        case .binary:
            members = [("type", .string("string")), ("contentEncoding", .string("base64"))]
        case .uuid:
            members = [("type", .string("string")), ("format", .string("uuid"))]
        case .uri:
            members = [("type", .string("string")), ("format", .string("uri"))]
        }
        if attribute.isOptional {
            // JSON Schema 2020-12 (OpenAPI 3.1): a list of types admits null.
            members[0].1 = .array([members[0].1, .string("null")])
        }
        if showingDefault, !attribute.defaultValue.isNull { members.append(("default", attribute.defaultValue.jsonValue)) }
        return .object(members)
    }

    /// An ID of the destination (or null), an array of them for to-many; in answers with
    /// `include`, embedded objects in their place.
    func relationship(_ relationship: RelationshipDescription, embeddable: Bool) -> JSONValue {
        let kinds = model.kindNames(of: relationship.destination)
        let id = Self.id(ofAnyOf: kinds.isEmpty ? [relationship.destination] : kinds)
        let one: JSONValue = embeddable ? .object([("anyOf", .array([id, .object([("type", .string("object"))])]))]) : id
        if relationship.isToMany {
            // In a request, null empties the relationship, as [] does.
            return .object(Self.toManyType(relationship, nullable: !embeddable) + [("items", one)] + Self.countBounds(relationship)
                           + [("description", .string("\(relationship.destination) IDs, in "
                                                      + (relationship.isOrdered ? "the relationship's order" : "primary-key order")
                                                      + (embeddable ? "." : "; null empties it, as [] does.")))])
        }
        // "An ID or null" as one schema with a list of types (JSON Schema 2020-12), the pattern
        // beside it (it applies to strings only): Apple's swift-openapi-generator skips a
        // `{"type": "null"}` branch of an anyOf, and a property it skips is then refused in
        // answers by `additionalProperties: false`.
        let nullableID = JSONValue.object([("type", .array([.string("string"), .string("null")]))]
                                          + (id.objectMembers ?? []).filter { $0.0 != "type" })
        if embeddable {
            return .object([("anyOf", .array([nullableID, .object([("type", .string("object"))])])),
                            ("description", .string("A \(relationship.destination) ID, or null (with `include`, the object)."))])
        }
        return .object((nullableID.objectMembers ?? []) + [("description", .string("A \(relationship.destination) ID, or null."))])
    }

    /// A to-many's JSON type: an array, or in a request also null (which empties it) unless it
    /// must hold at least one object.
    private static func toManyType(_ relationship: RelationshipDescription, nullable: Bool) -> [(String, JSONValue)] {
        let nullable = nullable && (relationship.minCount ?? 0) == 0
        return [("type", nullable ? .array([.string("array"), .string("null")]) : .string("array"))]
    }

    /// A to-many's count rule (`minCount`, `maxCount`) as the array's bounds.
    private static func countBounds(_ relationship: RelationshipDescription) -> [(String, JSONValue)] {
        var bounds: [(String, JSONValue)] = []
        if let low = relationship.minCount, low > 0 { bounds.append(("minItems", .number(String(low)))) }
        if let high = relationship.maxCount { bounds.append(("maxItems", .number(String(high)))) }
        return bounds
    }

    /// A value inside `attribute`'s type and range (length for strings).
    static func example(_ attribute: AttributeDescription) -> JSONValue? {
        switch attribute.type {
        case .integer16, .integer32, .integer64:
            let low = attribute.minValue?.int64 ?? 0, high = attribute.maxValue?.int64 ?? Int64.max
            return .number(String(min(max(0, low), high)))
        case .double, .float:
            let low = attribute.minValue?.double ?? 0, high = attribute.maxValue?.double ?? .greatestFiniteMagnitude
            return AttributeValue.double(min(max(0, low), high)).jsonValue
        case .decimal: return .string("1.5")
        case .string:
            let length = max(attribute.minLength ?? 1, min(7, attribute.maxLength ?? 7))
            guard length <= (attribute.maxLength ?? .max) else { return nil }
            return .string(String("example".prefix(length)) + String(repeating: "x", count: max(0, length - 7)))
        case .boolean: return .bool(false)
        case .date:
            guard attribute.minValue == nil, attribute.maxValue == nil else { return nil }
            return .string("2026-01-01T00:00:00.000Z")
        case .binary: return .string("aGVsbG8=")
        case .uuid: return .string("3f2c1a9e-8b7d-4c6e-9f10-2a3b4c5d6e7f")
        case .uri: return .string("https://example.com/")
        }
    }
}

private extension AttributeValue {
    var int64: Int64? { if case .integer(let v) = self { return v } else { return nil } }
    var double: Double? {
        switch self {
        case .double(let v): return v
        case .float(let v): return Double(v)
        case .integer(let v): return Double(v)
        default: return nil
        }
    }
}
