import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite
@testable import ManagedStoreHTTP
@testable import ManagedStoreOpenAPI
@testable import ManagedStoreServer

/// Saves answer what happened, as the contract says it: uniqueness conflicts in saves that also
/// change other rows, cascade deletions in a transaction's answer, delete rules for objects
/// inserted earlier in the same save, and no SQL, SQLite text or temporary ID in any answer.
@Suite("Saves answer truthfully")
struct TruthfulSaveTests {
    /// The task tracker's cousin: Author 1-n Book n-m Genre, Book 1-n Loan. Author.name and
    /// Book.isbn unique; Author.books and Book.loans cascade; Genre.books deny.
    static func library() throws -> ManagedObjectModel {
        let json = #"""
        {"name": "Library", "version": 1, "entities": [
          {"name": "Author", "attributes": [{"name": "name", "type": "string", "optional": false}],
           "relationships": [{"name": "books", "destination": "Book", "toMany": true, "inverse": "author", "deleteRule": "cascade"}],
           "uniquenessConstraints": [["name"]]},
          {"name": "Book", "attributes": [{"name": "title", "type": "string", "optional": false}, {"name": "isbn", "type": "string"}],
           "relationships": [{"name": "author", "destination": "Author", "inverse": "books", "deleteRule": "nullify"},
                             {"name": "genres", "destination": "Genre", "toMany": true, "inverse": "books", "deleteRule": "nullify"},
                             {"name": "loans", "destination": "Loan", "toMany": true, "inverse": "book", "deleteRule": "cascade"}],
           "uniquenessConstraints": [["isbn"]]},
          {"name": "Genre", "attributes": [{"name": "name", "type": "string", "optional": false}],
           "relationships": [{"name": "books", "destination": "Book", "toMany": true, "inverse": "genres", "deleteRule": "deny"}]},
          {"name": "Loan", "attributes": [{"name": "reader", "type": "string"}],
           "relationships": [{"name": "book", "destination": "Book", "inverse": "loans", "deleteRule": "nullify"}]}
        ]}
        """#
        return try ManagedObjectModel(jsonData: Array(json.utf8))
    }

    /// Author/1 "Ann" with Book/1, and Loan/1 of Book/1.
    private func seeded() throws -> ServerHarness {
        let harness = try ServerHarness(model: try Self.library())
        #expect(try harness.request("POST", "/v1/objects/Author", json: #"{"name": "Ann"}"#).status == 201)
        #expect(try harness.request("POST", "/v1/objects/Book", json: #"{"title": "One", "isbn": "1", "author": "Author/1"}"#).status == 201)
        #expect(try harness.request("POST", "/v1/objects/Loan", json: #"{"reader": "Bo", "book": "Book/1"}"#).status == 201)
        return harness
    }

    /// Bodies never carry the store's own words or a temporary ID.
    static func expectClean(_ response: RawHTTPClient.Response, sourceLocation: SourceLocation = #_sourceLocation) {
        for word in ["SQLite", "SQLITE", "INSERT", "UPDATE \"", "SELECT ", "DELETE FROM", "constraint failed"] {
            #expect(!response.text.contains(word), "the body shows '\(word)': \(response.text)", sourceLocation: sourceLocation)
        }
        #expect(response.text.range(of: #"[A-Za-z]+/t[0-9]+"#, options: .regularExpression) == nil,
                "the body names a temporary ID: \(response.text)", sourceLocation: sourceLocation)
    }

    @Test("a taken unique value in an insert that also moves another object is a 409 uniqueness conflict, not a 503")
    func uniquenessInMixedSave() throws {
        let harness = try seeded()
        let response = try harness.request("POST", "/v1/objects/Author", json: #"{"name": "Ann", "books": ["Book/1"]}"#)
        #expect(response.status == 409)
        Self.expectClean(response)
        let conflict = (response.json?["conflicts"] as? [[String: Any]])?.first
        #expect(conflict?["kind"] as? String == "uniqueness")
        #expect(conflict?["entity"] as? String == "Author")
        #expect(conflict?["conflictingObjects"] as? [String] == ["Author/1"])
        #expect(try harness.request("GET", "/v1/objects/Book/1").json?["author"] as? String == "Author/1", "nothing was written")
        #expect(try harness.counts()["Author"] == 1)
    }

    @Test("the same in a transaction that changes a row of another entity with the same key")
    func uniquenessBesideAnotherEntitysUpdate() throws {
        let harness = try seeded()
        let response = try harness.request("POST", "/v1/transactions", json: #"""
            {"operations": [{"op": "update", "object": "Book/1", "values": {"isbn": "2"}},
                            {"op": "insert", "entity": "Author", "values": {"name": "Ann"}}]}
            """#)
        #expect(response.status == 409)
        Self.expectClean(response)
        #expect((response.json?["conflicts"] as? [[String: Any]])?.first?["conflictingObjects"] as? [String] == ["Author/1"])
        #expect(try harness.request("GET", "/v1/objects/Book/1").json?["isbn"] as? String == "1", "nothing was written")
    }

    @Test("a transaction's objects list the objects it deleted by cascade, and every object it changed")
    func cascadeInTransactionAnswer() throws {
        let harness = try seeded()
        let response = try harness.request("POST", "/v1/transactions", json: #"""
            {"operations": [{"op": "update", "object": "Loan/1", "values": {"reader": "Cy"}},
                            {"op": "delete", "object": "Book/1"}]}
            """#)
        #expect(response.status == 200)
        let objects = response.json?["objects"] as? [[String: Any]] ?? []
        let deleted = Set(objects.filter { $0["_deleted"] as? Bool == true }.compactMap { $0["_id"] as? String })
        #expect(deleted == ["Book/1", "Loan/1"], "the loan, updated and then deleted by the cascade, is in the answer")
        // Author/1 lost its book: its final state differs, so it is listed too.
        let author = objects.first { $0["_id"] as? String == "Author/1" }
        #expect(author?["books"] as? [String] == [])
        #expect(objects.count == 3)
        #expect(try harness.request("GET", "/v1/objects/Loan/1").status == 404)
    }

    @Test("deny is checked for an object inserted earlier in the same transaction, and the error names it by its ref")
    func denyOnInsertedObject() throws {
        let harness = try seeded()
        let response = try harness.request("POST", "/v1/transactions", json: #"""
            {"operations": [{"op": "insert", "entity": "Genre", "ref": "g", "values": {"name": "Poetry"}},
                            {"op": "insert", "entity": "Book", "ref": "b", "values": {"title": "Two", "genres": ["g"]}},
                            {"op": "delete", "object": "g"}]}
            """#)
        #expect(response.status == 422)
        Self.expectClean(response)
        let errors = response.json?["errors"] as? [[String: Any]] ?? []
        #expect(errors.count == 1)
        #expect(errors.first?["code"] as? String == "delete-denied")
        #expect(errors.first?["object"] as? String == "g")
        #expect(errors.first?["property"] as? String == "books")
        #expect((errors.first?["message"] as? String)?.contains("b") == true, "the book is named by its ref: \(response.text)")
        #expect(try harness.counts() == ["Author": 1, "Book": 1, "Genre": 0, "Loan": 1])
    }

    @Test("cascade and nullify run for objects inserted earlier in the same transaction")
    func deleteRulesOnInsertedObjects() throws {
        let harness = try seeded()
        let response = try harness.request("POST", "/v1/transactions", json: #"""
            {"operations": [{"op": "insert", "entity": "Book", "ref": "b", "values": {"title": "Two", "author": "Author/1"}},
                            {"op": "insert", "entity": "Loan", "ref": "l", "values": {"reader": "Di", "book": "b"}},
                            {"op": "insert", "entity": "Loan", "ref": "kept", "values": {"reader": "Ed"}},
                            {"op": "delete", "object": "b"}]}
            """#)
        #expect(response.status == 200, "\(response.text)")
        #expect(response.json?["ids"] as? [String: String] == ["kept": "Loan/2"], "the book and its loan never reached the store")
        #expect(try harness.counts() == ["Author": 1, "Book": 1, "Genre": 0, "Loan": 2])
        let objects = response.json?["objects"] as? [[String: Any]] ?? []
        #expect(Set(objects.compactMap { $0["_id"] as? String }) == ["Loan/2"], "Author/1 ends as it began")
    }

    @Test("a reference to an object of the wrong entity, a missing one or one deleted earlier is 422 invalid-relationship")
    func invalidRelationships() throws {
        let harness = try seeded()
        #expect(try harness.request("POST", "/v1/objects/Genre", json: #"{"name": "Poetry"}"#).status == 201)
        let cases: [(String, String)] = [
            ("/v1/objects/Book", #"{"title": "x", "author": "Genre/1"}"#),
            ("/v1/objects/Book", #"{"title": "x", "author": "Author/99"}"#),
            ("/v1/objects/Book", #"{"title": "x", "genres": ["Author/1"]}"#),
            ("/v1/objects/Book", #"{"title": "x", "author": "nobody"}"#),
            ("/v1/transactions", #"{"operations": [{"op": "insert", "entity": "Genre", "ref": "g", "values": {"name": "x"}}, {"op": "insert", "entity": "Book", "values": {"title": "x", "author": "g"}}]}"#),
            ("/v1/transactions", #"{"operations": [{"op": "insert", "entity": "Author", "ref": "a", "values": {"name": "x"}}, {"op": "delete", "object": "a"}, {"op": "insert", "entity": "Book", "values": {"title": "x", "author": "a"}}]}"#),
            ("/v1/transactions", #"{"operations": [{"op": "delete", "object": "Author/1"}, {"op": "insert", "entity": "Book", "values": {"title": "x", "author": "Author/1"}}]}"#),
        ]
        for (path, body) in cases {
            let response = try harness.request("POST", path, json: body)
            #expect(response.status == 422, "\(body): \(response.text)")
            Self.expectClean(response)
            let codes = (response.json?["errors"] as? [[String: Any]])?.compactMap { $0["code"] as? String }
            #expect(codes == ["invalid-relationship"], "\(body): \(response.text)")
        }
        #expect(try harness.counts() == ["Author": 1, "Book": 1, "Genre": 1, "Loan": 1])
        // A value of the wrong JSON kind is invalid-type.
        let typed = try harness.request("POST", "/v1/objects/Book", json: #"{"title": "x", "author": 7}"#)
        #expect((typed.json?["errors"] as? [[String: Any]])?.compactMap { $0["code"] as? String } == ["invalid-type"])
    }

    @Test("updating or deleting an object deleted earlier in the same transaction is refused, and nothing is written")
    func operationsOnDeletedObjects() throws {
        let harness = try seeded()
        let bodies = [
            #"{"operations": [{"op": "delete", "object": "Loan/1"}, {"op": "update", "object": "Loan/1", "values": {"reader": "x"}}]}"#,
            #"{"operations": [{"op": "delete", "object": "Loan/1"}, {"op": "delete", "object": "Loan/1"}]}"#,
            #"{"operations": [{"op": "insert", "entity": "Loan", "ref": "l", "values": {}}, {"op": "delete", "object": "l"}, {"op": "update", "object": "l", "values": {"reader": "x"}}]}"#,
            #"{"operations": [{"op": "delete", "object": "Book/1"}, {"op": "update", "object": "Loan/1", "values": {"reader": "x"}}]}"#,
        ]
        for body in bodies {
            let response = try harness.request("POST", "/v1/transactions", json: body)
            #expect(response.status == 404, "\(body): \(response.text)")
            Self.expectClean(response)
        }
        #expect(try harness.counts() == ["Author": 1, "Book": 1, "Genre": 0, "Loan": 1])
    }

    @Test("no failing write answers with SQL, SQLite's words or a temporary ID")
    func noStoreWordsInAnswers() throws {
        let harness = try seeded()
        let failing: [(String, String, String)] = [
            ("POST", "/v1/objects/Author", #"{"name": "Ann"}"#),
            ("POST", "/v1/objects/Author", #"{"name": "Ann", "books": ["Book/1"]}"#),
            ("POST", "/v1/objects/Book", #"{"title": "x", "isbn": "1"}"#),
            ("POST", "/v1/objects/Book", #"{"isbn": 5, "loans": ["Loan/9"]}"#),
            ("PATCH", "/v1/objects/Book/1", #"{"author": "Book/1"}"#),
            ("PUT", "/v1/objects/Book/1", #"{"isbn": "1"}"#),
            ("DELETE", "/v1/objects/Book/9", ""),
            ("POST", "/v1/transactions", #"{"operations": [{"op": "insert", "entity": "Book", "values": {"title": "a", "isbn": "9"}}, {"op": "insert", "entity": "Book", "values": {"title": "b", "isbn": "9"}}]}"#),
            ("POST", "/v1/transactions", #"{"operations": [{"op": "insert", "entity": "Genre", "ref": "g", "values": {"name": "x"}}, {"op": "update", "object": "Book/1", "values": {"genres": ["g"]}}, {"op": "delete", "object": "g"}]}"#),
            ("POST", "/v1/transactions", #"{"operations": [{"op": "insert", "entity": "Book", "ref": "b", "values": {"title": ""}}, {"op": "insert", "entity": "Loan", "values": {"book": "b", "reader": 3}}]}"#),
        ]
        for (method, path, body) in failing {
            let response = body.isEmpty ? try harness.request(method, path) : try harness.request(method, path, json: body)
            #expect(response.status >= 400, "\(method) \(path) \(body): \(response.status)")
            Self.expectClean(response)
        }
        #expect(try harness.counts() == ["Author": 1, "Book": 1, "Genre": 0, "Loan": 1])
    }
}
