import Foundation
import Testing
import ManagedStore
import ManagedStoreTestSupport
@testable import ManagedStoreHTTP
@testable import ManagedStoreServer

/// Values the contract accepts that a PostgreSQL store cannot hold (a string with U+0000, a
/// value too long for an index entry): 422 naming the attribute there, never the 503 a client
/// would retry for ever; the SQLite store keeps them. Runs on whichever store the run uses.
@Suite("Store values over HTTP")
struct StoreValuesHTTPTests {
    /// `Tag.label` is unique, without a length rule: a B-tree index in PostgreSQL.
    static let longLabel = String(repeating: "n", count: 3_000)

    @Test("a string with U+0000 and a label too long for an index: kept on SQLite, 422 naming the attribute on PostgreSQL")
    func valuesOnlySQLiteKeeps() throws {
        let harness = try ServerHarness()
        let nul = try harness.request("POST", "/v1/objects/Project", json: #"{"name": "before\u0000after"}"#)
        let long = try harness.request("POST", "/v1/objects/Tag", json: #"{"label": "\#(Self.longLabel)"}"#)
        // In a transaction, with a write that PostgreSQL keeps: all or nothing.
        let transaction = try harness.request("POST", "/v1/transactions", json: """
            {"operations": [{"op": "insert", "entity": "Project", "values": {"name": "fine"}},
                            {"op": "insert", "entity": "Task", "values": {"title": "x\\u0000y"}}]}
            """)
        if PostgresTestDatabase.isActive {
            for (response, property, code) in [(nul, "name", "invalid-type"), (long, "label", "too-long"), (transaction, "title", "invalid-type")] {
                ErrorTests.check(response, 422, "validation")
                let errors = response.json?["errors"] as? [[String: Any]] ?? []
                #expect(errors.count == 1, "\(response.text)")
                #expect(errors.first?["property"] as? String == property)
                #expect(errors.first?["code"] as? String == code)
                #expect((errors.first?["message"] as? String)?.contains("PostgreSQL") == true, "\(response.text)")
            }
            #expect(try harness.counts().values.allSatisfy { $0 == 0 }, "nothing was stored")
        } else {
            #expect(nul.status == 201, "\(nul.text)")
            #expect(long.status == 201)
            #expect(transaction.status == 200, "\(transaction.text)")
            let projects = try harness.request("GET", "/v1/objects/Project").json?["objects"] as? [[String: Any]] ?? []
            #expect(projects.map { $0["name"] as? String } == ["before\u{0}after", "fine"])
            let tags = try harness.request("GET", "/v1/objects/Tag").json?["objects"] as? [[String: Any]] ?? []
            #expect(tags.map { $0["label"] as? String } == [Self.longLabel])
        }
    }
}
