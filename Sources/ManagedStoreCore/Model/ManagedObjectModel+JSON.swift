import Foundation

// The JSON model format of the API contract, read and written.

extension ManagedObjectModel {
    /// Loads a model from the JSON model format; every problem is reported in one `ModelError`.
    public convenience init(jsonData: some Collection<UInt8>) throws(ModelError) {
        let json: JSONValue
        do { json = try JSONParser().parse(jsonData) } catch {
            throw ModelError([ModelProblem(message: "model file is not valid JSON: \(error)")])
        }
        try self.init(json: json)
    }

    public convenience init(json: JSONValue) throws(ModelError) {
        var reader = ModelJSONReader()
        let (name, version, entities) = reader.read(json)
        let templates = reader.readTemplates(json["fetchRequests"])
        guard reader.problems.isEmpty else {
            // Check what could be read too, so one attempt reports every problem.
            throw ModelError(reader.problems + ModelChecker.problems(of: entities))
        }
        try self.init(name: name, version: version, entities: entities, fetchRequestTemplates: templates)
    }

    /// The model in its JSON format (what `init(jsonData:)` reads).
    public var jsonValue: JSONValue {
        Self.jsonValue(name: name, version: version, entities: authoredEntities, fetchRequestTemplates: fetchRequestTemplates)
    }

    /// The JSON model format of these parts; `renamingIdentifiers: false` leaves out the names
    /// elements had before, as the version hash does (`ManagedObjectModel.versionHash`).
    static func jsonValue(name: String, version: Int, entities: [EntityDescription], fetchRequestTemplates: [FetchRequestTemplate] = [],
                          renamingIdentifiers: Bool = true) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("name", .string(name)),
            ("version", .number(String(version))),
            ("entities", .array(entities.map { json(for: $0, renamingIdentifiers: renamingIdentifiers) })),
        ]
        if !fetchRequestTemplates.isEmpty { members.append(("fetchRequests", .array(fetchRequestTemplates.map(json(for:))))) }
        return .object(members)
    }

    /// A template as the JSON model format writes it: its sort keys in the API's notation.
    private static func json(for template: FetchRequestTemplate) -> JSONValue {
        var members: [(String, JSONValue)] = [("name", .string(template.name)), ("entity", .string(template.entityName))]
        if let predicate = template.predicateFormat { members.append(("predicate", .string(predicate))) }
        if !template.sortDescriptors.isEmpty {
            members.append(("sort", .array(template.sortDescriptors.map { .string(($0.ascending ? "" : "-") + $0.keyPath) })))
        }
        if let limit = template.fetchLimit { members.append(("limit", .number(String(limit)))) }
        return .object(members)
    }

    private static func json(for entity: EntityDescription, renamingIdentifiers: Bool) -> JSONValue {
        /// The `renamingIdentifier` member, when there is one and it is wanted.
        func renaming(_ identifier: String?) -> [(String, JSONValue)] {
            guard renamingIdentifiers, let identifier else { return [] }
            return [("renamingIdentifier", .string(identifier))]
        }
        var members: [(String, JSONValue)] = [("name", .string(entity.name))] + renaming(entity.renamingIdentifier)
        if let parent = entity.parent { members.append(("parent", .string(parent))) }
        if entity.isAbstract { members.append(("abstract", .bool(true))) }
        members.append(("attributes", .array(entity.attributes.map { a in
            var m: [(String, JSONValue)] = [("name", .string(a.name)), ("type", .string(a.type.rawValue)),
                                            ("optional", .bool(a.isOptional))]
            if !a.defaultValue.isNull { m.append(("default", a.defaultValue.jsonValue)) }
            if let v = a.minValue { m.append(("min", v.jsonValue)) }
            if let v = a.maxValue { m.append(("max", v.jsonValue)) }
            if let v = a.minLength { m.append(("minLength", .number(String(v)))) }
            if let v = a.maxLength { m.append(("maxLength", .number(String(v)))) }
            if let v = a.pattern { m.append(("pattern", .string(v))) }
            if let v = a.valueTransformerName { m.append(("valueTransformer", .string(v))) }
            if a.isTransient { m.append(("transient", .bool(true))) }
            return .object(m + renaming(a.renamingIdentifier))
        })))
        members.append(("relationships", .array(entity.relationships.map { r in
            var m: [(String, JSONValue)] = [("name", .string(r.name)), ("destination", .string(r.destination)),
                                            ("toMany", .bool(r.isToMany)), ("inverse", r.inverse.map(JSONValue.string) ?? .null),
                                            ("deleteRule", .string(r.deleteRule.rawValue))]
            if !r.isOptional { m.append(("optional", .bool(false))) }
            if let v = r.minCount { m.append(("minCount", .number(String(v)))) }
            if let v = r.maxCount { m.append(("maxCount", .number(String(v)))) }
            if r.isOrdered { m.append(("ordered", .bool(true))) }
            return .object(m + renaming(r.renamingIdentifier))
        })))
        let lists = { (l: [[String]]) in JSONValue.array(l.map { .array($0.map(JSONValue.string)) }) }
        if !entity.fetchedProperties.isEmpty {
            members.append(("fetchedProperties", .array(entity.fetchedProperties.map { property in
                .object([("name", .string(property.name)), ("entity", .string(property.destinationEntityName))]
                        + (property.predicateFormat.map { [("predicate", JSONValue.string($0))] } ?? []))
            })))
        }
        members.append(("uniquenessConstraints", lists(entity.uniquenessConstraints)))
        members.append(("indexes", lists(entity.indexes)))
        return .object(members)
    }
}

/// Reads the JSON model format, collecting every problem instead of stopping at the first.
private struct ModelJSONReader {
    var problems: [ModelProblem] = []

    mutating func problem(_ entity: String?, _ property: String?, _ message: String) {
        problems.append(ModelProblem(entity: entity, property: property, message: message))
    }

    mutating func read(_ json: JSONValue) -> (String, Int, [EntityDescription]) {
        guard json.objectMembers != nil else {
            problem(nil, nil, "a model is a JSON object with \"name\" and \"entities\"")
            return ("", 1, [])
        }
        // "$schema" names the JSON Schema for editors (openapi/model.schema.json); it is not read.
        unknownKeys(json, allowed: ["$schema", "name", "version", "entities", "fetchRequests"], entity: nil, property: nil)
        let name = json["name"]?.stringValue ?? ""
        if name.isEmpty { problem(nil, nil, "\"name\" must be a non-empty string") }
        var version = 1
        if let v = json["version"] {
            if let n = v.int64Value, let i = Int(exactly: n) { version = i } else { problem(nil, nil, "\"version\" must be an integer") }
        }
        guard let entities = json["entities"]?.arrayValue else {
            problem(nil, nil, "\"entities\" must be an array")
            return (name, version, [])
        }
        return (name, version, entities.enumerated().compactMap { readEntity($1, position: $0) })
    }

    /// An entity's `fetchedProperties`: `{"name", "entity", "predicate"?}`, `$FETCH_SOURCE` in the
    /// predicate standing for the object asked.
    mutating func readFetchedProperties(_ json: JSONValue?, entity: String) -> [FetchedPropertyDescription] {
        guard let json else { return [] }
        guard let items = json.arrayValue else {
            problem(entity, nil, "\"fetchedProperties\" must be an array")
            return []
        }
        return items.compactMap { item in
            guard let name = item["name"]?.stringValue, let destination = item["entity"]?.stringValue else {
                problem(entity, nil, "a fetched property needs a \"name\" and an \"entity\"")
                return nil
            }
            unknownKeys(item, allowed: ["name", "entity", "predicate"], entity: entity, property: name)
            let predicate = item["predicate"]
            if let predicate, predicate.stringValue == nil { problem(entity, name, "\"predicate\" must be a string") }
            return FetchedPropertyDescription(name: name, destinationEntityName: destination, predicateFormat: predicate?.stringValue)
        }
    }

    /// The `fetchRequests` list: `{"name", "entity", "predicate"?, "sort"?: ["-key", ...], "limit"?}`.
    mutating func readTemplates(_ json: JSONValue?) -> [FetchRequestTemplate] {
        guard let json else { return [] }
        guard let items = json.arrayValue else {
            problem(nil, nil, "\"fetchRequests\" must be an array of fetch request templates")
            return []
        }
        return items.enumerated().compactMap { position, item in
            guard let name = item["name"]?.stringValue, !name.isEmpty, let entity = item["entity"]?.stringValue else {
                problem(nil, nil, "fetch request #\(position + 1) needs a \"name\" and an \"entity\"")
                return nil
            }
            let before = problems.count
            for (key, _) in item.objectMembers ?? [] where !["name", "entity", "predicate", "sort", "limit"].contains(key) {
                problem(entity, nil, "fetch request \(name): unknown key \"\(key)\"")
            }
            var template = FetchRequestTemplate(name: name, entityName: entity)
            if let predicate = item["predicate"] {
                if let text = predicate.stringValue { template.predicateFormat = text } else { problem(entity, nil, "fetch request \(name): \"predicate\" must be a string") }
            }
            if let sort = item["sort"] {
                if let keys = sort.arrayValue?.compactMap(\.stringValue), keys.count == sort.arrayValue?.count, !keys.contains(where: { $0.isEmpty || $0 == "-" }) {
                    template.sortDescriptors = keys.map { $0.hasPrefix("-") ? ObjectSortDescriptor(String($0.dropFirst()), ascending: false) : ObjectSortDescriptor($0) }
                } else {
                    problem(entity, nil, "fetch request \(name): \"sort\" must be an array of key paths, each with \"-\" before it for descending")
                }
            }
            if let limit = item["limit"] {
                if let n = limit.int64Value, n > 0, let i = Int(exactly: n) { template.fetchLimit = i } else { problem(entity, nil, "fetch request \(name): \"limit\" must be a positive integer") }
            }
            return problems.count == before ? template : nil
        }
    }

    mutating func unknownKeys(_ json: JSONValue, allowed: Set<String>, entity: String?, property: String?) {
        for (key, _) in json.objectMembers ?? [] where !allowed.contains(key) {
            problem(entity, property, "unknown key \"\(key)\"")
        }
    }

    mutating func readEntity(_ json: JSONValue, position: Int) -> EntityDescription? {
        guard let name = json["name"]?.stringValue else {
            problem(nil, nil, "entity #\(position + 1) has no \"name\" string")
            return nil
        }
        unknownKeys(json, allowed: ["name", "parent", "abstract", "attributes", "relationships", "uniquenessConstraints", "indexes",
                                    "renamingIdentifier", "fetchedProperties"],
                    entity: name, property: nil)
        var parent: String?
        if let value = json["parent"] {
            if let text = value.stringValue, !text.isEmpty { parent = text } else { problem(name, nil, "\"parent\" must be the name of an entity") }
        }
        var isAbstract = false
        if let value = json["abstract"] {
            if let flag = value.boolValue { isAbstract = flag } else { problem(name, nil, "\"abstract\" must be true or false") }
        }
        let attributes = (json["attributes"]?.arrayValue ?? []).compactMap { readAttribute($0, entity: name) }
        let relationships = (json["relationships"]?.arrayValue ?? []).compactMap { readRelationship($0, entity: name) }
        return EntityDescription(name: name, attributes: attributes, relationships: relationships,
                                 uniquenessConstraints: readLists(json["uniquenessConstraints"], entity: name, key: "uniquenessConstraints"),
                                 indexes: readLists(json["indexes"], entity: name, key: "indexes"),
                                 renamingIdentifier: readRenamingIdentifier(json, entity: name, property: nil),
                                 parent: parent, isAbstract: isAbstract, fetchedProperties: readFetchedProperties(json["fetchedProperties"], entity: name))
    }

    /// The optional `renamingIdentifier`: the element's name in an earlier version of the model.
    mutating func readRenamingIdentifier(_ json: JSONValue, entity: String, property: String?) -> String? {
        guard let value = json["renamingIdentifier"] else { return nil }
        guard let identifier = value.stringValue, !identifier.isEmpty else {
            problem(entity, property, "\"renamingIdentifier\" must be a non-empty string (the name before the rename)")
            return nil
        }
        return identifier
    }

    mutating func readLists(_ json: JSONValue?, entity: String, key: String) -> [[String]] {
        guard let json else { return [] }
        guard let lists = json.arrayValue?.map({ $0.arrayValue?.compactMap(\.stringValue) }),
              lists.allSatisfy({ $0 != nil }) else {
            problem(entity, nil, "\"\(key)\" must be an array of arrays of property names")
            return []
        }
        return lists.map { $0! }
    }

    mutating func readAttribute(_ json: JSONValue, entity: String) -> AttributeDescription? {
        guard let name = json["name"]?.stringValue else {
            problem(entity, nil, "an attribute has no \"name\" string")
            return nil
        }
        unknownKeys(json, allowed: ["name", "type", "optional", "default", "min", "max", "minLength", "maxLength", "pattern", "renamingIdentifier",
                                    "valueTransformer", "transient"],
                    entity: entity, property: name)
        guard let typeName = json["type"]?.stringValue else {
            problem(entity, name, "missing \"type\"")
            return nil
        }
        guard let type = AttributeType(rawValue: typeName) else {
            problem(entity, name, "unknown type \"\(typeName)\" (one of \(AttributeType.allCases.map(\.rawValue).joined(separator: ", ")))")
            return nil
        }
        var attribute = AttributeDescription(name: name, type: type)
        if let optional = json["optional"] {
            if let b = optional.boolValue { attribute.isOptional = b } else { problem(entity, name, "\"optional\" must be true or false") }
        }
        func value(_ key: String) -> AttributeValue? {
            guard let v = json[key] else { return nil }
            do { return try AttributeValue(json: v, type: type) } catch {
                problem(entity, name, "\"\(key)\": \(error)")
                return nil
            }
        }
        attribute.defaultValue = value("default") ?? .null
        attribute.minValue = value("min")
        attribute.maxValue = value("max")
        func length(_ key: String) -> Int? {
            guard let v = json[key] else { return nil }
            guard let n = v.int64Value, let i = Int(exactly: n), i >= 0 else {
                problem(entity, name, "\"\(key)\" must be a non-negative integer")
                return nil
            }
            return i
        }
        attribute.renamingIdentifier = readRenamingIdentifier(json, entity: entity, property: name)
        attribute.minLength = length("minLength")
        attribute.maxLength = length("maxLength")
        if let p = json["pattern"] {
            if let s = p.stringValue { attribute.pattern = s } else { problem(entity, name, "\"pattern\" must be a string") }
        }
        if let t = json["transient"] {
            if let b = t.boolValue { attribute.isTransient = b } else { problem(entity, name, "\"transient\" must be true or false") }
        }
        if let t = json["valueTransformer"] {
            if let s = t.stringValue, !s.isEmpty { attribute.valueTransformerName = s } else {
                problem(entity, name, "\"valueTransformer\" must be the name of a value transformer")
            }
        }
        return attribute
    }

    mutating func readRelationship(_ json: JSONValue, entity: String) -> RelationshipDescription? {
        guard let name = json["name"]?.stringValue else {
            problem(entity, nil, "a relationship has no \"name\" string")
            return nil
        }
        unknownKeys(json, allowed: ["name", "destination", "inverse", "toMany", "deleteRule", "optional", "minCount", "maxCount",
                                    "ordered", "renamingIdentifier"],
                    entity: entity, property: name)
        guard let destination = json["destination"]?.stringValue else {
            problem(entity, name, "missing \"destination\"")
            return nil
        }
        // The key must be there: null says "one-way" on purpose, a missing key is a mistake.
        let inverse: String?
        switch json["inverse"] {
        case .string(let text)?: inverse = text
        case .null?: inverse = nil
        case nil:
            problem(entity, name, "missing \"inverse\": every relationship names its inverse (null for a one-way relationship)")
            return nil
        default:
            problem(entity, name, "\"inverse\" must be a relationship name, or null for a one-way relationship")
            return nil
        }
        func flag(_ key: String) -> Bool? {
            guard let v = json[key] else { return nil }
            if let b = v.boolValue { return b }
            problem(entity, name, "\"\(key)\" must be true or false")
            return nil
        }
        func count(_ key: String) -> Int? {
            guard let v = json[key] else { return nil }
            if let n = v.int64Value, let i = Int(exactly: n), i >= 0 { return i }
            problem(entity, name, "\"\(key)\" must be a non-negative integer")
            return nil
        }
        // Through the initialiser, so that a non-optional to-many reads as at least one.
        var rel = RelationshipDescription(name: name, destination: destination, inverse: inverse, isToMany: flag("toMany") ?? false,
                                          isOptional: flag("optional") ?? true, minCount: count("minCount"), maxCount: count("maxCount"),
                                          isOrdered: flag("ordered") ?? false,
                                          renamingIdentifier: readRenamingIdentifier(json, entity: entity, property: name))
        if let v = json["deleteRule"] {
            if let s = v.stringValue, let rule = DeleteRule(rawValue: s) { rel.deleteRule = rule } else {
                problem(entity, name, "\"deleteRule\" must be one of nullify, cascade, deny, noAction")
            }
        }
        return rel
    }
}
