import ManagedStoreCore

/// The `fetch` and `var.NAME` query parameters of one entity's fetch in the model's OpenAPI
/// document: `fetch` takes the names of the entity's fetch request templates, and each of their
/// variables is a parameter of its own, typed as what it is compared with. An entity without
/// templates has no `fetch` parameter (the server answers 400 to one).
enum TemplateParameters {
    static func specializing(_ operation: JSONValue, entity: EntityDescription, model: ManagedObjectModel) -> JSONValue {
        guard case .object(var members) = operation, let index = members.firstIndex(where: { $0.0 == "parameters" }),
              var parameters = members[index].1.arrayValue,
              let fetch = parameters.firstIndex(where: { $0["name"]?.stringValue == "fetch" }) else { return operation }
        let templates = model.fetchRequestTemplates.filter { $0.entityName == entity.name }
        guard !templates.isEmpty else {
            parameters.remove(at: fetch)
            members[index].1 = .array(parameters)
            return .object(members)
        }
        parameters[fetch] = replacingSchema(parameters[fetch], with: .object([("type", .string("string")),
                                                                             ("enum", .array(templates.map { .string($0.name) }))]))
        var seen: Set<String> = []
        for template in templates {
            for variable in model.variables(ofFetchRequestTemplate: template.name) ?? [] where seen.insert(variable.name).inserted {
                let meets = variable.keyPath.map { ", compared with `\($0)`" } ?? ""
                parameters.append(.object([
                    ("name", .string("var." + variable.name)),
                    ("in", .string("query")),
                    ("description", .string("$\(variable.name) of the template named by `fetch`: a \(variable.typeName ?? "string")\(meets)"
                                            + (variable.isList ? ", comma-separated values" : "") + ".")),
                    ("schema", .object([("type", .string("string"))])),
                ]))
            }
        }
        members[index].1 = .array(parameters)
        return .object(members)
    }

    private static func replacingSchema(_ parameter: JSONValue, with schema: JSONValue) -> JSONValue {
        guard case .object(var members) = parameter, let index = members.firstIndex(where: { $0.0 == "schema" }) else { return parameter }
        members[index].1 = schema
        return .object(members)
    }
}
