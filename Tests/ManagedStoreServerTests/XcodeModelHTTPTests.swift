import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore

/// A real app's Core Data model (../shared/coredata-models, when present) served over HTTP as
/// Xcode wrote it: every entity's objects created, read, changed, linked and deleted.
@Suite("Xcode models over HTTP")
struct XcodeModelHTTPTests {
    static let realModels = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../../shared/coredata-models").standardizedFileURL

    /// A JSON value of `attribute`'s type for object number `n` (unique where a constraint needs it).
    static func value(_ attribute: AttributeDescription, _ n: Int) -> String {
        switch attribute.type {
        case .integer16, .integer32, .integer64: return "\(n + 1)"
        case .decimal: return "\"\(n).25\""
        case .double, .float: return "\(n).5"
        case .string: return "\"\(attribute.name) \(n) é\""
        case .boolean: return "true"
        case .date: return "\"2024-05-0\(n % 9 + 1)T10:20:30.250000Z\""
        case .binary: return "\"AAEC\""
        case .uuid: return "\"\(UUID().uuidString)\""
        case .uri: return "\"https://example.org/\(attribute.name)/\(n)\""
        }
    }

    @Test("Kiwix's model: every entity created, read, changed with If-Match, linked through every to-one, and deleted",
          .enabled(if: FileManager.default.fileExists(atPath: realModels.path)))
    func kiwixOverHTTP() throws {
        let model = try ManagedObjectModel(contentsOf: Self.realModels.appendingPathComponent("Kiwix.xcdatamodeld"))
        let harness = try ServerHarness(model: model)
        var ids: [String: String] = [:]
        for (n, entity) in model.entities.enumerated() {
            var members = entity.attributes.map { "\"\($0.name)\": \(Self.value($0, n))" }
            // A non-optional to-many (ZimFile.bookmarks, .tabs) must hold one object: without it
            // the insert is 422 too-small, naming each; with the objects made before, it saves.
            let counted = entity.relationships.filter { ($0.minCount ?? 0) > 0 }
            if !counted.isEmpty {
                let refused = try harness.request("POST", "/v1/objects/\(entity.name)", json: "{" + members.joined(separator: ", ") + "}")
                #expect(refused.status == 422, "\(entity.name): \(refused.text)")
                let problems = (refused.json?["errors"] as? [[String: Any]] ?? []).map { "\($0["property"] ?? "")=\($0["code"] ?? "")" }
                #expect(Set(problems) == Set(counted.map { "\($0.name)=too-small" }), "\(problems)")
                members += try counted.map { "\"\($0.name)\": [\"\(try #require(ids[$0.destination]))\"]" }
            }
            let created = try harness.request("POST", "/v1/objects/\(entity.name)", json: "{" + members.joined(separator: ", ") + "}")
            #expect(created.status == 201, "\(entity.name): \(created.text)")
            let id = try #require(created.json?["_id"] as? String)
            ids[entity.name] = id
            let fetched = try harness.request("GET", "/v1/objects/\(id)")
            #expect(fetched.status == 200)
            for attribute in entity.attributes where attribute.type == .string || attribute.type == .uri || attribute.type == .boolean {
                #expect("\(fetched.json?[attribute.name] ?? "-")" == "\(created.json?[attribute.name] ?? "+")", "\(id).\(attribute.name)")
            }
            if let text = entity.attributes.first(where: { $0.type == .string && !entity.uniquenessConstraints.contains([$0.name]) }) {
                let patched = try harness.request("PATCH", "/v1/objects/\(id)", json: "{\"\(text.name)\": \"changed\"}", headers: [("If-Match", "\"1\"")])
                #expect(patched.status == 200 && patched.json?[text.name] as? String == "changed", "\(id): \(patched.text)")
                #expect(try harness.request("PATCH", "/v1/objects/\(id)", json: "{\"\(text.name)\": \"stale\"}", headers: [("If-Match", "\"1\"")]).status == 409)
            }
        }
        #expect(ids.count == model.entities.count)
        // Every to-one set to the other entity's object; its inverse shows the link.
        for entity in model.entities {
            for relationship in entity.relationships where !relationship.isToMany {
                let (id, target) = (ids[entity.name]!, ids[relationship.destination]!)
                let linked = try harness.request("PATCH", "/v1/objects/\(id)", json: "{\"\(relationship.name)\": \"\(target)\"}")
                #expect(linked.status == 200, "\(id).\(relationship.name): \(linked.text)")
                let inverse = try #require(relationship.inverse)
                let other = try harness.request("GET", "/v1/objects/\(target)").json?[inverse]
                let shown = (other as? [String]) ?? (other as? String).map { [$0] } ?? []
                #expect(shown.contains(id), "\(target).\(inverse) lists \(id)")
            }
        }
        // Deleting the file cascades to what its Cascade rules name; the rest are unlinked.
        #expect(try harness.request("DELETE", "/v1/objects/\(ids["ZimFile"]!)").status == 204)
        #expect(try harness.request("GET", "/v1/objects/\(ids["Bookmark"]!)").status == 404, "ZimFile.bookmarks cascades")
        #expect(try harness.request("GET", "/v1/objects/\(ids["DownloadTask"]!)").status == 404, "ZimFile.downloadTask cascades")
        let tab = try harness.request("GET", "/v1/objects/\(ids["Tab"]!)")
        #expect(tab.status == 200 && tab.json?["zimFile"] is NSNull, "ZimFile.tabs nullifies")
        #expect(try harness.request("DELETE", "/v1/objects/\(ids["Tab"]!)").status == 204)
    }

    @Test("DuckDuckGo's Bookmarks model: created, read, changed and deleted; its ordered relationships answer in the order written, a PATCH reorders",
          .enabled(if: FileManager.default.fileExists(atPath: realModels.path)))
    func bookmarksOverHTTP() throws {
        let model = try ManagedObjectModel(contentsOf: Self.realModels.appendingPathComponent("Bookmarks.xcdatamodeld"))
        let harness = try ServerHarness(model: model)
        func create(_ title: String, folder: Bool, _ extra: String = "") throws -> String {
            let created = try harness.request("POST", "/v1/objects/BookmarkEntity",
                                              json: #"{"title": "\#(title)", "uuid": "\#(UUID().uuidString)", "isFolder": \#(folder)\#(extra)}"#)
            #expect(created.status == 201, "\(created.text)")
            return try #require(created.json?["_id"] as? String)
        }
        let marks = try ["a", "b", "c"].map { try create($0, folder: false) }
        let list = { (ids: [String]) in "[" + ids.map { "\"\($0)\"" }.joined(separator: ", ") + "]" }
        let folder = try create("root", folder: true, #", "children": \#(list([marks[2], marks[0], marks[1]])), "favorites": \#(list([marks[1], marks[2]]))"#)
        var read = try harness.request("GET", "/v1/objects/\(folder)")
        #expect(read.json?["children"] as? [String] == [marks[2], marks[0], marks[1]])
        #expect(read.json?["favorites"] as? [String] == [marks[1], marks[2]])
        #expect(try harness.request("GET", "/v1/objects/\(marks[0])").json?["parent"] as? String == folder)
        #expect(try harness.request("GET", "/v1/objects/\(marks[1])").json?["favoriteFolders"] as? [String] == [folder])

        let patched = try harness.request("PATCH", "/v1/objects/\(folder)", json: #"{"children": \#(list([marks[1], marks[2], marks[0]]))}"#,
                                          headers: [("If-Match", "\"1\"")])
        #expect(patched.status == 200 && patched.json?["children"] as? [String] == [marks[1], marks[2], marks[0]], "\(patched.text)")
        #expect(patched.json?["_version"] as? Int == 2, "a new order is a change of the folder")
        // A bookmark that joins from its side goes last.
        let late = try create("d", folder: false)
        #expect(try harness.request("PATCH", "/v1/objects/\(late)", json: #"{"parent": "\#(folder)"}"#).status == 200)
        read = try harness.request("GET", "/v1/objects/\(folder)")
        #expect(read.json?["children"] as? [String] == [marks[1], marks[2], marks[0], late])
        let listed = try harness.request("GET", "/v1/objects/BookmarkEntity?where=isFolder==true").json?["objects"] as? [[String: Any]]
        #expect(listed?.first?["children"] as? [String] == [marks[1], marks[2], marks[0], late], "a list answers in the same order")
        // Deleting the folder cascades to its children (BookmarkEntity.children is Cascade).
        #expect(try harness.request("DELETE", "/v1/objects/\(folder)").status == 204)
        for id in marks + [late] { #expect(try harness.request("GET", "/v1/objects/\(id)").status == 404) }
    }

    @Test("objc.io's Moody (an abstract Region, two sub-entities): every entity created, read, changed and deleted; a fetch of Region returns both kinds, page by page; uniqueness spans them",
          .enabled(if: FileManager.default.fileExists(atPath: realModels.path)))
    func moodyOverHTTP() throws {
        let model = try ManagedObjectModel(contentsOf: Self.realModels.appendingPathComponent("Moody.xcdatamodeld"))
        let harness = try ServerHarness(model: model)
        let refused = try harness.request("POST", "/v1/objects/Region", json: #"{"updatedAt": "2024-01-01T00:00:00Z"}"#)
        #expect(refused.status == 400 && refused.text.contains("insert one of its sub-entities (Continent, Country)"), "\(refused.text)")
        // Continent.countries and Country.moods are non-optional to-many: made together.
        let made = try harness.request("POST", "/v1/transactions", json: #"""
            {"operations": [
              {"op": "insert", "entity": "Mood", "ref": "m1", "values": {"date": "2024-01-01T00:00:00Z", "colors": "AAECAw==", "latitude": 48.85}},
              {"op": "insert", "entity": "Mood", "ref": "m2", "values": {"date": "2024-01-02T00:00:00Z"}},
              {"op": "insert", "entity": "Country", "ref": "fr", "values": {"updatedAt": "2024-01-03T00:00:00Z", "numericISO3166Code": 250, "moods": ["m1"]}},
              {"op": "insert", "entity": "Country", "ref": "de", "values": {"updatedAt": "2024-01-04T00:00:00Z", "numericISO3166Code": 276, "moods": ["m2"]}},
              {"op": "insert", "entity": "Continent", "ref": "eu", "values": {"updatedAt": "2024-01-05T00:00:00Z", "numericISO3166Code": 150, "countries": ["fr", "de"]}}]}
            """#)
        #expect(made.status == 200, "\(made.text)")
        let ids = try #require(made.json?["ids"] as? [String: String])
        #expect(ids["eu"]!.hasPrefix("Continent/") && ids["fr"]!.hasPrefix("Country/") && ids["de"]!.hasPrefix("Country/"))
        // Region's kinds take their keys from one sequence: three objects, keys 1 to 3.
        #expect(Set(["eu", "fr", "de"].compactMap { ids[$0]?.split(separator: "/").last }) == ["1", "2", "3"], "\(ids)")
        let mood = try harness.request("GET", "/v1/objects/\(ids["m1"]!)")
        #expect(mood.json?["colors"] as? String == "AAECAw==" && mood.json?["country"] as? String == ids["fr"], "the transformer's bytes come back as sent")
        let france = try harness.request("GET", "/v1/objects/\(ids["fr"]!)")
        #expect(france.json?["continent"] as? String == ids["eu"] && france.json?["numericISO3166Code"] as? Int == 250)

        // A fetch of the abstract parent: every kind, each object with its own entity and properties.
        let regions = try harness.request("GET", "/v1/objects/Region?sort=-numericISO3166Code&count=true")
        let listed = try #require(regions.json?["objects"] as? [[String: Any]])
        #expect(listed.map { $0["_id"] as? String } == [ids["de"], ids["fr"], ids["eu"]] && regions.json?["count"] as? Int == 3, "\(regions.text)")
        #expect(listed[2]["countries"] as? [String] == [ids["fr"]!, ids["de"]!] && listed[0]["moods"] as? [String] == [ids["m2"]!])
        let filtered = try harness.request("GET", "/v1/objects/Region?where=numericISO3166Code%20%3C%20260&fields=numericISO3166Code&sort=updatedAt")
        #expect((filtered.json?["objects"] as? [[String: Any]])?.map { $0["_id"] as? String } == [ids["fr"], ids["eu"]], "\(filtered.text)")
        var paged: [String] = []
        var after: String?
        for _ in 0..<10 {
            let page = try harness.request("GET", "/v1/objects/Region?sort=uniquenessDummy&limit=1" + (after.map { "&after=\($0)" } ?? ""))
            paged += (page.json?["objects"] as? [[String: Any]] ?? []).compactMap { $0["_id"] as? String }
            guard let next = page.json?["next"] as? String else { break }
            after = next
        }
        #expect(paged == [ids["eu"]!, ids["fr"]!, ids["de"]!], "equal sort values: by kind, then key")
        // A cursor whose entity is not a kind of Region, or not text, is 400, never a crash.
        let first = try harness.request("GET", "/v1/objects/Region?sort=uniquenessDummy&limit=1")
        let token = try #require(first.json?["next"] as? String)
        var base64 = token.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        let decoded = String(decoding: try #require(Data(base64Encoded: base64)), as: UTF8.self)
        #expect(decoded.contains(#""e":"Continent""#), "\(decoded)")
        for replacement in [#""e":"Mood""#, #""e":"Nope""#, #""e":7"#, #""e":null"#] {
            let forged = Data(decoded.replacingOccurrences(of: #""e":"Continent""#, with: replacement).utf8).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            let answer = try harness.request("GET", "/v1/objects/Region?sort=uniquenessDummy&limit=1&after=\(forged)")
            #expect(answer.status == 400, "\(replacement): \(answer.status) \(answer.text)")
        }
        #expect(try harness.request("GET", "/v1/objects/Country?sort=uniquenessDummy&after=\(token)").status == 400, "a cursor of Region's order is not Country's")
        let aggregate = try harness.request("GET", "/v1/objects/Region/aggregate?select=uniquenessDummy,count(),top:numericISO3166Code.max()")
        #expect(aggregate.text == #"{"groups":[{"uniquenessDummy":0,"count":3,"top":276}]}"#, "an aggregate of Region spans both kinds: \(aggregate.text)")
        let exactCountries = try harness.request("GET", "/v1/objects/Country?count=true")
        #expect(exactCountries.json?["count"] as? Int == 2)

        // Changes with If-Match, a stale one refused; the parent's uniqueness constraint spans both kinds.
        let patched = try harness.request("PATCH", "/v1/objects/\(ids["fr"]!)", json: #"{"numberOfMoods": 1}"#, headers: [("If-Match", "\"1\"")])
        #expect(patched.status == 200 && patched.json?["numberOfMoods"] as? Int == 1, "\(patched.text)")
        #expect(try harness.request("PATCH", "/v1/objects/\(ids["fr"]!)", json: #"{"numberOfMoods": 2}"#, headers: [("If-Match", "\"1\"")]).status == 409)
        let duplicate = try harness.request("PATCH", "/v1/objects/\(ids["de"]!)", json: #"{"numericISO3166Code": 150}"#)
        #expect(duplicate.status == 409 && duplicate.text.contains(ids["eu"]!), "a country cannot take the continent's code: \(duplicate.text)")
        let moodPatched = try harness.request("PATCH", "/v1/objects/\(ids["m2"]!)", json: #"{"creatorID": "someone", "colors": "BAU="}"#)
        #expect(moodPatched.status == 200 && moodPatched.json?["colors"] as? String == "BAU=")

        // The served document: no insert of Region, and its list items are either kind.
        let document = try #require(try harness.request("GET", "/v1/openapi.json").json)
        let paths = try #require(document["paths"] as? [String: Any])
        #expect((paths["/v1/objects/Region"] as? [String: Any])?["post"] == nil && (paths["/v1/objects/Continent"] as? [String: Any])?["post"] != nil)
        let schemas = ((document["components"] as? [String: Any])?["schemas"] as? [String: Any]) ?? [:]
        let items = (((schemas["RegionFetchResult"] as? [String: Any])?["properties"] as? [String: Any])?["objects"] as? [String: Any])?["items"] as? [String: Any]
        #expect((items?["oneOf"] as? [[String: String]])?.map { $0["$ref"] } == ["#/components/schemas/Continent", "#/components/schemas/Country"])
        // A non-optional to-many is required in an insert, as an array of at least one.
        let insert = schemas["ContinentInsert"] as? [String: Any]
        #expect((insert?["required"] as? [String])?.contains("countries") == true)
        #expect(((insert?["properties"] as? [String: Any])?["countries"] as? [String: Any])?["minItems"] as? Int == 1)

        // Deletes: the continent (its countries nullified), then each country with its mood.
        #expect(try harness.request("DELETE", "/v1/objects/\(ids["eu"]!)").status == 204)
        #expect(try harness.request("GET", "/v1/objects/\(ids["fr"]!)").json?["continent"] is NSNull)
        for (country, mood) in [("fr", "m1"), ("de", "m2")] {
            #expect(try harness.request("DELETE", "/v1/objects/\(ids[country]!)").status == 204)
            #expect(try harness.request("GET", "/v1/objects/\(ids[mood]!)").json?["country"] is NSNull)
            #expect(try harness.request("DELETE", "/v1/objects/\(ids[mood]!)").status == 204)
        }
        #expect(try harness.request("GET", "/v1/objects/Region?count=true").json?["count"] as? Int == 0)
    }

    @Test("one-way relationships over HTTP: written and read as IDs; deleting a destination takes it out of the holders' answers")
    func oneWayOverHTTP() throws {
        let model = try ManagedObjectModel(jsonData: Array("""
            {"name": "Notes", "entities": [
              {"name": "Note", "attributes": [{"name": "title", "type": "string"}],
               "relationships": [{"name": "author", "destination": "Person", "inverse": null},
                                 {"name": "readers", "destination": "Person", "inverse": null, "toMany": true}]},
              {"name": "Person", "attributes": [{"name": "name", "type": "string"}]}]}
            """.utf8))
        let harness = try ServerHarness(model: model)
        let people = try ["ann", "bob"].map { name in
            try #require(try harness.request("POST", "/v1/objects/Person", json: #"{"name": "\#(name)"}"#).json?["_id"] as? String)
        }
        let created = try harness.request("POST", "/v1/objects/Note",
                                          json: #"{"title": "n", "author": "\#(people[0])", "readers": ["\#(people[1])", "\#(people[0])"]}"#)
        #expect(created.status == 201, "\(created.text)")
        let note = try #require(created.json?["_id"] as? String)
        #expect(created.json?["readers"] as? [String] == people)
        let person = try harness.request("GET", "/v1/objects/\(people[0])")
        #expect(person.json?.keys.sorted() == ["_id", "_version", "name"], "a one-way relationship has nothing on the other side")
        #expect(try harness.request("DELETE", "/v1/objects/\(people[0])").status == 204)
        let after = try harness.request("GET", "/v1/objects/\(note)")
        #expect(after.json?["author"] is NSNull && after.json?["readers"] as? [String] == [people[1]], "\(after.text)")
        #expect(after.json?["_version"] as? Int == 2)
    }
}
