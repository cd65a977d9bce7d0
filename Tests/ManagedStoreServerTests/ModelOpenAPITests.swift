import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite
@testable import ManagedStoreHTTP
@testable import ManagedStoreOpenAPI
@testable import ManagedStoreServer

/// The served OpenAPI document describes the loaded model: a path per entity, typed schemas,
/// examples the server accepts.
@Suite("The model's OpenAPI document")
struct ModelOpenAPITests {
    static func document(_ server: ServerHarness, path: String = "/v1/openapi.json") throws -> JSONValue {
        let response = try server.request("GET", path)
        #expect(response.status == 200)
        return try JSONParser().parse(response.body)
    }

    @Test("one path per entity, no {entity} template left, unique operation IDs")
    func pathsPerEntity() throws {
        let server = try ServerHarness()
        let document = try Self.document(server)
        let paths = try #require(document["paths"]?.objectMembers).map(\.0)
        for entity in ["Project", "Task", "Tag"] {
            for path in ["/v1/objects/\(entity)", "/v1/objects/\(entity)/{pk}", "/v1/objects/\(entity)/aggregate"] {
                #expect(paths.contains(path), "\(path)")
            }
        }
        #expect(!paths.contains { $0.contains("{entity}") })
        var operationIDs: [String] = []
        for (_, item) in try #require(document["paths"]?.objectMembers) {
            for (method, operation) in item.objectMembers ?? [] where ["get", "post", "put", "patch", "delete"].contains(method) {
                operationIDs.append(try #require(operation["operationId"]?.stringValue))
            }
        }
        #expect(Set(operationIDs).count == operationIDs.count, "operation IDs are unique")
        for id in ["fetchTask", "insertTask", "getTask", "patchTask", "replaceTask", "deleteTask", "batchUpdateTask", "batchDeleteTask", "aggregateTask"] {
            #expect(operationIDs.contains(id), "\(id)")
        }
        // The YAML form: the same document (compared with PyYAML by the Python client round).
        let yaml = String(decoding: try server.request("GET", "/v1/openapi.yaml").body, as: UTF8.self)
        #expect(yaml.hasPrefix("openapi: \"3.1.0\"\n"))
        #expect(yaml.contains("\n  /v1/objects/Task/{pk}:\n") || yaml.contains("\n  \"/v1/objects/Task/{pk}\":\n"))
    }

    @Test("schemas carry the model's types, ranges, lengths, required attributes and relationship IDs")
    func schemas() throws {
        let server = try ServerHarness()
        let schemas = try #require(try Self.document(server)["components"]?["schemas"])
        let task = try #require(schemas["Task"]?["properties"])
        #expect(task["priority"]?["minimum"] == .number("0"))
        #expect(task["priority"]?["maximum"] == .number("5"))
        #expect(task["priority"]?["default"] == .number("0"))
        #expect(task["due"]?["format"]?.stringValue == "date-time")
        #expect(task["title"]?["type"]?.stringValue == "string", "a mandatory attribute is never null")
        #expect(task["estimate"]?["type"] == .array([.string("number"), .string("null")]))
        #expect(task["tags"]?["type"]?.stringValue == "array")
        // An ID or null as one schema with a list of types (what swift-openapi-generator reads).
        #expect(schemas["TaskInsert"]?["properties"]?["project"]?["pattern"]?.stringValue == "^Project/[1-9][0-9]*$")
        #expect(schemas["TaskInsert"]?["properties"]?["project"]?["type"] == .array([.string("string"), .string("null")]))
        #expect(schemas["TaskInsert"]?["required"] == .array([.string("title")]))
        #expect(schemas["TaskValues"]?["required"] == nil, "a PATCH sets what it names")
        #expect(schemas["TaskInsert"]?["additionalProperties"] == .bool(false))
        let name = try #require(schemas["Project"]?["properties"]?["name"])
        #expect(name["minLength"] == .number("1") && name["maxLength"] == .number("200"))
    }

    @Test("no schema has a form swift-openapi-generator skips: a null branch, a not, a const")
    func generatorReadableForms() throws {
        for model in [ManagedObjectModel.taskTracker(), try ModelBasedHTTPTests.library()] {
            let server = try ServerHarness(model: model)
            var found: [String] = []
            func walk(_ value: JSONValue, _ path: String) {
                switch value {
                case .object(let members):
                    for (key, member) in members {
                        if key == "not" || key == "const" { found.append("\(path)/\(key)") }
                        if key == "type", member == .string("null") { found.append("\(path): type null") }
                        walk(member, "\(path)/\(key)")
                    }
                case .array(let items):
                    for (index, item) in items.enumerated() { walk(item, "\(path)/\(index)") }
                default:
                    break
                }
            }
            walk(try Self.document(server), "#")
            #expect(found.isEmpty, "\(model.name): \(found.prefix(10))")
        }
    }

    @Test("each entity's insert example is accepted as it stands")
    func examplesWork() throws {
        let server = try ServerHarness()
        let schemas = try #require(try Self.document(server)["components"]?["schemas"])
        for entity in ["Project", "Task", "Tag"] {
            let example = try #require(schemas["\(entity)Insert"]?["example"], "\(entity) has an example")
            let response = try server.request("POST", "/v1/objects/\(entity)", json: example.serialized())
            #expect(response.status == 201, "\(entity): \(String(decoding: response.body, as: UTF8.self))")
        }
    }
}
