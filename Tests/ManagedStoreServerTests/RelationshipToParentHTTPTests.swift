import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore

/// Relationships to a parent entity over HTTP: a folder's items are notes, links and videos,
/// each answered under its own entity; an object of another entity is 422
/// `invalid-relationship` and changes nothing; filters, `include` and transactions reach every
/// kind; the served document's ID pattern names every kind and nothing else.
@Suite("Relationships to a parent entity over HTTP")
struct RelationshipToParentHTTPTests {
    static func shelf() throws -> ManagedObjectModel {
        try ManagedObjectModel(jsonData: Array(#"""
            {"name": "Shelf", "entities": [
              {"name": "Folder", "attributes": [{"name": "name", "type": "string"}],
               "relationships": [{"name": "items", "destination": "Item", "toMany": true, "ordered": true, "inverse": "folder", "deleteRule": "cascade"},
                                 {"name": "featured", "destination": "Link", "inverse": null}]},
              {"name": "Item", "abstract": true, "attributes": [{"name": "title", "type": "string"}],
               "relationships": [{"name": "folder", "destination": "Folder", "inverse": "items"},
                                 {"name": "tags", "destination": "Tag", "toMany": true, "inverse": "items"}]},
              {"name": "Note", "parent": "Item", "attributes": [{"name": "body", "type": "string"}]},
              {"name": "Link", "parent": "Item", "attributes": [{"name": "url", "type": "string"}]},
              {"name": "Video", "parent": "Link", "attributes": [{"name": "seconds", "type": "integer64"}]},
              {"name": "Tag", "attributes": [{"name": "name", "type": "string"}],
               "relationships": [{"name": "items", "destination": "Item", "toMany": true, "inverse": "tags"}]}]}
            """#.utf8))
    }

    static func id(_ response: RawHTTPClient.Response) throws -> String { try #require(response.json?["_id"] as? String) }

    @Test("a folder holds notes, links and videos: each under its own entity, in the order given; filters and include reach every kind")
    func itemsOfEveryKind() throws {
        let harness = try ServerHarness(model: try Self.shelf())
        let note = try Self.id(harness.request("POST", "/v1/objects/Note", json: #"{"title": "n1", "body": "text"}"#))
        let link = try Self.id(harness.request("POST", "/v1/objects/Link", json: #"{"title": "l1", "url": "https://example.org"}"#))
        let video = try Self.id(harness.request("POST", "/v1/objects/Video", json: #"{"title": "v1", "url": "https://example.org/v", "seconds": 90}"#))
        #expect(Set([note, link, video].map { $0.split(separator: "/").last! }).count == 3, "one key sequence for the hierarchy: \(note) \(link) \(video)")
        let folder = try harness.request("POST", "/v1/objects/Folder",
                                         json: #"{"name": "inbox", "items": ["\#(video)", "\#(note)", "\#(link)"], "featured": "\#(video)"}"#)
        #expect(folder.status == 201, "\(folder.text)")
        let folderID = try Self.id(folder)
        let read = try harness.request("GET", "/v1/objects/\(folderID)")
        #expect(read.json?["items"] as? [String] == [video, note, link], "\(read.text)")
        #expect(read.json?["featured"] as? String == video)
        #expect(try harness.request("GET", "/v1/objects/\(note)").json?["folder"] as? String == folderID, "the inverse, inherited by each kind")

        let embedded = try harness.request("GET", "/v1/objects/\(folderID)?include=items")
        let items = embedded.json?["items"] as? [[String: Any]] ?? []
        #expect(items.map { $0["_id"] as? String } == [video, note, link], "\(embedded.text)")
        #expect(items.first?["seconds"] as? Int == 90 && items[1]["body"] as? String == "text", "each embedded object has its own entity's properties")

        let byItem = try harness.request("GET", "/v1/objects/Folder?where=" + "ANY items.title == 'l1'".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)
        #expect((byItem.json?["objects"] as? [[String: Any]])?.map { $0["_id"] as? String } == [folderID], "\(byItem.text)")
        let featured = try harness.request("GET", "/v1/objects/Folder?where=" + "featured.url == 'https://example.org/v'".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)
        #expect((featured.json?["objects"] as? [[String: Any]])?.count == 1, "\(featured.text)")
        let inFolder = try harness.request("GET", "/v1/objects/Item?where=" + "folder == '\(folderID)'".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)
        #expect(Set((inFolder.json?["objects"] as? [[String: Any]] ?? []).compactMap { $0["_id"] as? String }) == [note, link, video], "\(inFolder.text)")

        // Deleting the folder cascades to every kind.
        #expect(try harness.request("DELETE", "/v1/objects/\(folderID)").status == 204)
        for item in [note, link, video] { #expect(try harness.request("GET", "/v1/objects/\(item)").status == 404, "\(item) cascaded") }
    }

    @Test("an object of another entity is 422 invalid-relationship and leaves the store as it was")
    func wrongEntitiesAreRefused() throws {
        let harness = try ServerHarness(model: try Self.shelf())
        let note = try Self.id(harness.request("POST", "/v1/objects/Note", json: #"{"title": "n1"}"#))
        let tag = try Self.id(harness.request("POST", "/v1/objects/Tag", json: #"{"name": "red"}"#))
        let folderID = try Self.id(harness.request("POST", "/v1/objects/Folder", json: #"{"name": "inbox", "items": ["\#(note)"]}"#))
        for (body, property) in [(#"{"items": ["\#(tag)"]}"#, "items"), (#"{"featured": "\#(note)"}"#, "featured"),
                                 (#"{"items": ["Item/\#(note.split(separator: "/").last!)"]}"#, "items")] {
            let refused = try harness.request("PATCH", "/v1/objects/\(folderID)", json: body)
            #expect(refused.status == 422, "\(body): \(refused.text)")
            let errors = refused.json?["errors"] as? [[String: Any]] ?? []
            #expect(errors.first?["code"] as? String == "invalid-relationship" && errors.first?["property"] as? String == property, "\(refused.text)")
        }
        let after = try harness.request("GET", "/v1/objects/\(folderID)")
        #expect(after.json?["_version"] as? Int == 1 && after.json?["items"] as? [String] == [note], "nothing changed: \(after.text)")
    }

    @Test("a transaction links new objects of several kinds by ref; a tag's items and each item's tags agree")
    func transactionsAcrossKinds() throws {
        let harness = try ServerHarness(model: try Self.shelf())
        let saved = try harness.request("POST", "/v1/transactions", json: #"""
            {"operations": [
              {"op": "insert", "entity": "Note", "ref": "n", "values": {"title": "n"}},
              {"op": "insert", "entity": "Video", "ref": "v", "values": {"title": "v"}},
              {"op": "insert", "entity": "Tag", "ref": "t", "values": {"name": "red", "items": ["n", "v"]}},
              {"op": "insert", "entity": "Folder", "ref": "f", "values": {"name": "inbox", "items": ["v", "n"], "featured": "v"}}
            ]}
            """#)
        #expect(saved.status == 200, "\(saved.text)")
        let ids = try #require(saved.json?["ids"] as? [String: String])
        let (n, v, t, f) = (ids["n"]!, ids["v"]!, ids["t"]!, ids["f"]!)
        #expect(n.hasPrefix("Note/") && v.hasPrefix("Video/"))
        #expect(Set(try harness.request("GET", "/v1/objects/\(t)").json?["items"] as? [String] ?? []) == [n, v])
        #expect(try harness.request("GET", "/v1/objects/\(v)").json?["tags"] as? [String] == [t])
        #expect(try harness.request("GET", "/v1/objects/\(f)").json?["items"] as? [String] == [v, n])
        // Taking the video out of the tag from the video's side.
        #expect(try harness.request("PATCH", "/v1/objects/\(v)", json: #"{"tags": []}"#).status == 200)
        #expect(try harness.request("GET", "/v1/objects/\(t)").json?["items"] as? [String] == [n])
    }

    @Test("the served document: a relationship to a parent takes an ID of any of its kinds, and only those")
    func servedDocument() throws {
        let harness = try ServerHarness(model: try Self.shelf())
        let document = try ModelOpenAPITests.document(harness)
        let folder = try #require(document["components"]?["schemas"]?["Folder"]?["properties"])
        let itemPattern = try #require(folder["items"]?["items"]?["anyOf"]?.arrayValue?.first?["pattern"]?.stringValue)
        let featuredPattern = try #require(folder["featured"]?["anyOf"]?.arrayValue?.first?["pattern"]?.stringValue)
        func matches(_ pattern: String, _ text: String) -> Bool { text.range(of: pattern, options: .regularExpression) != nil }
        for id in ["Note/1", "Link/2", "Video/3"] { #expect(matches(itemPattern, id), "\(itemPattern) \(id)") }
        for id in ["Item/1", "Tag/1", "Folder/1"] { #expect(!matches(itemPattern, id), "\(itemPattern) \(id)") }
        #expect(matches(featuredPattern, "Video/3") && matches(featuredPattern, "Link/2") && !matches(featuredPattern, "Note/1"), "\(featuredPattern)")
    }
}
