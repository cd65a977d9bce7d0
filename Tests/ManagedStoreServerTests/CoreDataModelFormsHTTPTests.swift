import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreHTTP
@testable import ManagedStoreOpenAPI
@testable import ManagedStoreServer

/// Core Data's model forms over HTTP (`Tests/CoreDataModels`, and Mogenerator's model from
/// ../shared/coredata-models when present): transient attributes in the model only,
/// Transformables as base64 bytes, fetch request templates named by a GET.
@Suite("Core Data model forms over HTTP")
struct CoreDataModelFormsHTTPTests {
    static let notebookURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../CoreDataModels/Notebook.xcdatamodeld").standardizedFileURL

    static func objects(_ response: RawHTTPClient.Response) -> [String] {
        (response.json?["objects"] as? [[String: Any]] ?? []).compactMap { $0["title"] as? String ?? $0["_id"] as? String }
    }

    @Test("a transient is in /v1/model only: never in an object, an OpenAPI object schema or a write; a Transformable's bytes round-trip")
    func transientsAndTransformables() throws {
        let harness = try ServerHarness(model: try ManagedObjectModel(contentsOf: Self.notebookURL))
        let model = try #require(try harness.request("GET", "/v1/model").json)
        let note = try #require((model["entities"] as? [[String: Any]])?.first { $0["name"] as? String == "Note" })
        let attributes = (note["attributes"] as? [[String: Any]]) ?? []
        #expect(attributes.first { $0["name"] as? String == "isSelected" }?["transient"] as? Bool == true)
        #expect(attributes.first { $0["name"] as? String == "color" }?["valueTransformer"] as? String == "ColorTransformer")
        #expect((model["fetchRequests"] as? [[String: Any]])?.map { $0["name"] as? String } == ["notesInFolder", "notesTitled", "pinnedNotes"])

        let bytes = Data((0..<64).map { UInt8($0 * 3 % 256) }).base64EncodedString()
        let created = try harness.request("POST", "/v1/objects/Note", json: #"{"title": "t", "color": "\#(bytes)", "legacy": "AAEC"}"#)
        #expect(created.status == 201, "\(created.text)")
        #expect(created.json?["isSelected"] == nil && created.json?["draftText"] == nil, "\(created.text)")
        #expect(created.json?["priority"] as? Int == 1 && created.json?["pinned"] as? Bool == true, "YES defaults: \(created.text)")
        let id = try #require(created.json?["_id"] as? String)
        let read = try harness.request("GET", "/v1/objects/\(id)")
        #expect(read.json?["color"] as? String == bytes && read.json?["legacy"] as? String == "AAEC")
        #expect(read.json?["draftText"] == nil)
        let refused = try harness.request("PATCH", "/v1/objects/\(id)", json: #"{"isSelected": true}"#)
        #expect(refused.status == 400 && refused.json?["code"] as? String == "unknown-property" && refused.text.contains("is transient"), "\(refused.text)")
        #expect(try harness.request("GET", "/v1/objects/Note?where=isSelected%20==%20YES").status == 400)

        let document = try #require(try harness.request("GET", "/v1/openapi.json").json)
        let schemas = ((document["components"] as? [String: Any])?["schemas"] as? [String: Any]) ?? [:]
        for name in ["Note", "NoteInsert", "NoteValues"] {
            let properties = (schemas[name] as? [String: Any])?["properties"] as? [String: Any] ?? [:]
            #expect(properties["title"] != nil && properties["isSelected"] == nil && properties["draftText"] == nil, "\(name)")
        }
        // What serve says at start-up about such a model.
        let notes = ModelNotes.lines(for: try ManagedObjectModel(contentsOf: Self.notebookURL))
        #expect(notes.count == 3 && notes[0].hasPrefix("opaque bytes") && notes[0].contains("Note.color (ColorTransformer)")
                && notes[0].contains("Note.legacy (NSKeyedUnarchiveFromData)") && notes[1].contains("Note.draftText, Note.isSelected")
                && notes[2].contains("Note.notesInFolder($FOLDER, $MIN_PRIORITY)"), "\(notes)")
        #expect(ModelNotes.lines(for: .taskTracker()).isEmpty)
        let color = ((schemas["Note"] as? [String: Any])?["properties"] as? [String: Any])?["color"] as? [String: Any]
        #expect((color?["contentEncoding"] as? String ?? color?["format"] as? String) != nil, "\(String(describing: color))")
    }

    @Test("a template over HTTP: fetch=NAME with var.NAME typed by what it meets, ANDed with where; a missing, unknown or ill-typed variable is 400 naming it")
    func templatesOverHTTP() throws {
        let harness = try ServerHarness(model: try ManagedObjectModel(contentsOf: Self.notebookURL))
        let made = try harness.request("POST", "/v1/transactions", json: #"""
            {"operations": [
              {"op": "insert", "entity": "Folder", "ref": "w", "values": {"name": "Work"}},
              {"op": "insert", "entity": "Folder", "ref": "h", "values": {"name": "Home"}},
              {"op": "insert", "entity": "Note", "values": {"title": "a", "priority": 1, "folder": "w"}},
              {"op": "insert", "entity": "Note", "values": {"title": "b", "priority": 3, "folder": "w", "pinned": false}},
              {"op": "insert", "entity": "Note", "values": {"title": "c", "priority": 5, "folder": "h"}}]}
            """#)
        #expect(made.status == 200, "\(made.text)")
        let work = try #require((made.json?["ids"] as? [String: String])?["w"])
        let inFolder = try harness.request("GET", "/v1/objects/Note?fetch=notesInFolder&var.FOLDER=\(work)&var.MIN_PRIORITY=2")
        #expect(inFolder.status == 200 && Self.objects(inFolder) == ["b"], "\(inFolder.text)")
        let titled = try harness.request("GET", "/v1/objects/Note?fetch=notesTitled&var.TITLES=a,c,zz&sort=-title")
        #expect(Self.objects(titled) == ["c", "a"], "\(titled.text)")
        let pinned = try harness.request("GET", "/v1/objects/Note?fetch=pinnedNotes&where=priority%20%3E%202&count=true")
        #expect(Self.objects(pinned) == ["c"] && pinned.json?["count"] as? Int == 1, "\(pinned.text)")

        for (query, variable, words) in [
            ("fetch=notesInFolder&var.FOLDER=\(work)", "MIN_PRIORITY", "needs a value for $MIN_PRIORITY"),
            ("fetch=notesInFolder&var.FOLDER=\(work)&var.MIN_PRIORITY=high", "MIN_PRIORITY", "takes a integer32"),
            ("fetch=notesInFolder&var.FOLDER=Note/1&var.MIN_PRIORITY=1", "FOLDER", "ID of a Folder"),
            ("fetch=notesInFolder&var.FOLDER=\(work)&var.MIN_PRIORITY=9999999999", "MIN_PRIORITY", "takes a integer32"),
            ("fetch=pinnedNotes&var.X=1", "X", "has no variable $X"),
        ] {
            let answer = try harness.request("GET", "/v1/objects/Note?\(query)")
            #expect(answer.status == 400 && answer.json?["code"] as? String == "bad-request", "\(query): \(answer.text)")
            #expect(answer.json?["variable"] as? String == variable && answer.text.contains(words), "\(query): \(answer.text)")
        }
        #expect(try harness.request("GET", "/v1/objects/Note?fetch=nope").status == 400)
        #expect(try harness.request("GET", "/v1/objects/Folder?fetch=pinnedNotes").text.contains("fetches Note"))
        #expect(try harness.request("GET", "/v1/objects/Note?var.MIN_PRIORITY=1").status == 400, "a variable without a template")
    }

    @Test("a fetched property over HTTP: GET /v1/objects/Folder/{pk}/urgentNotes answers its objects as a page, where ANDed; 404 for an unknown property or object; in the served document")
    func fetchedPropertyOverHTTP() throws {
        let harness = try ServerHarness(model: try ManagedObjectModel(contentsOf: Self.notebookURL))
        let made = try harness.request("POST", "/v1/transactions", json: #"""
            {"operations": [
              {"op": "insert", "entity": "Folder", "ref": "w", "values": {"name": "Work"}},
              {"op": "insert", "entity": "Note", "values": {"title": "a", "priority": 1, "folder": "w"}},
              {"op": "insert", "entity": "Note", "values": {"title": "b", "priority": 3, "folder": "w"}},
              {"op": "insert", "entity": "Note", "values": {"title": "c", "priority": 5, "folder": "w"}},
              {"op": "insert", "entity": "Note", "values": {"title": "Work", "priority": 0}}]}
            """#)
        let work = try #require((made.json?["ids"] as? [String: String])?["w"])
        let urgent = try harness.request("GET", "/v1/objects/\(work)/urgentNotes?sort=-title&count=true")
        #expect(urgent.status == 200 && Self.objects(urgent) == ["c", "b"] && urgent.json?["count"] as? Int == 2, "\(urgent.text)")
        let narrowed = try harness.request("GET", "/v1/objects/\(work)/urgentNotes?where=priority%20%3E%204&fields=title")
        #expect(Self.objects(narrowed) == ["c"], "\(narrowed.text)")
        #expect(Self.objects(try harness.request("GET", "/v1/objects/\(work)/namesakes")) == ["Work"])
        #expect(try harness.request("GET", "/v1/objects/\(work)/nope").status == 404)
        #expect(try harness.request("GET", "/v1/objects/Folder/999/urgentNotes").status == 404)
        #expect(try harness.request("DELETE", "/v1/objects/\(work)/urgentNotes").status == 405)
        #expect(try harness.request("GET", "/v1/objects/\(work)/urgentNotes?fetch=pinnedNotes").status == 400)
        let document = try #require(try harness.request("GET", "/v1/openapi.json").json)
        let paths = try #require(document["paths"] as? [String: Any])
        let operation = (paths["/v1/objects/Folder/{pk}/urgentNotes"] as? [String: Any])?["get"] as? [String: Any]
        #expect(operation?["operationId"] as? String == "fetchFolderUrgentNotes")
        #expect(paths.keys.filter { $0.contains("{fetchedProperty}") || $0.hasPrefix("/v1/objects/Note/{pk}/") }.isEmpty, "\(paths.keys.sorted())")
    }

    @Test("Mogenerator's model served with no flag: every concrete entity created, read, changed and deleted; its templates answer, through a parent entity and a relationship",
          .enabled(if: FileManager.default.fileExists(atPath: XcodeModelHTTPTests.realModels.path)))
    func mogeneratorOverHTTP() throws {
        let model = try ManagedObjectModel(contentsOf: XcodeModelHTTPTests.realModels.appendingPathComponent("Mogenerator.xcdatamodel"))
        let harness = try ServerHarness(model: model)
        var ids: [String: String] = [:]
        for (n, entity) in model.entities.enumerated() where !entity.isAbstract {
            let members = entity.attributes.map { "\"\($0.name)\": \(XcodeModelHTTPTests.value($0, n))" }
            let created = try harness.request("POST", "/v1/objects/\(entity.name)", json: "{" + members.joined(separator: ", ") + "}")
            #expect(created.status == 201, "\(entity.name): \(created.text)")
            let id = try #require(created.json?["_id"] as? String)
            ids[entity.name] = id
            let read = try harness.request("GET", "/v1/objects/\(id)")
            #expect(read.status == 200 && read.json?["myInt16Transient"] == nil)
            if let text = entity.attributes.first(where: { $0.type == .string }) {
                let patched = try harness.request("PATCH", "/v1/objects/\(id)", json: "{\"\(text.name)\": \"changed\"}", headers: [("If-Match", "\"1\"")])
                #expect(patched.status == 200 && patched.json?[text.name] as? String == "changed", "\(id): \(patched.text)")
            }
        }
        #expect(Set(ids.keys) == Set(model.entities.map(\.name)))
        let parent = try #require(ids["Parent"]), child = try #require(ids["Child"])
        #expect(try harness.request("PATCH", "/v1/objects/\(child)", json: #"{"parent": "\#(parent)", "humanName": "Kid"}"#).status == 200)
        #expect(try harness.request("PATCH", "/v1/objects/\(parent)", json: #"{"parentName": "Ann"}"#).status == 200)
        let byParent = try harness.request("GET", "/v1/objects/Child?fetch=byParent&var.parent=\(parent)")
        #expect((byParent.json?["objects"] as? [[String: Any]])?.map { $0["_id"] as? String } == [child], "\(byParent.text)")
        let byName = try harness.request("GET", "/v1/objects/Child?fetch=byParentName&var.parentName=Ann")
        #expect((byName.json?["objects"] as? [[String: Any]])?.map { $0["_id"] as? String } == [child], "\(byName.text)")
        let humans = try harness.request("GET", "/v1/objects/Human?fetch=byHumanName&var.humanName=Kid")
        #expect((humans.json?["objects"] as? [[String: Any]])?.map { $0["_id"] as? String } == [child], "a template of the parent entity spans its kinds: \(humans.text)")
        let all = try harness.request("GET", "/v1/objects/Human?fetch=allHumans&count=true")
        #expect(all.json?["count"] as? Int == 4, "Human and its kinds Child, Parent and Uncle: \(all.text)")
        for entity in model.entities where !entity.isAbstract {
            let id = try #require(ids[entity.name])
            let deleted = try harness.request("DELETE", "/v1/objects/\(id)")
            #expect(deleted.status == 204 || (deleted.status == 404 && entity.name == "Child"), "\(id): \(deleted.text)")  // Parent's children cascade
        }
    }
}
