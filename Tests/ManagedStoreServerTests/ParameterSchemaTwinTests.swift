import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite
@testable import ManagedStoreHTTP
@testable import ManagedStoreOpenAPI
@testable import ManagedStoreServer

/// The served document's parameter schemas against the server itself: for random values made
/// of the model's names, separators and noise, a value the schema's pattern admits is accepted
/// and a value it refuses is refused (400), for `fields`, `include`, `sort`, an aggregate's
/// `select`, the change feed's `entity`, `If-Match` and `Merge-Policy`. A generated client
/// that checks patterns then refuses exactly what the server would.
@Suite("Parameter schemas agree with the server")
struct ParameterSchemaTwinTests {
    /// A parameter's schema in the served document, resolved through `$ref`s.
    static func schema(_ document: JSONValue, _ value: JSONValue?) -> JSONValue? {
        guard let value else { return nil }
        if let ref = value["$ref"]?.stringValue {
            let parts = ref.dropFirst(2).split(separator: "/").map(String.init)
            var node: JSONValue? = document
            for part in parts { node = node?[part] }
            return schema(document, node)
        }
        return value
    }

    static func parameterSchema(_ document: JSONValue, path: String, method: String, name: String) throws -> JSONValue {
        let operation = try #require(document["paths"]?[path]?[method])
        for parameter in operation["parameters"]?.arrayValue ?? [] {
            let resolved = schema(document, parameter)
            if resolved?["name"]?.stringValue == name { return try #require(schema(document, resolved?["schema"])) }
        }
        throw CocoaError(.keyValueValidation)
    }

    /// Whether `text` matches the schema's pattern (JSON Schema: anywhere, unanchored).
    static func admits(_ schema: JSONValue, _ text: String) throws -> Bool {
        if let choices = schema["enum"]?.arrayValue { return choices.contains(.string(text)) }
        let pattern = try #require(schema["pattern"]?.stringValue, "a pattern")
        let regex = try NSRegularExpression(pattern: pattern)
        return regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
    }

    /// Random text from `pieces`, 0 to `count` of them.
    static func candidate(_ pieces: [String], count: Int, using random: inout SplitMix64) -> String {
        (0..<Int.random(in: 0...count, using: &random)).map { _ in pieces.randomElement(using: &random)! }.joined()
    }

    /// One to three of `valid`, separated by commas (and spaces), and half of the time a piece
    /// of noise somewhere: close to valid, so that both sides of the pattern are drawn.
    static func mixed(_ valid: [String], using random: inout SplitMix64) -> String {
        var pieces = (0..<Int.random(in: 1...3, using: &random)).map { _ in valid.randomElement(using: &random)! }
        if Bool.random(using: &random) {
            pieces.insert(noise.randomElement(using: &random)!, at: Int.random(in: 0...pieces.count, using: &random))
        }
        return pieces.joined(separator: [",", ", ", " ,"].randomElement(using: &random)!)
    }

    static let noise = [",", ",", " ", "\t", ".", "-", "+", "[c]", "[d]", "[x]", "[]", "bogus", "_id", "Ta", "()", ":", "9"]

    struct Agreement {
        var admitted = 0, refused = 0
        var disagreements: [String] = []
        mutating func record(_ text: String, admitted: Bool, status: Int) {
            if admitted { self.admitted += 1 } else { refused += 1 }
            let accepted = (200..<300).contains(status)
            guard accepted != admitted, disagreements.count < 10 else { return }
            disagreements.append("'\(text)': the schema \(admitted ? "admits" : "refuses") it, the server answered \(status)")
        }
    }

    static func check(model: ManagedObjectModel, seed: UInt64) throws {
        let server = try ServerHarness(model: model)
        let document = try JSONParser().parse(try server.request("GET", "/v1/openapi.json").body)
        var random = SplitMix64(seed: seed)
        for entity in model.entities {
            let names = entity.attributes.map(\.name) + entity.relationships.map(\.name)
                + entity.relationships.compactMap { r in model.entity(named: r.destination).map { "\(r.name).\($0.attributes.first?.name ?? $0.relationships.first?.name ?? "x")" } }
            let relationships = entity.relationships.map(\.name)
                + entity.relationships.flatMap { r in (model.entity(named: r.destination)?.relationships ?? []).map { "\(r.name).\($0.name)" } }
            let attributes = entity.attributes.flatMap { ["\($0.name)", "-\($0.name)", "\($0.name)[c]"] }
                + entity.relationships.filter { !$0.isToMany }.compactMap { r in model.entity(named: r.destination)?.attributes.first.map { "\(r.name).\($0.name)" } }
            let path = "/v1/objects/\(entity.name)"
            for (name, valid) in [("fields", names), ("include", relationships), ("sort", attributes)] {
                let schema = try parameterSchema(document, path: path, method: "get", name: name)
                var agreement = Agreement()
                for _ in 0..<150 {
                    let text = Self.mixed(valid.isEmpty ? names : valid, using: &random)
                    guard !text.isEmpty else { continue }
                    let response = try server.request("GET", "\(path)?\(name)=\(text.queryEncoded)&limit=1")
                    agreement.record(text, admitted: try admits(schema, text), status: response.status)
                }
                #expect(agreement.disagreements.isEmpty, "\(entity.name) \(name): \(agreement.disagreements)")
                #expect(agreement.admitted >= (valid.isEmpty ? 0 : 10) && agreement.refused >= 10,
                        "\(entity.name) \(name): \(agreement.admitted) admitted, \(agreement.refused) refused")
            }
            // An aggregate's select: values with two items of one name are refused by the
            // server whatever the pattern says (documented), so they are not drawn.
            let select = try parameterSchema(document, path: path + "/aggregate", method: "get", name: "select")
            let items = ["count()", "c2:count()"] + names.flatMap { ["\($0)", "\($0).count()", "\($0).min()", "\($0).sum()", "n\($0.count):\($0).max()"] }
            var agreement = Agreement()
            for _ in 0..<250 {
                var chosen = (0..<Int.random(in: 1...3, using: &random)).map { _ in items.randomElement(using: &random)! }
                if Bool.random(using: &random) { chosen.append(Self.noise.randomElement(using: &random)!) }
                let text = chosen.joined(separator: Bool.random(using: &random) ? "," : " ,")
                guard Set(chosen.map(Self.resultName)).count == chosen.count else { continue }
                let response = try server.request("GET", "\(path)/aggregate?select=\(text.queryEncoded)")
                agreement.record(text, admitted: try admits(select, text), status: response.status)
            }
            #expect(agreement.disagreements.isEmpty, "\(entity.name) select: \(agreement.disagreements)")
            #expect(agreement.admitted >= 5 && agreement.refused >= 10, "\(entity.name) select: \(agreement.admitted) admitted, \(agreement.refused) refused")
        }

        let entities = try parameterSchema(document, path: "/v1/changes", method: "get", name: "entity")
        var agreement = Agreement()
        for _ in 0..<100 {
            let text = candidate(model.entities.map(\.name) + Self.noise, count: 4, using: &random)
            guard !text.isEmpty else { continue }
            agreement.record(text, admitted: try admits(entities, text), status: try server.request("GET", "/v1/changes?entity=\(text.queryEncoded)").status)
        }
        #expect(agreement.disagreements.isEmpty, "changes entity: \(agreement.disagreements)")
    }

    /// The name an aggregate's result gets: its alias, its function, or its key path.
    static func resultName(_ item: String) -> String {
        if let colon = item.firstIndex(of: ":") { return String(item[..<colon]) }
        if item.hasSuffix("()") { return String(item.dropLast(2).split(separator: ".").last ?? "") }
        return item
    }

    @Test("fields, include, sort, select and entity: the demo model")
    func taskTracker() throws { try Self.check(model: .taskTracker(), seed: 25) }

    @Test("fields, include, sort, select and entity: the library model")
    func library() throws { try Self.check(model: try ModelBasedHTTPTests.library(), seed: 2_504) }

    @Test("If-Match and Merge-Policy: what the pattern admits is taken, what it refuses is 400")
    func writeHeaders() throws {
        let server = try ServerHarness()
        let document = try JSONParser().parse(try server.request("GET", "/v1/openapi.json").body)
        let ifMatch = try Self.parameterSchema(document, path: "/v1/objects/Task/{pk}", method: "patch", name: "If-Match")
        let policy = try Self.parameterSchema(document, path: "/v1/objects/Task/{pk}", method: "patch", name: "Merge-Policy")
        #expect(try server.request("POST", "/v1/objects/Task", json: #"{"title": "t"}"#).status == 201)
        var random = SplitMix64(seed: 30)
        var versions = Agreement()
        let pieces = ["\"", "W/", "1", "0", "7", "*", " ", "x", "-", "12345678901234567", "9"]
        for _ in 0..<200 {
            let text = Self.candidate(pieces, count: 4, using: &random).trimmingCharacters(in: .whitespaces)
            guard !text.isEmpty else { continue }
            // A version other than the stored one conflicts (409): the header itself was taken.
            let response = try server.request("PATCH", "/v1/objects/Task/1", json: #"{"title": "t"}"#, headers: [("If-Match", text)])
            versions.record(text, admitted: try Self.admits(ifMatch, text), status: response.status == 409 ? 200 : response.status)
        }
        #expect(versions.disagreements.isEmpty, "If-Match: \(versions.disagreements)")
        #expect(versions.admitted >= 10 && versions.refused >= 10, "If-Match: \(versions.admitted) admitted, \(versions.refused) refused")
        for text in ["error", "store-trump", "object-trump", "overwrite", "rollback", "Error", "", "merge", "store_trump"] {
            let response = try server.request("PATCH", "/v1/objects/Task/1?merge=error", json: #"{"title": "t"}"#, headers: [("Merge-Policy", text)])
            #expect((response.status == 200) == (try Self.admits(policy, text)), "Merge-Policy '\(text)' beside ?merge=: \(response.status)")
        }
    }
}
