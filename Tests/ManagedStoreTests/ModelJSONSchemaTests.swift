import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore

/// The JSON Schema of the model format: one source, the file beside the OpenAPI document equal
/// to it, every built-in model valid against it, and each kind of mistake reported with where it is.
@Suite("The model format's JSON Schema")
struct ModelJSONSchemaTests {
    static let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../openapi/model.schema.json")
    static var schema: JSONValue { get throws { try JSONParser().parse(Array(ModelJSONSchema.text.utf8)) } }

    @Test("openapi/model.schema.json is the schema the command line applies (managedstore model schema writes it)")
    func fileMatches() throws {
        let text = try String(contentsOf: Self.file, encoding: .utf8)
        #expect(text == ModelJSONSchema.text + "\n", "run: .build/debug/managedstore model schema > openapi/model.schema.json")
    }

    @Test("the built-in models, and a model naming the schema, are valid; a model with a \"$schema\" key loads")
    func validModels() throws {
        for model in [ManagedObjectModel.taskTracker()] {
            #expect(JSONSchemaCheck.violations(of: model.jsonValue, against: try Self.schema) == [])
        }
        let named = #"{"$schema": "openapi/model.schema.json", "name": "M", "entities": [{"name": "A", "attributes": [{"name": "x", "type": "string"}]}]}"#
        #expect(JSONSchemaCheck.violations(of: try JSONParser().parse(Array(named.utf8)), against: try Self.schema) == [])
        #expect(try ManagedObjectModel(jsonData: Array(named.utf8)).entities.count == 1)
    }

    @Test("the README's example model follows the schema and loads")
    func readmeExample() throws {
        let readme = try String(contentsOf: Self.file.deletingLastPathComponent().appendingPathComponent("../README.md"), encoding: .utf8)
        let section = try #require(readme.range(of: "### The model format"))
        let start = try #require(readme.range(of: "```json\n", range: section.upperBound..<readme.endIndex))
        let end = try #require(readme.range(of: "```", range: start.upperBound..<readme.endIndex))
        let example = Array(readme[start.upperBound..<end.lowerBound].utf8)
        #expect(JSONSchemaCheck.violations(of: try JSONParser().parse(example), against: try Self.schema) == [])
        let model = try ManagedObjectModel(jsonData: example)
        #expect(model.name == "Tracker" && model.version == 2 && model.entities.map(\.name) == ["Project", "Task"])
    }

    static let mistakes = #"""
        {"name": "", "entities": [{"name": "9x", "attributes": [{"name": "a", "type": "int", "optional": "yes"}],
          "relationships": [{"name": "r"}], "indexes": [[]], "extra": 1}], "bogus": true}
        """#

    @Test("every violation is reported, with the JSON Pointer of the value it is about")
    func violations() throws {
        let found = JSONSchemaCheck.violations(of: try JSONParser().parse(Array(Self.mistakes.utf8)), against: try Self.schema)
        #expect(found == [
            "/name: must have at least 1 character",
            #"/entities/0/name: "9x" does not match ^[A-Za-z][A-Za-z0-9_]*$"#,
            #"/entities/0/attributes/0/type: must be one of "integer16", "integer32", "integer64", "decimal", "double", "float", "string", "boolean", "date", "binary", "uuid", "uri""#,
            "/entities/0/attributes/0/optional: must be boolean, not a string",
            #"/entities/0/relationships/0: "destination" is required"#,
            #"/entities/0/relationships/0: "inverse" is required"#,
            "/entities/0/indexes/0: must have at least 1 item",
            #"/entities/0/extra: unknown key "extra""#,
            #"/bogus: unknown key "bogus""#,
        ])
    }

    /// Python's `jsonschema` package, when this machine has it (schemathesis brings it).
    static let hasPythonJSONSchema: Bool = {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", "import jsonschema"]
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }()

    @Test("a reference validator (Python's jsonschema, draft 2020-12) agrees: the schema is sound, the tracker valid, the mistakes not",
          .enabled(if: hasPythonJSONSchema))
    func referenceValidatorAgrees() throws {
        let folder = TemporaryStore()
        let tracker = folder.directory.appendingPathComponent("tracker.json"), wrong = folder.directory.appendingPathComponent("wrong.json")
        try Data(ManagedObjectModel.taskTracker().jsonValue.serialized().utf8).write(to: tracker)
        try Data(Self.mistakes.utf8).write(to: wrong)
        let script = """
            import json, sys, jsonschema
            schema = json.load(open(sys.argv[1]))
            jsonschema.Draft202012Validator.check_schema(schema)
            validator = jsonschema.Draft202012Validator(schema)
            print(len(list(validator.iter_errors(json.load(open(sys.argv[2]))))), len(list(validator.iter_errors(json.load(open(sys.argv[3]))))))
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script, Self.file.path, tracker.path, wrong.path]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(text == "0 9\n", "errors for the tracker and for the mistakes: \(text)")
    }
}
