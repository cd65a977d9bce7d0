import Foundation
import ManagedStoreCore

/// The OpenAPI document of the loaded model, as PostgREST's describes its tables: the generic
/// document (`openapi/openapi.yaml`) with each path under `/v1/objects/{entity}` written out
/// once per entity (`/v1/objects/Task/{pk}`, operation IDs `getTask`, `insertTask`, ...),
/// whose bodies and answers are that entity's own schemas (`EntitySchemas`). A generator then
/// makes typed clients, and a fuzzer reaches real objects instead of 404s.
package enum ModelOpenAPI {
    /// The document for `model` (the generic one, should it not parse: it is checked in CI).
    package static func document(for model: ManagedObjectModel) -> JSONValue {
        guard let generic = try? JSONParser().parse(Array(OpenAPIDocument.json.utf8)) else { return .object([]) }
        return document(generic, model: model)
    }

    package static func document(_ generic: JSONValue, model: ManagedObjectModel) -> JSONValue {
        var document = generic
        document = replacing("paths", in: document) { paths in
            .object((paths.objectMembers ?? []).flatMap { path, item -> [(String, JSONValue)] in
                guard path.contains("{entity}") else { return [(path, item)] }
                if path.contains("{fetchedProperty}") { return fetchedPropertyPaths(path, item, model: model) }
                return model.entities.map { entity in
                    (path.replacingOccurrences(of: "{entity}", with: entity.name), pathItem(item, entity: entity, model: model))
                }
            })
        }
        let parameterSchemas = ModelParameterSchemas(model: model)
        document = replacing("components", in: document) { components in
            var components = replacing("schemas", in: components) { schemas in
                var members = schemas.objectMembers ?? []
                if let index = members.firstIndex(where: { $0.0 == "EntityNames" }), let names = parameterSchemas.entityNames {
                    members[index].1 = names
                }
                // What a transaction answers in `objects`: one of the model's objects, or a deletion.
                let touched = JSONValue.object([
                    ("description", .string("An object as a GET answers it, or a deleted one as {_id, _deleted: true}.")),
                    ("oneOf", .array(model.entities.map { .object([("$ref", .string("#/components/schemas/\($0.name)"))]) }
                                     + [.object([("$ref", .string("#/components/schemas/DeletedObject"))])])),
                ])
                for (name, schema) in TransactionSchemas(model: model).components + [("TouchedObject", touched)] {
                    if let index = members.firstIndex(where: { $0.0 == name }) { members[index].1 = schema } else { members.append((name, schema)) }
                }
                return .object(members + model.entities.flatMap { entity -> [(String, JSONValue)] in
                    let schemas = EntitySchemas(entity: entity, model: model)
                    // A parameter whose pattern would list too many key paths keeps the generic schema.
                    func specific(_ schema: JSONValue?, generic: String) -> JSONValue {
                        schema ?? .object([("$ref", .string("#/components/schemas/" + generic))])
                    }
                    return [(entity.name, schemas.object), (entity.name + "Values", schemas.values), (entity.name + "Insert", schemas.insert),
                            (entity.name + "BatchValues", schemas.batchValues),
                            (entity.name + "FetchResult", fetchResult(kinds(of: entity, in: model))),
                            (entity.name + "PropertyNames", specific(parameterSchemas.propertyNames(entity), generic: "PropertyNames")),
                            (entity.name + "IncludePaths", specific(parameterSchemas.includePaths(entity), generic: "IncludePaths")),
                            (entity.name + "SortKeys", specific(parameterSchemas.sortKeys(entity), generic: "SortKeys")),
                            (entity.name + "AggregateSelect", specific(parameterSchemas.aggregateSelect(entity), generic: "AggregateSelect"))]
                })
            }
            components = replacing("parameters", in: components) { parameters in
                // `fields` and `include` of each entity: the generic parameter with the entity's schema.
                .object((parameters.objectMembers ?? []) + model.entities.flatMap { entity -> [(String, JSONValue)] in
                    ["Fields", "Include"].map { name in
                        (entity.name + name, rewritingReferences(parameters[name] ?? .null, entity: entity.name, method: "get"))
                    }
                })
            }
            components = replacing("responses", in: components) { responses in
                let oneObject = responses["OneObject"] ?? .null
                return .object((responses.objectMembers ?? []) + model.entities.map { entity in
                    (entity.name + "OneObject", rewritingReferences(oneObject, entity: entity.name, method: "get"))
                })
            }
            return components
        }
        document = ModelExamples(model: model).specializingModelWide(document)
        document = replacing("info", in: document) { info in
            replacing("description", in: info) { text in
                .string((text.stringValue ?? "") + "\nThis document describes the loaded model, \(model.name) (version \(model.version)): "
                        + "one path per entity, with its own schemas. The generic document is openapi/openapi.yaml in the repository.\n")
            }
        }
        return document
    }

    /// A path item under `/v1/objects/{entity}` for one entity: no `entity` parameter, each
    /// operation named after the entity, and the entity's schemas in place of the generic ones.
    private static func pathItem(_ item: JSONValue, entity description: EntityDescription, model: ManagedObjectModel) -> JSONValue {
        let entity = description.name
        return .object((item.objectMembers ?? []).compactMap { key, value -> (String, JSONValue)? in
            if key == "parameters" {
                let kept = (value.arrayValue ?? []).filter { $0["$ref"]?.stringValue != "#/components/parameters/Entity" }
                return kept.isEmpty ? nil : (key, .array(kept))
            }
            guard methods.contains(key) else { return (key, value) }
            // An abstract entity has no objects of its own to insert (the server answers 400).
            if key == "post" && description.isAbstract { return nil }
            var operation = rewritingReferences(value, entity: entity, method: key)
            operation = ModelExamples(model: model).specializing(operation, entity: description)
            if key == "get" && operation["operationId"]?.stringValue == "fetchObjects" {
                operation = TemplateParameters.specializing(operation, entity: description, model: model)
            }
            operation = replacing("operationId", in: operation) { .string(operationID($0.stringValue ?? key, entity: entity)) }
            operation = replacing("tags", in: operation) { _ in .array([.string(entity)]) }
            return (key, operation)
        })
    }

    /// The fetched-property path written out once per entity and fetched property
    /// (`/v1/objects/Folder/{pk}/recentNotes`), answering its destination's objects with the
    /// destination's schemas; no path for a model without fetched properties.
    private static func fetchedPropertyPaths(_ path: String, _ item: JSONValue, model: ManagedObjectModel) -> [(String, JSONValue)] {
        model.entities.flatMap { entity in
            entity.fetchedProperties.compactMap { property -> (String, JSONValue)? in
                guard model.entity(named: property.destinationEntityName) != nil else { return nil }
                let concrete = path.replacingOccurrences(of: "{entity}", with: entity.name)
                    .replacingOccurrences(of: "{fetchedProperty}", with: property.name)
                let operationName = "fetch" + entity.name + property.name.prefix(1).uppercased() + property.name.dropFirst()
                return (concrete, .object((item.objectMembers ?? []).compactMap { key, value -> (String, JSONValue)? in
                    if key == "parameters" {
                        let kept = (value.arrayValue ?? []).filter {
                            $0["$ref"]?.stringValue != "#/components/parameters/Entity" && $0["name"]?.stringValue != "fetchedProperty"
                        }
                        return (key, .array(kept))
                    }
                    guard methods.contains(key) else { return (key, value) }
                    var operation = rewritingReferences(value, entity: property.destinationEntityName, method: key)
                    operation = replacing("operationId", in: operation) { _ in .string(operationName) }
                    operation = replacing("tags", in: operation) { _ in .array([.string(entity.name)]) }
                    return (key, operation)
                }))
            }
        }
    }

    private static let methods: Set<String> = ["get", "put", "post", "delete", "patch", "head", "options"]

    /// `getObject` → `getTask`, `fetchObjects` → `fetchTask`, `batchUpdate` → `batchUpdateTask`:
    /// the names a generated client's methods get.
    static func operationID(_ generic: String, entity: String) -> String {
        for suffix in ["Objects", "Object"] where generic.hasSuffix(suffix) {
            return generic.dropLast(suffix.count) + entity
        }
        return generic + entity
    }

    /// Every `$ref` to a generic object schema made the entity's: what POST and PUT send is a
    /// whole object (`EInsert`), what PATCH sends are values (`EValues`), what a batch update
    /// sends `EBatchValues`; parameters whose values are the entity's names get its patterns.
    private static func rewritingReferences(_ value: JSONValue, entity: String, method: String) -> JSONValue {
        switch value {
        case .object(let members):
            return .object(members.map { key, member in
                guard key == "$ref", let target = member.stringValue else { return (key, rewritingReferences(member, entity: entity, method: method)) }
                switch target {
                case "#/components/schemas/Object": return (key, .string("#/components/schemas/\(entity)"))
                case "#/components/schemas/ObjectValues":
                    return (key, .string("#/components/schemas/\(entity)" + (method == "patch" ? "Values" : "Insert")))
                case "#/components/schemas/FetchResult": return (key, .string("#/components/schemas/\(entity)FetchResult"))
                case "#/components/responses/OneObject": return (key, .string("#/components/responses/\(entity)OneObject"))
                case "#/components/schemas/BatchValues", "#/components/schemas/PropertyNames", "#/components/schemas/IncludePaths",
                     "#/components/schemas/SortKeys", "#/components/schemas/AggregateSelect":
                    return (key, .string("#/components/schemas/\(entity)" + target.dropFirst("#/components/schemas/".count)))
                case "#/components/parameters/Fields", "#/components/parameters/Include":
                    return (key, .string("#/components/parameters/\(entity)" + target.dropFirst("#/components/parameters/".count)))
                default: return (key, member)
                }
            })
        case .array(let elements):
            return .array(elements.map { rewritingReferences($0, entity: entity, method: method) })
        default:
            return value
        }
    }

    /// The entities whose objects a fetch of `entity` answers: itself unless abstract, and
    /// every concrete entity below it (each object with its own schema).
    static func kinds(of entity: EntityDescription, in model: ManagedObjectModel) -> [String] {
        let kinds = model.kindNames(of: entity.name)
        return kinds.isEmpty ? [entity.name] : kinds
    }

    private static func fetchResult(_ kinds: [String]) -> JSONValue {
        let reference = { (name: String) in JSONValue.object([("$ref", .string("#/components/schemas/\(name)"))]) }
        let item = kinds.count == 1 ? reference(kinds[0]) : .object([("oneOf", .array(kinds.map(reference)))])
        return .object([
            ("type", .string("object")),
            ("required", .array([.string("objects"), .string("next")])),
            ("properties", .object([
                ("objects", .object([("type", .string("array")), ("items", item)])),
                ("next", .object([("type", .array([.string("string"), .string("null")])),
                                  ("description", .string("The cursor of the next page (pass it as `after`), or null on the last page."))])),
                ("count", .object([("type", .string("integer")), ("minimum", .number("0"))])),
            ])),
        ])
    }

    /// `object` with the member `key` replaced by `transform` of it (added when missing).
    private static func replacing(_ key: String, in object: JSONValue, _ transform: (JSONValue) -> JSONValue) -> JSONValue {
        var members = object.objectMembers ?? []
        if let index = members.lastIndex(where: { $0.0 == key }) {
            members[index].1 = transform(members[index].1)
        } else {
            members.append((key, transform(.null)))
        }
        return .object(members)
    }
}
