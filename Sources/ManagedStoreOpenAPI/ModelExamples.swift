import ManagedStoreCore

/// The examples of the served document, made from the loaded model: the generic document's
/// examples name the demo model's entities and properties (`priority >= 2`, a `Task` body),
/// which another model would refuse, and generated clients, documentation viewers and
/// schemathesis all take examples as requests that work.
struct ModelExamples {
    let model: ManagedObjectModel

    /// `operation` under `/v1/objects/{Entity}...` with examples of `entity`: its parameters'
    /// (`where`, `having`, `select`, `sort`) and its JSON body's, which the entity's schema
    /// then gives (`EInsert`'s example).
    func specializing(_ operation: JSONValue, entity: EntityDescription) -> JSONValue {
        var operation = operation
        if let parameters = operation["parameters"]?.arrayValue {
            operation = setting("parameters", in: operation, to: .array(parameters.map { parameter in
                guard let name = parameter["name"]?.stringValue, parameter["in"]?.stringValue == "query" else { return parameter }
                let isAggregate = operation["operationId"]?.stringValue?.hasPrefix("aggregate") == true
                return withExample(parameter, example(forQuery: name, of: entity, aggregate: isAggregate))
            }))
        }
        if let body = operation["requestBody"], let content = body["content"], let json = content["application/json"] {
            let plain = JSONValue.object((json.objectMembers ?? []).filter { $0.0 != "examples" && $0.0 != "example" })
            operation = setting("requestBody", in: operation, to: setting("content", in: body, to: setting("application/json", in: content, to: plain)))
        }
        return operation
    }

    /// The document's examples that name entities outside `/v1/objects`: a transaction of one
    /// insert of the model's first insertable entity, and the change feed's `entity`.
    func specializingModelWide(_ document: JSONValue) -> JSONValue {
        var document = document
        guard let paths = document["paths"] else { return document }
        var updated = paths
        if let transactions = paths["/v1/transactions"], let post = transactions["post"], let body = post["requestBody"],
           let content = body["content"], let json = content["application/json"] {
            var plain = JSONValue.object((json.objectMembers ?? []).filter { $0.0 != "examples" })
            if let (entity, values) = StartupExamples.insertExample(in: model) {
                let operations: JSONValue = .object([("operations", .array([.object([
                    ("op", .string("insert")), ("entity", .string(entity.name)), ("ref", .string("n1")), ("values", values),
                ])]))])
                plain = setting("examples", in: plain, to: .object([("insert", .object([
                    ("summary", .string("An insert with a ref (\(model.name))")), ("value", operations),
                ]))]))
            }
            let newPost = setting("requestBody", in: post, to: setting("content", in: body, to: setting("application/json", in: content, to: plain)))
            updated = setting("/v1/transactions", in: updated, to: setting("post", in: transactions, to: newPost))
        }
        if let changes = paths["/v1/changes"], let get = changes["get"], let parameters = get["parameters"]?.arrayValue {
            let names = model.entities.prefix(2).map(\.name).joined(separator: ",")
            let newGet = setting("parameters", in: get, to: .array(parameters.map { parameter in
                parameter["name"]?.stringValue == "entity" && parameter["in"]?.stringValue == "query"
                    ? withExample(parameter, names.isEmpty ? nil : .string(names)) : parameter
            }))
            updated = setting("/v1/changes", in: updated, to: setting("get", in: changes, to: newGet))
        }
        document = setting("paths", in: document, to: updated)
        return document
    }

    /// An example of the query parameter `name` on `entity`, or nil for one that needs none.
    private func example(forQuery name: String, of entity: EntityDescription, aggregate: Bool) -> JSONValue?? {
        let attribute = entity.attributes.first
        switch name {
        case "where":
            return .some(attribute.map { .string("\($0.name) != nil") })
        case "sort":
            if aggregate { return .some(.string("-count")) }
            return .some(attribute.map { .string("-\($0.name)") })
        case "select":
            return .some(.string((attribute.map { "\($0.name)," } ?? "") + "count()"))
        case "having":
            return .some(.string("count > 0"))
        default:
            return .none  // left as it is
        }
    }

    /// `parameter` with its generic `example`/`examples` replaced by `example` (removed when
    /// `example` is `.some(nil)`); untouched when `.none`.
    private func withExample(_ parameter: JSONValue, _ example: JSONValue??) -> JSONValue {
        guard case .some(let replacement) = example else { return parameter }
        var members = (parameter.objectMembers ?? []).filter { $0.0 != "example" && $0.0 != "examples" }
        if let replacement { members.append(("example", replacement)) }
        return .object(members)
    }

    /// `object` with the member `key` set to `value` (appended when missing).
    private func setting(_ key: String, in object: JSONValue, to value: JSONValue) -> JSONValue {
        var members = object.objectMembers ?? []
        if let index = members.firstIndex(where: { $0.0 == key }) { members[index].1 = value } else { members.append((key, value)) }
        return .object(members)
    }
}
