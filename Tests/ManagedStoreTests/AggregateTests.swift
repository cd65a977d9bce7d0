import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite

/// Aggregate requests: every function on every type, grouping, the empty cases, exact sums
/// (overflow is an error), having, sort and limit, and a twin check against the same numbers
/// computed in Swift over fetched objects.
@Suite("Aggregates")
struct AggregateTests {
    // MARK: Fixture

    /// Books of authors, with an attribute of every type that aggregates.
    static let model: ManagedObjectModel = {
        let json = #"""
        { "name": "Library", "version": 1, "entities": [
            { "name": "Author", "attributes": [{"name": "name", "type": "string"}],
              "relationships": [{"name": "books", "destination": "Book", "toMany": true, "inverse": "author"}] },
            { "name": "Book", "attributes": [
                {"name": "title", "type": "string"}, {"name": "pages", "type": "integer64"},
                {"name": "copies", "type": "integer32"}, {"name": "shelf", "type": "integer16"},
                {"name": "price", "type": "decimal"}, {"name": "rating", "type": "double"},
                {"name": "weight", "type": "float"}, {"name": "published", "type": "date"},
                {"name": "inStock", "type": "boolean"}, {"name": "isbn", "type": "uuid"}],
              "relationships": [{"name": "author", "destination": "Author", "inverse": "books"}] } ] }
        """#
        do { return try ManagedObjectModel(jsonData: Array(json.utf8)) } catch {
            fatalError("the library test model is invalid: \(error)")
        }
    }()

    struct Book {
        var author: Int?
        var values: [String: AttributeValue]
        init(_ author: Int?, _ values: [String: AttributeValue]) {
            self.author = author
            self.values = values
        }
        init(_ values: [String: AttributeValue]) { self.init(nil, values) }
    }

    /// A store holding `authors` (by name) and `books`, saved; returns it and the authors' IDs.
    static func library(authors: [String] = [], books: [Book]) throws -> (PersistentContainer, [ManagedObjectID]) {
        let container = try Fixtures.container(model: model)
        let context = container.newBackgroundContext()
        let ids = try context.performAndWait {
            let people = authors.map { name -> ManagedObject in
                let author = context.insertNewObject(forEntityName: "Author")
                author.setValue(name, forKey: "name")
                return author
            }
            for book in books {
                let object = context.insertNewObject(forEntityName: "Book")
                for (key, value) in book.values { object.setAttributeValue(value, forKey: key) }
                if let author = book.author { object.setObject(people[author], forKey: "author") }
            }
            try context.save()
            return people.map(\.objectID)
        }
        return (container, ids)
    }

    static func aggregate(_ container: PersistentContainer, _ request: AggregateRequest) throws -> [AggregateGroup] {
        let context = container.newBackgroundContext()
        return try context.performAndWait { try context.aggregate(request) }
    }

    static func decimal(_ text: String) -> AttributeValue {
        // Literals of this file; a nil is a typo here, not input.
        .decimal(Decimal.exactly(text)!)
    }

    static func date(_ seconds: Double) -> AttributeValue { .date(Date(timeIntervalSinceReferenceDate: seconds)) }

    static func books(_ properties: [AggregateProperty], where predicate: ObjectPredicate? = nil) -> AggregateRequest {
        AggregateRequest(entityName: "Book", properties: properties, predicate: predicate)
    }

    // MARK: Functions and types

    @Test("count, sum, avg, min and max on every type they take, with nulls left out")
    func everyFunctionOnEveryType() throws {
        let (container, _) = try Self.library(books: [
            Book(["title": .string("b"), "pages": .integer(100), "copies": .integer(3), "shelf": .integer(1), "price": Self.decimal("12.50"),
                  "rating": .double(4.5), "weight": .float(0.5), "published": Self.date(1000), "inStock": .boolean(true)]),
            Book(["title": .string("Z"), "pages": .integer(250), "copies": .integer(7), "shelf": .integer(2), "price": Self.decimal("0.1"),
                  "rating": .double(3), "weight": .float(1.25), "published": Self.date(-50.25), "inStock": .boolean(false)]),
            Book(["title": .string("é")]),
        ])
        let expected: [(AggregateProperty, AttributeValue)] = [
            (.count(as: "rows"), .integer(3)), (.count("pages", as: "counted"), .integer(2)),
            (.sum("pages", as: "p+"), .integer(350)), (.sum("copies", as: "c+"), .integer(10)), (.sum("shelf", as: "s+"), .integer(3)),
            (.sum("price", as: "$+"), Self.decimal("12.6")), (.sum("rating", as: "r+"), .double(7.5)), (.sum("weight", as: "w+"), .double(1.75)),
            (.avg("pages", as: "p~"), .double(175)), (.avg("copies", as: "c~"), .double(5)), (.avg("shelf", as: "s~"), .double(1.5)),
            (.avg("price", as: "$~"), Self.decimal("6.3")), (.avg("rating", as: "r~"), .double(3.75)), (.avg("weight", as: "w~"), .double(0.875)),
            (.min("pages", as: "p<"), .integer(100)), (.max("pages", as: "p>"), .integer(250)),
            (.min("price", as: "$<"), Self.decimal("0.1")), (.max("price", as: "$>"), Self.decimal("12.5")),
            (.min("rating", as: "r<"), .double(3)), (.max("weight", as: "w>"), .float(1.25)),
            (.min("published", as: "d<"), Self.date(-50.25)), (.max("published", as: "d>"), Self.date(1000)),
            // Code-point order: "Z" (U+005A) < "b" < "é" (U+00E9).
            (.min("title", as: "t<"), .string("Z")), (.max("title", as: "t>"), .string("é")),
            (.min("inStock", as: "b<"), .boolean(false)), (.max("inStock", as: "b>"), .boolean(true)),
        ]
        let groups = try Self.aggregate(container, Self.books(expected.map(\.0)))
        #expect(groups.count == 1)
        for (property, value) in expected {
            #expect(groups.first?[property.name] == .attribute(value), "\(property.name)")
        }
        #expect(groups.first?.names == expected.map(\.0.name), "results come in the request's order")
    }

    @Test("sum and avg of what is not a number are errors naming it")
    func notNumeric() throws {
        let (container, _) = try Self.library(books: [Book(["title": .string("x")])])
        let cases: [(AggregateProperty, AggregateError)] = [
            (.sum("title"), .notNumeric(.sum, keyPath: "title", type: "string")),
            (.avg("published"), .notNumeric(.avg, keyPath: "published", type: "date")),
            (.sum("inStock"), .notNumeric(.sum, keyPath: "inStock", type: "boolean")),
            (.avg("isbn"), .notNumeric(.avg, keyPath: "isbn", type: "uuid")),
            (.sum("author"), .notNumeric(.sum, keyPath: "author", type: "relationship")),
            (.sum("author.name"), .notNumeric(.sum, keyPath: "author.name", type: "string")),
        ]
        for (property, error) in cases {
            #expect(throws: error) { try Self.aggregate(container, Self.books([property])) }
        }
    }

    @Test("typed errors: unknown key paths and names, duplicate names, to-many key paths, bad limits")
    func errors() throws {
        let (container, _) = try Self.library(books: [Book(["title": .string("x")])])
        func expectError(_ error: AggregateError, _ request: AggregateRequest, sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(throws: error, sourceLocation: sourceLocation) { try Self.aggregate(container, request) }
        }
        expectError(.fetch(.unknownKeyPath("nope", entity: "Book")), Self.books([.sum("nope")]))
        expectError(.fetch(.unknownKeyPath("author.nope", entity: "Book")), Self.books([.groupKey("author.nope")]))
        expectError(.fetch(.unknownEntity("Nope")), AggregateRequest(entityName: "Nope", properties: [.count()]))
        expectError(.duplicateName("count"), Self.books([.count(), .count("pages")]))
        expectError(.duplicateName("title"), Self.books([.groupKey("title"), .max("pages", as: "title")]))
        expectError(.invalidProperty(name: "author.books", reason: "'author.books' goes through a to-many relationship; use attributes and to-one key paths"),
                    Self.books([.groupKey("author.books")]))
        expectError(.invalidProperty(name: "sum", reason: "sum needs a key path; only count counts rows"),
                    Self.books([AggregateProperty(name: "sum", expression: .function(.sum, keyPath: nil))]))
        var having = Self.books([.groupKey("title"), .count()])
        having.havingPredicate = .key("total") > 2
        expectError(.unknownName("total", known: ["title", "count"]), having)
        var sorted = Self.books([.count()])
        sorted.sortDescriptors = [ObjectSortDescriptor("pages")]
        expectError(.unknownName("pages", known: ["count"]), sorted)
        var negative = Self.books([.count()])
        negative.fetchLimit = -1
        expectError(.fetch(.invalidRequest("fetchLimit and fetchOffset cannot be negative")), negative)
        #expect(throws: AggregateError.self) {
            var mismatched = Self.books([.groupKey("title"), .count()])
            mismatched.havingPredicate = .key("count") == "many"
            return try Self.aggregate(container, mismatched)
        }
    }

    // MARK: Groups

    @Test("group keys tell strings apart by code point, as SQLite's GROUP BY does: é precomposed and e + U+0301 are two groups")
    func groupKeysByCodePoint() throws {
        let titles = ["\u{e9}", "e\u{301}", "\u{e9}", "E"]
        let (container, _) = try Self.library(books: titles.map { Book(["title": .string($0)]) })
        let groups = try Self.aggregate(container, Self.books([.groupKey("title"), .count()]))
        #expect(groups.map { $0["title"] } == ["E", "e\u{301}", "\u{e9}"].map { .attribute(.string($0)) }, "in code-point order")
        #expect(groups.map { $0["count"] } == [1, 1, 2].map { .attribute(.integer($0)) })
    }

    @Test("group by an attribute, a to-one (its object ID, nil for none) and a to-one's attribute")
    func grouping() throws {
        let (container, authors) = try Self.library(authors: ["Ann", "Bob"], books: [
            Book(0, ["pages": .integer(100), "inStock": .boolean(true)]), Book(0, ["pages": .integer(200), "inStock": .boolean(false)]),
            Book(1, ["pages": .integer(50), "inStock": .boolean(true)]),
            Book(nil, ["pages": .integer(10), "inStock": .boolean(true)]), Book(nil, ["pages": .integer(20)]),
        ])
        let byAuthor = try Self.aggregate(container, Self.books([.groupKey("author"), .count(as: "books"), .sum("pages", as: "pages")]))
        #expect(byAuthor.map { $0["author"] } == [.object(nil), .object(authors[0]), .object(authors[1])], "nulls first, then by key")
        #expect(byAuthor.map { $0["books"] } == [.attribute(.integer(2)), .attribute(.integer(2)), .attribute(.integer(1))])
        #expect(byAuthor.map { $0["pages"] } == [.attribute(.integer(30)), .attribute(.integer(300)), .attribute(.integer(50))])

        let byName = try Self.aggregate(container, Self.books([.groupKey("author.name", as: "who"), .max("pages")]))
        #expect(byName.map { $0["who"] } == [.attribute(.null), .attribute(.string("Ann")), .attribute(.string("Bob"))])
        #expect(byName.map { $0["max"] } == [.attribute(.integer(20)), .attribute(.integer(200)), .attribute(.integer(50))])

        let byBoth = try Self.aggregate(container, Self.books([.count(), .groupKey("inStock"), .groupKey("author")]))
        #expect(byBoth.map { [$0["inStock"], $0["author"], $0["count"]] } == [
            [.attribute(.null), .object(nil), .attribute(.integer(1))],
            [.attribute(.boolean(false)), .object(authors[0]), .attribute(.integer(1))],
            [.attribute(.boolean(true)), .object(nil), .attribute(.integer(1))],
            [.attribute(.boolean(true)), .object(authors[0]), .attribute(.integer(1))],
            [.attribute(.boolean(true)), .object(authors[1]), .attribute(.integer(1))],
        ], "ordered by the group keys in the request's order")
        #expect(try Self.aggregate(container, Self.books([.count("author", as: "withAuthor")])).first?["withAuthor"] == .attribute(.integer(3)))
    }

    @Test("no rows: one group without group keys (count 0, sums 0, the rest null), none with them")
    func emptyCases() throws {
        let (container, _) = try Self.library(books: [Book(["pages": .integer(5), "price": Self.decimal("1")])])
        let nothing = ObjectPredicate.key("pages") > 1000
        let all: [AggregateProperty] = [.count(), .count("pages", as: "counted"), .sum("pages", as: "pages"), .sum("price", as: "price"),
                                        .sum("rating", as: "rating"), .avg("pages", as: "avg"), .avg("price", as: "avgPrice"),
                                        .min("title"), .max("published")]
        let groups = try Self.aggregate(container, Self.books(all, where: nothing))
        #expect(groups.count == 1)
        let expected: [AttributeValue] = [.integer(0), .integer(0), .integer(0), .decimal(0), .double(0), .null, .null, .null, .null]
        #expect(groups.first?.values == expected.map(PropertyValue.attribute))
        #expect(try Self.aggregate(container, Self.books([.groupKey("title"), .count()], where: nothing)).isEmpty)
        var kept = Self.books([.count()], where: nothing)
        kept.havingPredicate = .key("count") > 0
        #expect(try Self.aggregate(container, kept).isEmpty, "having can still drop the one group")
        kept.fetchOffset = 1
        kept.havingPredicate = nil
        #expect(try Self.aggregate(container, kept).isEmpty)
    }

    // MARK: Exactness

    @Test("a sum of integers beyond Int64 is an overflow error naming the result; partial sums may overflow and come back")
    func integerOverflow() throws {
        let max = Int64.max, min = Int64.min
        let (container, _) = try Self.library(authors: ["Ann", "Bob"], books: [
            Book(0, ["pages": .integer(max)]), Book(0, ["pages": .integer(1)]),
            Book(1, ["pages": .integer(max)]), Book(1, ["pages": .integer(max)]), Book(1, ["pages": .integer(min)]), Book(1, ["pages": .integer(min)]),
        ])
        #expect(throws: AggregateError.overflow(name: "total")) {
            try Self.aggregate(container, Self.books([.groupKey("author"), .sum("pages", as: "total")]))
        }
        let bob = try Self.aggregate(container, Self.books([.sum("pages", as: "total")], where: .key("author.name") == "Bob"))
        #expect(bob.first?["total"] == .attribute(.integer(-2)), "2 × max + 2 × min, whatever the order of the rows")
        let (negative, _) = try Self.library(books: [Book(["pages": .integer(min)]), Book(["pages": .integer(-1)])])
        #expect(throws: AggregateError.overflow(name: "sum")) { try Self.aggregate(negative, Self.books([.count(), .sum("pages")])) }
        let average = try Self.aggregate(container, Self.books([.avg("pages")], where: .key("author.name") == "Bob"))
        #expect(average.first?["avg"] == .attribute(.double(-0.5)), "averages of integers are doubles and do not overflow")
    }

    @Test("sums, averages, minimums and maximums of decimals are exact decimals")
    func decimalExactness() throws {
        let (container, _) = try Self.library(authors: ["A", "B", "C", "D", "E"], books: [
            Book(0, ["price": Self.decimal("0.1")]), Book(0, ["price": Self.decimal("0.2")]),
            // 1e30 + 1e-8 needs 39 digits: a running `Decimal` sum would round the 1e-8 away.
            Book(1, ["price": Self.decimal("1e30")]), Book(1, ["price": Self.decimal("1e-8")]), Book(1, ["price": Self.decimal("-1e30")]),
            Book(2, ["price": Self.decimal("1")]), Book(2, ["price": Self.decimal("2")]), Book(2, ["price": Self.decimal("2")]),
            Book(3, ["price": Self.decimal("99999999999999999999999999999999999999")]), Book(3, ["price": Self.decimal("0.1")]),
            Book(4, ["price": Self.decimal("-100")]), Book(4, ["price": Self.decimal("-1.25")]), Book(4, ["price": Self.decimal("0.001")]),
        ])
        func results(_ author: String, _ property: AggregateProperty) throws -> PropertyValue? {
            try Self.aggregate(container, Self.books([property], where: .key("author.name") == author)).first?[property.name]
        }
        #expect(try results("A", .sum("price")) == .attribute(Self.decimal("0.3")))
        #expect(try results("A", .avg("price")) == .attribute(Self.decimal("0.15")))
        #expect(try results("B", .sum("price")) == .attribute(Self.decimal("0.00000001")))
        #expect(try results("C", .avg("price")) == .attribute(Self.decimal("1.6666666666666666666666666666666666667")),
                "38 significant digits, rounded half up")
        #expect(throws: AggregateError.overflow(name: "sum")) { try results("D", .sum("price")) }
        #expect(try results("D", .max("price")) == .attribute(Self.decimal("99999999999999999999999999999999999999")))
        #expect(try results("E", .min("price")) == .attribute(Self.decimal("-100")), "by value, not by text")
        #expect(try results("E", .max("price")) == .attribute(Self.decimal("0.001")))
        #expect(try results("E", .sum("price")) == .attribute(Self.decimal("-101.249")))
        var having = Self.books([.groupKey("author.name", as: "who"), .sum("price", as: "total")], where: .key("author.name") != "D")
        having.havingPredicate = .key("total") > 0.2 && .key("total") < 10
        having.sortDescriptors = [ObjectSortDescriptor("total", ascending: false)]
        #expect(try Self.aggregate(container, having).map { $0["who"] } == [.attribute(.string("C")), .attribute(.string("A"))],
                "decimal results compare and sort as numbers")
    }

    /// The exact sum of decimals written as texts, fed as the SQL function feeds it (stored texts' parts).
    static func exactSum(_ texts: [String]) -> ExactDecimalSum {
        var sum = ExactDecimalSum()
        for text in texts {
            // Literals of this file; a nil is a typo here, not input.
            var stored = DecimalStorage.encode(Decimal.exactly(text)!)!
            stored.withUTF8 { buffer in
                _ = DecimalStorage.withComponents(buffer) { negative, count, exponent, digit -> Void? in
                    sum.add(negative: negative, count: count, exponent: exponent, digit: digit)
                    return ()
                }
            }
        }
        return sum
    }

    @Test("exact decimal sums and averages at the edges of Decimal's range")
    func decimalEdges() throws {
        func decimal(_ text: String) -> Decimal? { Decimal.exactly(text) }
        #expect(Self.exactSum(["1e127", "1e-128", "-1e127"]).sum == decimal("1e-128"), "256 digits apart, still exact")
        #expect(Self.exactSum(["9e127", "9e127"]).sum == decimal("18e127"))
        #expect(Self.exactSum(["1e127", "1e-128"]).sum == nil, "needs 256 significant digits: does not fit")
        #expect(Self.exactSum(["1e-128", "0"]).average == decimal("1e-128"), "5e-129 rounds half up to the smallest exponent")
        #expect(Self.exactSum(["1e-128", "0", "0"]).average == 0)
        #expect(Self.exactSum(["-1", "-2", "-2"]).average == decimal("-1.6666666666666666666666666666666666667"), "half away from zero")
        #expect(Self.exactSum(["12345678901234567890123456789012345678", "-0.5"]).average
                == decimal("6172839450617283945061728394506172838.8"), "38 digits kept, from 39 and more")
        #expect(Self.exactSum([]).sum == 0 && Self.exactSum([]).average == nil)
        #expect(Self.exactSum(["0", "0"]).average == 0 && Self.exactSum(["0"]).count == 1)
    }

    // MARK: Having, sort, limit

    @Test("having keeps groups by their results; sort by results, ties by group keys ascending; limit and offset")
    func havingSortLimit() throws {
        let (container, _) = try Self.library(authors: ["Ann", "Bob", "Cy", "Di"], books: [
            Book(0, ["pages": .integer(300)]), Book(0, ["pages": .integer(100)]),
            Book(1, ["pages": .integer(400)]),
            Book(2, ["pages": .integer(150)]), Book(2, ["pages": .integer(250)]),
            Book(3, ["pages": .integer(100)]), Book(3, ["pages": .integer(100)]), Book(3, ["pages": .integer(50)]),
        ])
        var request = Self.books([.groupKey("author.name", as: "name"), .count(as: "books"), .sum("pages", as: "pages")])
        request.sortDescriptors = [ObjectSortDescriptor("pages", ascending: false)]
        func names() throws -> [String?] {
            try Self.aggregate(container, request).map { if case .attribute(.string(let s))? = $0["name"] { return s } else { return nil } }
        }
        #expect(try names() == ["Ann", "Bob", "Cy", "Di"], "400, 400, 400 tie: by name ascending; then 250")
        request.havingPredicate = try ObjectPredicate(format: "books >= 2 AND name != %@", "Cy")
        #expect(try names() == ["Ann", "Di"])
        request.havingPredicate = try ObjectPredicate(format: "pages == 400 OR name BEGINSWITH[c] 'd'")
        request.fetchLimit = 2
        #expect(try names() == ["Ann", "Bob"])
        request.fetchOffset = 2
        #expect(try names() == ["Cy", "Di"])
        request.sortDescriptors = [ObjectSortDescriptor("books"), ObjectSortDescriptor("name", ascending: false)]
        request.fetchLimit = 0
        request.fetchOffset = 0
        #expect(try names() == ["Bob", "Cy", "Ann", "Di"])
    }

    @Test("unsaved changes are not seen: an aggregate reads the store")
    func pendingChangesNotSeen() throws {
        let (container, _) = try Self.library(books: [Book(["pages": .integer(1)])])
        let context = container.newBackgroundContext()
        try context.performAndWait { () throws in
            let book = context.insertNewObject(forEntityName: "Book")
            book.setValue(Int64(5), forKey: "pages")
            #expect(try context.aggregate(Self.books([.count(), .sum("pages")])).first?.values == [.attribute(.integer(1)), .attribute(.integer(1))])
            try context.save()
            #expect(try context.aggregate(Self.books([.count(), .sum("pages")])).first?.values == [.attribute(.integer(2)), .attribute(.integer(6))])
        }
    }

    @Test("a request past its timeout is stopped inside SQLite with a typed error")
    func timeout() throws {
        let (container, _) = try Self.library(books: (0..<3000).map { Book(["pages": .integer(Int64($0)), "price": Self.decimal("\($0).5")]) })
        var request = Self.books([.groupKey("pages"), .sum("price"), .avg("pages")])
        request.timeout = .nanoseconds(1)
        #expect(throws: AggregateError.fetch(.timedOut(.nanoseconds(1)))) { try Self.aggregate(container, request) }
        request.timeout = .seconds(60)
        #expect(try Self.aggregate(container, request).count == 3000)
    }

    @Test("constants of the predicate and the having predicate are bound, never written into the SQL")
    func valuesAreBound() throws {
        let (container, _) = try Self.library(books: [Book(["title": .string("O'Brien\"; DROP TABLE x; --")])])
        var request = Self.books([.groupKey("title"), .sum("price", as: "total")], where: .key("title") != "x'y")
        request.havingPredicate = .key("title") == "O'Brien\"; DROP TABLE x; --" && .key("total") > 0.5
        let context = container.newBackgroundContext()
        let (sql, bindings) = try context.performAndWait { try context.compiledSQL(for: request) }
        #expect(!sql.contains("O'Brien") && !sql.contains("x'y") && !sql.contains("0.5"))
        #expect(bindings.contains(.string("O'Brien\"; DROP TABLE x; --")) && bindings.contains(.string("x'y")))
        request.havingPredicate = .key("title") == "O'Brien\"; DROP TABLE x; --"
        #expect(try Self.aggregate(container, request).count == 1)
    }

    // MARK: Twin check

    /// The same aggregates computed in Swift over the fetched objects.
    struct SwiftGroup {
        var keys: [PropertyValue]
        var books: [ManagedObject]
    }

    /// Orders two results as the store does: nulls first, numbers by value, strings by code
    /// point, objects by primary key.
    static func order(_ a: PropertyValue?, _ b: PropertyValue?) -> ComparisonResult {
        switch (a, b) {
        case let (.object(x)?, .object(y)?):
            let (p, q) = (x?.primaryKey ?? Int64.min, y?.primaryKey ?? Int64.min)
            return p < q ? .orderedAscending : (p == q ? .orderedSame : .orderedDescending)
        case let (.attribute(x)?, .attribute(y)?):
            if x.isNull || y.isNull { return x.isNull == y.isNull ? .orderedSame : (x.isNull ? .orderedAscending : .orderedDescending) }
            return AttributeValue.compare(x, y) ?? .orderedSame
        default: return .orderedSame
        }
    }

    /// Whether two results agree: exactly, except averages (doubles to 1e-9, decimals to 1e-18, relative).
    static func agree(_ sql: PropertyValue?, _ swift: PropertyValue?) -> Bool {
        switch (sql, swift) {
        case let (.attribute(.double(a))?, .attribute(.double(b))?): return abs(a - b) <= 1e-9 * max(1, abs(b))
        case let (.attribute(.decimal(a))?, .attribute(.decimal(b))?):
            let error = abs(a - b), scale = Swift.max(Decimal(1), abs(b))
            return error <= scale * Decimal(sign: .plus, exponent: -18, significand: 1)
        default: return sql == swift
        }
    }

    @Test("twin check: SQL aggregates equal the same computed in Swift over fetched objects, on random data",
          arguments: 0..<12)
    func twin(seed: UInt64) throws {
        var random = PredicateFuzzTests.SplitMix64(seed: 0xa66_0000 + seed)
        let titles = ["a", "B", "é", "Zed", "😀"]
        var books: [Book] = []
        for _ in 0..<(20 + random.below(60)) {
            var values: [String: AttributeValue] = [:]
            if random.chance(85) { values["pages"] = .integer(Int64(random.below(2001)) - 1000) }
            if random.chance(80) { values["price"] = .decimal(Decimal(sign: .plus, exponent: -2, significand: Decimal(random.below(100_000))) - 300) }
            if random.chance(80) { values["rating"] = .double(Double(random.below(1000)) / 7) }
            if random.chance(90) { values["title"] = .string(random.pick(titles)) }
            if random.chance(90) { values["inStock"] = .boolean(random.chance(50)) }
            books.append(Book(random.chance(85) ? random.below(4) : nil, values))
        }
        let (container, _) = try Self.library(authors: ["w", "x", "y", "z"], books: books)
        let keys = [["author"], ["inStock"], ["title", "author"], [], ["author.name", "inStock"]][random.below(5)]
        let functions: [AggregateProperty] = [
            .count(as: "n"), .count("rating", as: "rated"), .sum("pages", as: "pages"), .avg("pages", as: "avgPages"),
            .sum("price", as: "price"), .avg("price", as: "avgPrice"), .min("price", as: "cheapest"), .max("title", as: "last"),
            .sum("rating", as: "rating"), .avg("rating", as: "avgRating"), .min("rating", as: "lowest"),
        ]
        var request = Self.books(keys.map { .groupKey($0) } + functions,
                                 where: random.chance(50) ? nil : .key("pages") > Int64(random.below(1000) - 500))
        let minimum = Int64(random.below(4))
        if random.chance(50) { request.havingPredicate = .key("n") >= minimum }
        let sortKey = random.pick(["pages", "n", "price", "last"])
        let ascending = random.chance(50)
        request.sortDescriptors = [ObjectSortDescriptor(sortKey, ascending: ascending)]
        request.fetchLimit = random.chance(50) ? 0 : 1 + random.below(5)
        request.fetchOffset = random.chance(70) ? 0 : random.below(3)

        let context = container.newBackgroundContext()
        try context.performAndWait { () throws in
            let sql = try context.aggregate(request)
            let fetched = try context.fetch(FetchRequest(entityName: "Book", predicate: request.predicate))
            let evaluator = PredicateEvaluator(context: context)
            let entity = try #require(Self.model.resolvedEntity(named: "Book"))
            let keyPaths = try keys.map { try ResolvedKeyPath($0, rootEntity: entity, model: Self.model) }
            var groups: [SwiftGroup] = []
            for book in fetched {
                let groupKeys = keyPaths.map { keyPath -> PropertyValue in
                    switch (evaluator.value(keyPath, from: book), keyPath.terminal) {
                    case (.object(let id), _): return .object(id)
                    case (.attribute, .toOne): return .object(nil)  // the evaluator's null for a to-one without an object
                    case (.attribute(let v), _): return .attribute(v)
                    }
                }
                if let i = groups.firstIndex(where: { $0.keys == groupKeys }) {
                    groups[i].books.append(book)
                } else {
                    groups.append(SwiftGroup(keys: groupKeys, books: [book]))
                }
            }
            if keys.isEmpty && groups.isEmpty { groups = [SwiftGroup(keys: [], books: [])] }
            var expected: [[String: PropertyValue]] = groups.map { group in
                var row: [String: PropertyValue] = [:]
                for (key, value) in zip(keys, group.keys) { row[key] = value }
                let pages = group.books.compactMap { $0.value("pages", as: Int64.self) }
                let prices = group.books.compactMap { $0.value("price", as: Decimal.self) }
                let ratings = group.books.compactMap { $0.value("rating", as: Double.self) }
                let lastTitle = group.books.compactMap { $0.value("title", as: String.self) }.max { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
                row["n"] = .attribute(.integer(Int64(group.books.count)))
                row["rated"] = .attribute(.integer(Int64(ratings.count)))
                row["pages"] = .attribute(.integer(pages.reduce(0, +)))
                row["avgPages"] = .attribute(pages.isEmpty ? .null : .double(Double(pages.reduce(0, +)) / Double(pages.count)))
                row["price"] = .attribute(.decimal(prices.reduce(0, +)))
                row["avgPrice"] = .attribute(prices.isEmpty ? .null : .decimal(prices.reduce(0, +) / Decimal(prices.count)))
                row["cheapest"] = .attribute(prices.min().map(AttributeValue.decimal) ?? .null)
                row["last"] = .attribute(lastTitle.map(AttributeValue.string) ?? .null)
                row["rating"] = .attribute(.double(ratings.reduce(0, +)))
                row["avgRating"] = .attribute(ratings.isEmpty ? .null : .double(ratings.reduce(0, +) / Double(ratings.count)))
                row["lowest"] = .attribute(ratings.min().map(AttributeValue.double) ?? .null)
                return row
            }
            if request.havingPredicate != nil { expected.removeAll { Self.order($0["n"], .attribute(.integer(minimum))) == .orderedAscending } }
            expected.sort { a, b in
                let bySortKey = Self.order(a[sortKey], b[sortKey])
                if bySortKey != .orderedSame { return ascending ? bySortKey == .orderedAscending : bySortKey == .orderedDescending }
                for key in keys {
                    let byKey = Self.order(a[key], b[key])
                    if byKey != .orderedSame { return byKey == .orderedAscending }
                }
                return false
            }
            let window = expected.dropFirst(request.fetchOffset)
            let cut = Array(request.fetchLimit > 0 ? window.prefix(request.fetchLimit) : window)
            #expect(sql.count == cut.count, "seed \(seed): \(sql.count) groups in SQL, \(cut.count) in Swift")
            for (group, row) in zip(sql, cut) {
                for name in group.names {
                    #expect(Self.agree(group[name], row[name]), "seed \(seed), \(name): SQL \(String(describing: group[name])), Swift \(String(describing: row[name]))")
                }
            }
        }
    }
}
