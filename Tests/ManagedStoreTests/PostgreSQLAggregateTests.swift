import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStorePostgreSQL

/// Aggregates on the PostgreSQL store, computed by PostgreSQL (GROUP BY) or streamed through
/// the evaluator a batch at a time, against the plain path: every row of every entity read
/// loaded, and the evaluator over all of them (`storeCompilesPredicates` false). Runs in the
/// PostgreSQL run only (`make test-postgres-store`).
@Suite("PostgreSQL aggregates")
struct PostgreSQLAggregateTests {
    /// Books with a value of every aggregated type, nulls among them, equal values in many
    /// (groups of several), strings that sort differently by code point and by case, and sums
    /// of doubles that are exact whatever the order they are added in.
    static func seededLibrary() throws -> PersistentContainer {
        let titles = ["a", "B", "b", "é", "e\u{301}", "", "zz", "A", "ß", "日本"]
        let books = (0..<64).map { i -> AggregateTests.Book in
            var values: [String: AttributeValue] = ["title": .string(titles[i % titles.count])]
            if i % 5 != 0 { values["pages"] = .integer(Int64(i % 7) * 100 - 150) }
            values["copies"] = .integer(Int64(i % 3))
            if i % 4 != 1 { values["shelf"] = .integer(Int64(i % 5)) }
            if i % 6 != 2 { values["price"] = AggregateTests.decimal(["1.10", "2.25", "0.05", "10"][i % 4]) }
            if i % 7 != 3 { values["rating"] = .double(Double(i % 9) * 0.5 - 2) }
            if i % 3 != 2 { values["weight"] = .float(Float(i % 5) * 0.25) }
            if i % 8 != 4 { values["published"] = AggregateTests.date(Double(i % 6) * 86_400) }
            if i % 9 != 0 { values["inStock"] = .boolean(i % 2 == 0) }
            if i % 2 == 0 { values["isbn"] = .uuid(UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, UInt8(i % 3)))) }
            return AggregateTests.Book(i % 4 == 3 ? nil : i % 3, values)
        }
        return try AggregateTests.library(authors: ["ann", "bob", "cy"], books: books).0
    }

    static let propertySets: [[AggregateProperty]] = [
        [.count()],
        [.count(), .sum("pages"), .avg("pages"), .min("pages"), .max("pages")],
        [.groupKey("copies"), .count(), .sum("rating", as: "r"), .avg("rating", as: "ar"), .sum("weight", as: "w"), .avg("weight", as: "aw")],
        [.groupKey("title"), .count("pages", as: "n"), .min("published", as: "first"), .max("published", as: "last")],
        [.groupKey("inStock"), .groupKey("shelf"), .min("title", as: "lo"), .max("title", as: "hi"), .sum("shelf", as: "s")],
        [.groupKey("shelf"), .min("inStock", as: "all"), .max("inStock", as: "any"), .avg("copies", as: "c")],
        [.groupKey("published"), .min("rating", as: "lo"), .max("weight", as: "hi"), .min("price", as: "p")],
        // Through a to-one: the object, and its object's attribute (a LEFT JOIN).
        [.groupKey("author.name", as: "who"), .count(), .sum("pages", as: "p")],
        [.groupKey("author"), .count("author", as: "n"), .max("author.name", as: "lo"), .min("title", as: "t")],
        // Left to the evaluator: exact decimal sums, extremes of UUIDs.
        [.groupKey("copies"), .sum("price", as: "total"), .avg("price", as: "mean")],
        [.groupKey("inStock"), .min("isbn", as: "i")],
        [.groupKey("isbn"), .count()],
    ]
    static let predicates: [String?] = [
        nil, "pages > 0", "title BEGINSWITH[c] 'b' OR shelf == nil", "rating != nil AND copies == 1", "author.name == 'bob'", "FALSEPREDICATE",
    ]

    /// A few orders and windows over the groups' results (only those naming results of the set).
    static func shapes(_ properties: [AggregateProperty]) -> [(having: String?, sorts: [ObjectSortDescriptor], limit: Int, offset: Int)] {
        let names = properties.map(\.name)
        var shapes: [(having: String?, sorts: [ObjectSortDescriptor], limit: Int, offset: Int)] = [(nil, [], 0, 0), (nil, [], 2, 1)]
        if let last = names.last {
            shapes.append((nil, [ObjectSortDescriptor(last, ascending: false)], 3, 0))
            shapes.append((nil, [ObjectSortDescriptor(last), ObjectSortDescriptor(names[0], ascending: false)], 0, 2))
        }
        if names.contains("count") { shapes.append(("count > 3", [ObjectSortDescriptor("count")], 2, 0)) }
        if properties.contains(.min("title", as: "lo")) || properties.contains(.max("author.name", as: "lo")) { shapes.append((nil, [ObjectSortDescriptor("lo", options: [.caseInsensitive])], 0, 0)) }
        return shapes
    }

    @Test("aggregates computed by PostgreSQL or streamed give what the evaluator over every row gives (twin of the plain path)",
          .enabled(if: TestStore.isPostgres))
    func aggregatesAgreeWithTheEvaluator() throws {
        // Streamed aggregates in batches of 3 rows: the 64 books span many.
        let (compiled, plain) = PostgreSQLStoreTests.twinContexts(try Self.seededLibrary())
        var compared = 0
        for properties in Self.propertySets {
            for format in Self.predicates {
                for shape in Self.shapes(properties) {
                    let request = AggregateRequest(entityName: "Book", properties: properties, predicate: try format.map { try ObjectPredicate(format: $0) },
                                                   havingPredicate: try shape.having.map { try ObjectPredicate(format: $0) }, sortDescriptors: shape.sorts,
                                                   fetchLimit: shape.limit, fetchOffset: shape.offset)
                    let fast = try compiled.performAndWait { try compiled.aggregate(request) }
                    let slow = try plain.performAndWait { try plain.aggregate(request) }
                    #expect(fast == slow, "\(properties.map(\.name)) where \(format ?? "all") having \(shape.having ?? "-") sorted by \(shape.sorts.map(\.keyPath)) limit \(shape.limit) offset \(shape.offset)")
                    compared += 1
                }
            }
        }
        #expect(compared > 200)
    }

    /// The plan of `properties` over books matching `format`: nil when it is not PostgreSQL's.
    static func plan(_ container: PersistentContainer, _ properties: [AggregateProperty], where format: String? = nil,
                     having: String? = nil, sorts: [ObjectSortDescriptor] = [], limit: Int = 0) throws -> PGAggregateSQL? {
        let store = try #require(container.coordinator.store as? PostgreSQLStore)
        let context = container.newBackgroundContext()
        let prepared = try context.performAndWait {
            try context.prepare(AggregateRequest(entityName: "Book", properties: properties, predicate: try format.map { try ObjectPredicate(format: $0) },
                                                 havingPredicate: try having.map { try ObjectPredicate(format: $0) }, sortDescriptors: sorts, fetchLimit: limit))
        }
        return PGAggregateSQL(prepared, schema: store.schema, plan: PGFetchSQL(prepared.fetch, schema: store.schema), storeIdentifier: store.identifier)
    }

    @Test("which aggregates PostgreSQL computes, and which it also orders and windows", .enabled(if: TestStore.isPostgres))
    func compiledParts() throws {
        let container = try Self.seededLibrary()
        let grouped = try #require(try Self.plan(container, Self.propertySets[2], where: "pages > 0"))
        #expect(grouped.sql.contains("GROUP BY t.\"copies\"") && grouped.isWindowed, "ordered by the group key in SQL")
        let byAverage = try #require(try Self.plan(container, Self.propertySets[2], sorts: [ObjectSortDescriptor("ar")], limit: 1))
        #expect(!byAverage.isWindowed, "an average is divided here: the groups are ordered here too")
        let windowed = try #require(try Self.plan(container, [.groupKey("title"), .count()], sorts: [ObjectSortDescriptor("count", ascending: false)], limit: 5))
        #expect(windowed.isWindowed && windowed.sql.hasSuffix("LIMIT 5"), "\(windowed.sql)")
        #expect(try Self.plan(container, [.groupKey("title"), .count()], having: "count > 1", limit: 5)?.isWindowed == false,
                "a having predicate decides which groups the window counts")
        #expect(try Self.plan(container, Self.propertySets[9]) == nil, "decimal sums stay exact in memory")
        let joined = try #require(try Self.plan(container, Self.propertySets[8], where: "pages > 0"))
        #expect(joined.sql.contains("LEFT JOIN") && joined.isWindowed, "a to-one's object and its attribute: one join")
        #expect(try Self.plan(container, [.count()], where: "title CONTAINS[c] 'a'") == nil, "a predicate the evaluator finishes")
    }

    @Test("an integer sum past Int64 is the overflow error naming the result, from PostgreSQL's SQL too", .enabled(if: TestStore.isPostgres))
    func overflowFromSQL() throws {
        let (container, _) = try AggregateTests.library(books: [AggregateTests.Book(["pages": .integer(.max), "copies": .integer(1)]),
                                                                  AggregateTests.Book(["pages": .integer(1), "copies": .integer(1)])])
        #expect(try Self.plan(container, [.groupKey("copies"), .count(), .sum("pages", as: "total")]) != nil)
        #expect(throws: AggregateError.overflow(name: "total")) {
            try AggregateTests.aggregate(container, AggregateRequest(entityName: "Book", properties: [.groupKey("copies"), .count(), .sum("pages", as: "total")]))
        }
        let average = try AggregateTests.aggregate(container, AggregateRequest(entityName: "Book", properties: [.avg("pages")]))
        #expect(average.first?["avg"] == .attribute(.double((Double(Int64.max) + 1) / 2)), "an average of integers does not overflow")
    }

    @Test("what is answered over every row of the entities read is refused past the row limit, before reading them", .enabled(if: TestStore.isPostgres))
    func rowsInMemoryLimit() throws {
        let container = try Self.seededLibrary()  // 64 books, 3 authors
        let context = container.newBackgroundContext()
        // A predicate through a relationship with [c]: answered in memory over every book and author.
        let throughRelationship = AggregateRequest(entityName: "Book", properties: [.groupKey("copies"), .count()],
                                                   predicate: try ObjectPredicate(format: "author.name BEGINSWITH[c] 'A' OR author == nil"))
        let caseless = FetchRequest(entityName: "Book", predicate: try ObjectPredicate(format: "author.name CONTAINS[c] 'B'"))
        context.performAndWait { context.fetchTuning.rowsInMemoryLimit = 67 }
        let groups = try context.performAndWait { try context.aggregate(throughRelationship) }
        #expect(groups.map { $0["count"] } == [22, 5, 5].map { .attribute(.integer($0)) }, "the limit itself is within it")
        #expect(try context.performAndWait { try context.count(for: caseless) } == 16)
        context.performAndWait { context.fetchTuning.rowsInMemoryLimit = 66 }
        do {
            _ = try context.performAndWait { try context.aggregate(throughRelationship) }
            Issue.record("an aggregate over 67 rows passed a limit of 66")
        } catch let error as AggregateError {
            guard case .fetch(.invalidRequest(let reason)) = error else { Issue.record("\(error)"); return }
            #expect(reason.contains("Author") && reason.contains("Book") && reason.contains("66"), "\(reason)")
        }
        #expect(throws: FetchError.self) { try context.performAndWait { try context.count(for: caseless) } }
        // What SQL answers, or what streams, reads no more than a batch at a time: no limit.
        context.performAndWait { context.fetchTuning.rowsInMemoryLimit = 1 }
        let own = try context.performAndWait { try context.count(for: FetchRequest(entityName: "Book", predicate: try ObjectPredicate(format: "title ==[cd] 'e'"))) }
        #expect(own == 13)
        let sums = try context.performAndWait { try context.aggregate(AggregateRequest(entityName: "Book", properties: [.count(), .sum("price", as: "p")])) }
        #expect(sums.first?["count"] == .attribute(.integer(64)))
    }
}
