import Foundation
import Testing
import ManagedStore
@testable import ManagedStoreHTTP
@testable import ManagedStoreOpenAPI
@testable import ManagedStoreServer

/// `GET /v1/objects/{Entity}/aggregate` as the contract's "Aggregates" section has it: the
/// example's shape, every error code, and the limits.
@Suite("Aggregates over HTTP")
struct AggregateHTTPTests {
    /// Authors and their books, with the contract example's attributes (pages, a decimal price).
    static let model: ManagedObjectModel = {
        do {
            return try ManagedObjectModel(name: "Library", entities: [
                EntityDescription(name: "Author", attributes: [AttributeDescription(name: "name", type: .string)],
                                  relationships: [RelationshipDescription(name: "books", destination: "Book", inverse: "author", isToMany: true)]),
                EntityDescription(name: "Book", attributes: [
                    AttributeDescription(name: "title", type: .string), AttributeDescription(name: "pages", type: .integer64),
                    AttributeDescription(name: "price", type: .decimal), AttributeDescription(name: "inStock", type: .boolean),
                    AttributeDescription(name: "published", type: .date),
                ], relationships: [RelationshipDescription(name: "author", destination: "Author", inverse: "books")]),
            ])
        } catch {
            fatalError("the library test model is invalid: \(error)")
        }
    }()

    /// A server over the library, holding `authors` and `books` (JSON values of a Book; "author"
    /// an index into `authors`), saved in one transaction.
    static func library(authors: [String], books: [String]) throws -> ServerHarness {
        let harness = try ServerHarness(model: model)
        var operations = authors.enumerated().map { i, name in
            #"{"op": "insert", "entity": "Author", "ref": "a\#(i)", "values": {"name": "\#(name)"}}"#
        }
        operations += books.map { #"{"op": "insert", "entity": "Book", "values": \#($0)}"# }
        let saved = try harness.request("POST", "/v1/transactions", json: #"{"operations": [\#(operations.joined(separator: ","))]}"#)
        #expect(saved.status == 200, "\(saved.text)")
        return harness
    }

    /// GET of the aggregate endpoint with these query parameters, percent-encoded.
    static func aggregate(_ harness: ServerHarness, _ parameters: [(String, String)], entity: String = "Book",
                          method: String = "GET") throws -> RawHTTPClient.Response {
        let query = parameters.map { "\($0.0)=\($0.1.queryEncoded)" }.joined(separator: "&")
        return try harness.request(method, "/v1/objects/\(entity)/aggregate?\(query)")
    }

    static func books() throws -> ServerHarness {
        try library(authors: ["Ann", "Bob", "Cy"], books: [
            #"{"title": "A1", "pages": 3000, "price": "10", "author": "a0"}"#,
            #"{"title": "A2", "pages": 400, "price": "15", "author": "a0", "inStock": true}"#,
            #"{"title": "B1", "pages": 500, "price": "0.1", "author": "a1"}"#,
            #"{"title": "B2", "pages": 700, "price": "0.2", "author": "a1", "inStock": true}"#,
            #"{"title": "C1", "pages": 900, "price": "12.5", "author": "a2", "inStock": false}"#,
            #"{"title": "N1", "pages": 50}"#,
        ])
    }

    @Test("the contract's example: groups in select order, to-one keys as IDs, decimals as strings, sorted")
    func contractExample() throws {
        let harness = try Self.books()
        let response = try Self.aggregate(harness, [("select", "author,books:count(),pages:pages.sum(),avgPrice:price.avg()"),
                                                    ("sort", "-pages")])
        #expect(response.status == 200)
        #expect(response.header("Content-Type") == "application/json")
        #expect(response.text == #"{"groups":["#
            + #"{"author":"Author/1","books":2,"pages":3400,"avgPrice":"12.5"},"#
            + #"{"author":"Author/2","books":2,"pages":1200,"avgPrice":"0.15"},"#
            + #"{"author":"Author/3","books":1,"pages":900,"avgPrice":"12.5"},"#
            + #"{"author":null,"books":1,"pages":50,"avgPrice":null}]}"#)

        let named = try Self.aggregate(harness, [("select", "author.name,inStock,total:price.sum(),first:title.min(),count()"),
                                                 ("where", "pages > 100"), ("having", "total > 0.25 AND count >= 1"),
                                                 ("sort", "author.name,-inStock")])
        #expect(named.text == #"{"groups":["#
            + #"{"author.name":"Ann","inStock":true,"total":"15","first":"A2","count":1},"#
            + #"{"author.name":"Ann","inStock":null,"total":"10","first":"A1","count":1},"#
            + #"{"author.name":"Cy","inStock":false,"total":"12.5","first":"C1","count":1}]}"#,
                "the key path as written names a group key; the function's name an aggregate")
        let whole = try Self.aggregate(harness, [("select", "count(),pages.max(),latest:published.max()")])
        #expect(whole.text == #"{"groups":[{"count":6,"max":3000,"latest":null}]}"#, "no group keys: one group")
        let head = try harness.client()  // a HEAD answer has no body, so only its head is read
        try head.send(Array("HEAD /v1/objects/Book/aggregate?select=count() HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8))
        #expect(try head.readHead().status == 200)
    }

    @Test("no rows: one group without group keys, count and sums 0, the rest null; none with group keys")
    func empty() throws {
        let harness = try Self.library(authors: [], books: [])
        let none = try Self.aggregate(harness, [("select", "count(),pages:pages.sum(),price:price.sum(),avg:price.avg(),min:title.min()")])
        #expect(none.text == #"{"groups":[{"count":0,"pages":0,"price":"0","avg":null,"min":null}]}"#)
        #expect(try Self.aggregate(harness, [("select", "author,count()")]).text == #"{"groups":[]}"#)
    }

    @Test("a where's @sum of integers past Int64 compares the true total: never a 500, in fetches and aggregates")
    func predicateSumPastInt64() throws {
        let harness = try Self.library(authors: ["Ann", "Bob"], books: [
            #"{"title": "big", "pages": 9223372036854775807, "author": "a0"}"#, #"{"title": "one", "pages": 1, "author": "a0"}"#,
            #"{"title": "small", "pages": 3, "author": "a1"}"#,
        ])
        let fetched = try harness.request("GET", "/v1/objects/Author?where=\("books.@sum.pages > 1000".queryEncoded)")
        #expect(fetched.status == 200, "\(fetched.text)")
        #expect((fetched.json?["objects"] as? [[String: Any]])?.compactMap { $0["_id"] as? String } == ["Author/1"], "\(fetched.text)")
        let counted = try Self.aggregate(harness, [("select", "n:count()"), ("where", "books.@sum.pages > 9223372036854775807")], entity: "Author")
        #expect(counted.text == #"{"groups":[{"n":1}]}"#, "\(counted.text)")
    }

    @Test("errors: bad-request, unknown-property, invalid-predicate and 422 validation, as problem+json")
    func errorCodes() throws {
        let harness = try Self.library(authors: ["Ann"], books: [
            #"{"title": "big", "pages": 9223372036854775807, "author": "a0"}"#, #"{"title": "one", "pages": 1, "author": "a0"}"#,
        ])
        let cases: [([(String, String)], Int, String)] = [
            ([("select", "title,title")], 400, "bad-request"),                       // duplicate key
            ([("select", "n:count(),n:pages.max()")], 400, "bad-request"),          // duplicate alias
            ([("select", "count(),count()")], 400, "bad-request"),                  // duplicate function name
            ([("select", "pages.sum(")], 400, "bad-request"),                       // malformed
            ([("select", "pages.median()")], 400, "bad-request"),
            ([("select", "sum()")], 400, "bad-request"),
            ([("select", "a,,b")], 400, "bad-request"),
            ([("select", "pages::text")], 400, "bad-request"),
            ([], 400, "bad-request"),                                               // no select
            ([("select", "count()"), ("colour", "red")], 400, "bad-request"),       // unknown parameter
            ([("select", "title.sum()")], 400, "bad-request"),                      // sum of a string
            ([("select", "title.avg()")], 400, "bad-request"),
            ([("select", "author.books")], 400, "bad-request"),                     // to-many key path
            ([("select", "count()"), ("limit", "1001")], 400, "bad-request"),
            ([("select", "count()"), ("limit", "0")], 400, "bad-request"),
            ([("select", "count()"), ("offset", "-1")], 400, "bad-request"),
            ([("select", "colour")], 400, "unknown-property"),
            ([("select", "colour.sum()")], 400, "unknown-property"),
            ([("select", "author.colour")], 400, "unknown-property"),
            ([("select", "count()"), ("having", "total > 1")], 400, "unknown-property"),
            ([("select", "count()"), ("sort", "-pages")], 400, "unknown-property"),
            ([("select", "count()"), ("where", "colour == 1")], 400, "unknown-property"),
            ([("select", "count()"), ("where", "pages >=")], 400, "invalid-predicate"),
            ([("select", "count()"), ("having", "count >")], 400, "invalid-predicate"),
            ([("select", "count()"), ("having", "count == \"many\"")], 400, "invalid-predicate"),
            ([("select", "total:pages.sum()")], 422, "validation"),                 // Int64.max + 1
        ]
        for (parameters, status, code) in cases {
            let response = try Self.aggregate(harness, parameters)
            #expect(response.status == status && response.json?["code"] as? String == code, "\(parameters): \(response.text)")
            #expect(response.header("Content-Type") == "application/problem+json", "\(parameters)")
            #expect(response.json?["status"] as? Int == status && response.json?["detail"] is String, "\(parameters)")
        }
        let overflow = try Self.aggregate(harness, [("select", "author,total:pages.sum()")])
        let errors = overflow.json?["errors"] as? [[String: Any]]
        #expect(errors?.first?["property"] as? String == "total" && errors?.first?["code"] as? String == "too-large", "\(overflow.text)")
        #expect(try Self.aggregate(harness, [("select", "total:pages.sum()")], method: "POST").status == 405)
        #expect(try Self.aggregate(harness, [("select", "count()")], entity: "Nope").json?["code"] as? String == "unknown-entity")
        let having = try Self.aggregate(harness, [("select", "count()"), ("having", "count >")])
        #expect(having.json?["position"] as? Int == 8, "the column of the problem in the having predicate")
        #expect(try Self.aggregate(harness, [("select", "n:count()"), ("where", "pages < 100")]).text == #"{"groups":[{"n":1}]}"#,
                "the server goes on answering after every error")
    }

    @Test("an aggregate past the query timeout is 503 query-timeout with Retry-After")
    func queryTimeout() throws {
        let harness = try ServerHarness(model: Self.model) { service, _ in service.queryTimeout = .nanoseconds(1) }
        let books = (0..<3000).map { #"{"op": "insert", "entity": "Book", "values": {"pages": \#($0), "price": "\#($0).25"}}"# }
        #expect(try harness.request("POST", "/v1/transactions", json: #"{"operations": [\#(books.joined(separator: ","))]}"#).status == 200)
        let response = try Self.aggregate(harness, [("select", "pages,price.sum()")])
        #expect(response.status == 503 && response.json?["code"] as? String == "query-timeout", "\(response.text.prefix(200))")
        #expect(response.header("Retry-After") != nil)
    }

    @Test("limit defaults to 100 and takes at most 1000; offset skips groups")
    func limits() throws {
        let books = (0..<120).map { #"{"title": "t\#(String(format: "%03d", $0))", "pages": \#($0)}"# }
        let harness = try Self.library(authors: [], books: books)
        func titles(_ parameters: [(String, String)]) throws -> [String] {
            (try Self.aggregate(harness, parameters).json?["groups"] as? [[String: Any]])?.compactMap { $0["title"] as? String } ?? []
        }
        #expect(try titles([("select", "title,count()")]).count == 100)
        #expect(try titles([("select", "title,count()"), ("limit", "1000")]).count == 120)
        #expect(try titles([("select", "title,count()"), ("limit", "2"), ("offset", "5")]) == ["t005", "t006"])
        #expect(try titles([("select", "title,p:pages.sum()"), ("sort", "-p"), ("limit", "2")]) == ["t119", "t118"])
        let over = try Self.aggregate(harness, [("select", "title"), ("limit", "1001")])
        #expect(over.status == 400 && over.json?["code"] as? String == "bad-request")
    }
}
