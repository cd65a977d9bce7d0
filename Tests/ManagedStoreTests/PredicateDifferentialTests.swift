import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite

/// Every predicate runs twice: compiled to SQL in the store, and evaluated in memory on the
/// same objects. The two answers must be equal, and equal to the expected list where one is
/// written here (worked out by hand from the fixture below).
@Suite("Predicates: SQL and memory agree")
struct PredicateDifferentialTests {
    // MARK: Fixture

    /// Owner ←→ Item ←→ Label, with one attribute of nearly every type.
    // try! here and in `container`: fixed fixtures; an error is a bug in this file, not input.
    static let model = try! ManagedObjectModel(name: "Differential", entities: [
        EntityDescription(name: "Owner", attributes: [
            AttributeDescription(name: "name", type: .string),
            AttributeDescription(name: "level", type: .integer64),
        ], relationships: [RelationshipDescription(name: "items", destination: "Item", inverse: "owner", isToMany: true)]),
        EntityDescription(name: "Item", attributes: [
            AttributeDescription(name: "name", type: .string),
            AttributeDescription(name: "qty", type: .integer32),
            AttributeDescription(name: "price", type: .double),
            AttributeDescription(name: "amount", type: .decimal),
            AttributeDescription(name: "cost", type: .decimal),
            AttributeDescription(name: "flag", type: .boolean),
            AttributeDescription(name: "note", type: .string),
            AttributeDescription(name: "when", type: .date),
        ], relationships: [
            RelationshipDescription(name: "owner", destination: "Owner", inverse: "items"),
            RelationshipDescription(name: "labels", destination: "Label", inverse: "items", isToMany: true),
        ]),
        EntityDescription(name: "Label", attributes: [AttributeDescription(name: "text", type: .string)],
                          relationships: [RelationshipDescription(name: "items", destination: "Item", inverse: "labels", isToMany: true)]),
    ])

    /// Items 1–30 are hand-made (qty = i < 100); items 31–300 are generated (qty ≥ 100, ASCII
    /// names "item-i", owner Generator, labels gen-a / gen-b), so a predicate with `qty < 100`
    /// or a hand-made string sees only the first thirty.
    static let handNames: [String?] = [
        "apple", "Apple", "APPLE pie", "éclair", "Eclair", "straße", "STRASSE", "İstanbul", "istanbul", "ıstanbul",
        "🚀 rocket", "", nil, "a*b", "a%b_c", "café", "cafe\u{301}", "naïve", "Zebra", "zebra",
        "x'y\"z", "line\nbreak", "über", "UBER", "日本語", "ab", "abc", "abcd", "Ωmega", "ωmega",
    ]

    /// Costs of items 1–30: signs, zero, tiny and huge magnitudes, equal numbers written
    /// differently (1.2 and 1.20, 12.5 and 12.50), digit strings that prefix one another
    /// (1.2, 1.21, 1.25), 38-digit extremes, and two nulls. Their stored order is their text's
    /// byte order, so these are where an encoding mistake would show.
    static let handCosts: [String?] = [
        "-100", "-1.25", "-1.2", "-0.5", "0", "0.001", "1.2", "1.25", "12.5", "1e20",
        "99999999999999999999999999999999999999", nil, "-99999999999999999999999999999999999999", "1e-100", "0.1",
        "0.10000000000000000000000000000000000001", "-0.001", "1.20", "100", "99.99",
        "-12.5", "12.50", "1e-20", "-1e20", "3", "30", "300", "1.21", "-1.21", nil,
    ]

    static let container: PersistentContainer = {
        let container = try! Fixtures.container(.inMemory, model: model)
        let context = container.newBackgroundContext()
        context.performAndWait {
            let owners = [("Ada", 1), ("Émile", 2), ("ß", 3), ("Generator", 9)].map { name, level -> ManagedObject in
                let owner = context.insertNewObject(forEntityName: "Owner")
                owner.setValue(name, forKey: "name")
                owner.setValue(Int64(level), forKey: "level")
                return owner
            }
            let labels = ["red", "Red", "green", "blüe", "", "gen-a", "gen-b"].map { text -> ManagedObject in
                let label = context.insertNewObject(forEntityName: "Label")
                label.setValue(text, forKey: "text")
                return label
            }
            for i in 1...300 {
                let item = context.insertNewObject(forEntityName: "Item")
                item.setValue(Date(timeIntervalSinceReferenceDate: Double(i) * 86_400), forKey: "when")
                if i <= 30 {
                    item.setValue(handNames[i - 1], forKey: "name")
                    item.setValue(Int64(i), forKey: "qty")
                    if i % 7 != 0 { item.setValue(Double(i) * 1.5, forKey: "price") }
                    item.setValue(Decimal(string: "\(i).25")!, forKey: "amount")
                    item.setValue(handCosts[i - 1].flatMap { Decimal(string: $0, locale: Locale(identifier: "en_US_POSIX")) }, forKey: "cost")
                    item.setValue(i % 2 == 0, forKey: "flag")
                    item.setValue(i % 3 == 0 ? nil : (i % 3 == 1 ? "" : "note \(i)"), forKey: "note")
                    if i % 5 != 0 { item.setObject(owners[[0, 1, 2][i % 3]], forKey: "owner") }
                    switch i % 4 {
                    case 0: item.setObjects([labels[0]], forKey: "labels")
                    case 1: item.setObjects([labels[1], labels[2]], forKey: "labels")
                    case 3: item.setObjects([labels[3], labels[4]], forKey: "labels")
                    default: break
                    }
                } else {
                    item.setValue("item-\(i)", forKey: "name")
                    item.setValue(Int64(100 + i % 50), forKey: "qty")
                    if i % 11 != 0 { item.setValue(Double(i) / 3, forKey: "price") }
                    item.setValue(Decimal(i), forKey: "amount")
                    // -2.5 to 3 in quarters, many repeated; every thirteenth none.
                    if i % 13 != 0 { item.setValue(Decimal(Int64(i % 23) * 25 - 250) / 100, forKey: "cost") }
                    item.setValue(i % 3 == 0, forKey: "flag")
                    if i % 4 != 0 { item.setValue("gen", forKey: "note") }
                    if i % 10 != 0 { item.setObject(owners[3], forKey: "owner") }
                    var set: [ManagedObject] = []
                    if i % 2 == 0 { set.append(labels[5]) }
                    if i % 5 == 0 { set.append(labels[6]) }
                    item.setObjects(set, forKey: "labels")
                }
            }
            try! context.save()
        }
        return container
    }()

    /// The primary keys matching `format` on `entity`, through SQL and through memory.
    static func bothWays(_ format: String, entity: String = "Item") throws -> (sql: [Int64], memory: [Int64]) {
        let context = container.newBackgroundContext()
        return try context.performAndWait { try bothWays(format, entity: entity, in: context) }
    }

    /// The same, in a context of the caller's (which keeps the objects it loaded between calls).
    static func bothWays(_ format: String, entity: String = "Item", in context: ManagedObjectContext) throws -> (sql: [Int64], memory: [Int64]) {
        let predicate = try ObjectPredicate(format: format)
        let sql = try context.fetchObjectIDs(FetchRequest(entityName: entity, predicate: predicate)).compactMap(\.primaryKey)
        let prepared = try context.prepare(FetchRequest(entityName: entity, predicate: predicate))
        let evaluator = PredicateEvaluator(context: context)
        let all = try context.fetch(FetchRequest(entityName: entity))
        let memory = all.filter { evaluator.evaluate(prepared.predicate!, on: $0) }.compactMap(\.objectID.primaryKey)
        return (sql.sorted(), memory.sorted())
    }

    // MARK: Expected answers

    struct Case: CustomTestStringConvertible, Sendable {
        let format: String
        let entity: String
        let expected: [Int64]
        var testDescription: String { "\(entity): \(format)" }
        init(_ format: String, _ expected: [Int64], entity: String = "Item") {
            self.format = format
            self.expected = expected
            self.entity = entity
        }
    }

    static let handMade = Array(Int64(1)...30)

    static let expectedCases: [Case] = [
        // Strings: case, diacritics, ß, Turkish i, composed and decomposed accents.
        Case(#"name == "apple""#, [1]),
        Case(#"name ==[c] "apple""#, [1, 2]),
        Case(#"name BEGINSWITH[c] "apple""#, [1, 2, 3]),
        Case(#"name BEGINSWITH "apple""#, [1]),
        Case(#"name ==[c] "strasse""#, [6, 7]),
        Case(#"name == "straße""#, [6]),
        Case(#"name ==[cd] "eclair""#, [4, 5]),
        Case(#"name ==[d] "eclair""#, [4]),
        Case(#"name ==[c] "eclair""#, [5]),
        Case(#"name == "café""#, [16]),
        Case(#"name ==[d] "cafe""#, [16, 17]),
        Case(#"name ==[c] "café""#, [16, 17]),
        Case(#"name ==[c] "istanbul""#, [9]),
        Case(#"name ==[cd] "istanbul""#, [8, 9]),
        Case(#"name CONTAINS "🚀""#, [11]),
        Case(#"name == """#, [12]),
        Case("name == nil", [13]),
        Case("name != nil AND qty < 100", handMade.filter { $0 != 13 }),
        Case(#"name LIKE "a*b""#, [14, 26]),
        Case(#"name LIKE "a?b""#, [14]),
        Case(#"name LIKE "a%b_c""#, [15]),
        Case(#"name LIKE "ab*""#, [26, 27, 28]),
        Case(#"name LIKE[c] "APPLE*""#, [1, 2, 3]),
        Case(#"name MATCHES "ab+""#, [26]),
        Case(#"name MATCHES "a.*""#, [1, 14, 15, 26, 27, 28]),
        Case(#"name MATCHES[c] "apple.*""#, [1, 2, 3]),
        Case(#"name ENDSWITH "ega""#, [29, 30]),
        Case(#"name ==[c] "ωmega""#, [29, 30]),
        Case(#"name BEGINSWITH "Z" OR name BEGINSWITH "z""#, [19, 20]),
        Case(#"name < "B" AND qty < 100"#, [2, 3, 12]),
        Case(#"name CONTAINS[c] "STAN""#, [8, 9, 10]),
        Case(#"name IN {"apple", "zebra", "nope"}"#, [1, 20]),
        Case(#"name IN[c] {"APPLE", "ZEBRA"}"#, [1, 2, 19, 20]),
        Case(#"name CONTAINS "\n""#, [22]),
        Case(#"name CONTAINS "'""#, [21]),
        // Numbers, nulls, decimals, booleans.
        Case("qty BETWEEN {3, 6}", [3, 4, 5, 6]),
        Case("qty IN {1, 2, 200}", [1, 2]),
        Case("price == nil AND qty < 100", [7, 14, 21, 28]),
        Case("NOT (price > 30) AND qty < 100", Array(1...21) + [28]),
        Case("price >= 40.5 AND qty < 100", [27, 29, 30]),
        Case("amount > 29 AND qty < 100", [29, 30]),
        Case(#"amount == "3.25""#, [3]),
        Case("amount == 3.25", [3]),
        // Decimals of every sign and size (handCosts): stored as order-preserving text.
        Case("cost < 0 AND qty < 100", [1, 2, 3, 4, 13, 17, 21, 24, 29]),
        Case("cost == 1.2", [7, 18]),
        Case("cost == 12.50", [9, 22]),
        Case(#"cost == "1.250" AND qty < 100"#, [8]),
        Case("cost ==[c] 1.25 AND qty < 100", [8]),
        Case("cost == 0 AND qty < 100", [5]),
        Case("cost BETWEEN {-1.25, 1.2} AND qty < 100", [2, 3, 4, 5, 6, 7, 14, 15, 16, 17, 18, 23, 29]),
        Case("cost IN {1.2, -0.5, 3, 1e20} AND qty < 100", [4, 7, 10, 18, 25]),
        Case("cost > 1e19", [10, 11]),
        Case("cost < -1e30", [13]),
        Case("cost > 0.1 AND cost < 0.2", [16]),
        Case("cost > 0 AND cost < 1e-10", [14, 23]),
        Case("cost == nil AND qty < 100", [12, 30]),
        Case("cost > amount AND qty < 100", [9, 10, 11, 19, 20, 26, 27]),
        Case("items.@max.cost > 1e30", [3], entity: "Owner"),
        Case("items.@min.cost < -1e30", [2], entity: "Owner"),
        Case("flag == YES AND qty <= 10", [2, 4, 6, 8, 10]),
        Case("NOT flag AND qty <= 5", [1, 3, 5]),
        Case(#"note == "" AND qty < 100"#, [1, 4, 7, 10, 13, 16, 19, 22, 25, 28]),
        Case("note == nil AND qty < 20", [3, 6, 9, 12, 15, 18]),
        // Dates: CAST from seconds since 2001, and RFC 3339 strings.
        Case(#"when < CAST(432000, "NSDate")"#, [1, 2, 3, 4]),
        Case(#"when == "2001-01-03T00:00:00Z""#, [2]),
        Case(#"when BETWEEN {CAST(86400, "NSDate"), CAST("2001-01-04T00:00:00Z", "NSDate")}"#, [1, 2, 3]),
        // To-one key paths and object IDs.
        Case(#"owner.name == "Ada""#, [3, 6, 9, 12, 18, 21, 24, 27]),
        Case("owner == nil AND qty < 100", [5, 10, 15, 20, 25, 30]),
        Case(#"owner.name ==[cd] "emile""#, [1, 4, 7, 13, 16, 19, 22, 28]),
        Case("owner.level > 2 AND qty < 100", [2, 8, 11, 14, 17, 23, 26, 29]),
        Case(#"owner == "Owner/1""#, [3, 6, 9, 12, 18, 21, 24, 27]),
        // To-many: implied ANY, ALL, NONE, IN, @count, SUBQUERY.
        Case(#"labels.text == "red""#, [4, 8, 12, 16, 20, 24, 28]),
        Case(#"ANY labels.text ==[c] "red""#, [1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24, 25, 28, 29]),
        Case("labels.@count == 2 AND qty < 100", handMade.filter { $0 % 2 == 1 }),
        Case("labels.@count == 0 AND qty < 100", handMade.filter { $0 % 4 == 2 }),
        Case(#"ALL labels.text BEGINSWITH "r" AND qty < 100"#, handMade.filter { $0 % 2 == 0 }),
        Case(#"NONE labels.text == "" AND qty < 100"#, handMade.filter { $0 % 4 != 3 }),
        Case(#"labels.text ==[d] "blue""#, handMade.filter { $0 % 4 == 3 }),
        Case(#"SUBQUERY(labels, $l, $l.text BEGINSWITH[c] "r").@count == 2"#, []),
        Case(#"SUBQUERY(labels, $l, $l.text BEGINSWITH[c] "r" OR $l.text == "green").@count == 2"#, handMade.filter { $0 % 4 == 1 }),
        Case(#""green" IN labels.text"#, handMade.filter { $0 % 4 == 1 }),
        // From the other side: aggregates over to-many.
        Case("items.@count > 100", [4], entity: "Owner"),
        Case("items.@max.qty > 140", [4], entity: "Owner"),
        Case("items.@sum.qty == 120", [1], entity: "Owner"),
        Case("items.@avg.qty == 15", [1], entity: "Owner"),
        Case("items.@min.qty == 1", [2], entity: "Owner"),
        Case(#"items.name CONTAINS "item""#, [6, 7], entity: "Label"),
        Case(#"ANY items.owner.name == "ß""#, [1, 2, 3, 4, 5], entity: "Label"),
        // Even qty under 10 per owner: Ada 6; Émile 4; ß 2 and 8.
        Case(#"SUBQUERY(items, $i, $i.flag == YES AND $i.qty < 10).@count >= 2"#, [3], entity: "Owner"),
        Case(#"SUBQUERY(items, $i, $i.flag == YES AND $i.qty < 100).@count == 4"#, [1, 2, 3], entity: "Owner"),
    ]

    @Test("expected answers, equal in SQL and in memory", arguments: expectedCases)
    func expected(_ c: Case) throws {
        let (sql, memory) = try Self.bothWays(c.format, entity: c.entity)
        #expect(sql == memory, "SQL and memory disagree")
        #expect(sql == c.expected)
    }

    /// Sums of Int64s past its range, the same in SQL and in memory: the true total compared
    /// (SQLite's own sum() would fail the fetch, and a wrapping sum answer the opposite sign).
    @Test("a predicate's @sum of integers past Int64 compares the true total, in SQL and in memory alike")
    func sumPastInt64() throws {
        // Owner 1: Int64.max + 1 (2^63); 2: Int64.min - 1; 3: 11; 4: Int64.max + Int64.max - Int64.max.
        try Self.checkSums([[.max, 1], [.min, -1], [5, 6], [.max, .max, -.max]], [
            ("items.@sum.size > 0", [1, 3, 4]),
            ("items.@sum.size < 0", [2]),
            ("items.@sum.size == 11", [3]),
            ("items.@sum.size == 9223372036854775807", [4]),  // exact: the partial sum passing 2^63 does not matter
            ("items.@sum.size > 9223372036854775807", [1]),
            // -2^63 - 1 is nearest to the double -2^63, which compares exactly (not as a double).
            ("items.@sum.size < -9223372036854775807", [2]),
            ("items.@sum.size < -9223372036854775808", []),
        ])
    }

    @Test("a predicate's @sum past Int64 is rounded to a double once, alike in SQL and in memory")
    func sumRoundedOnce() throws {
        // 2^64 + 2^63 + 2^11 + 1: just above halfway between two doubles, where rounding its
        // two 64-bit halves one after the other lands on the lower one.
        try Self.checkSums([[.max, .max, .max, 2_052]], [
            ("items.@sum.size > 27670116110564327424", [1]),  // 2^64 + 2^63: the sum's double is the next one up
        ])
    }

    /// Owners with items of these sizes (owner i + 1 holds `sizes[i]`), in a store of their own;
    /// each predicate over Owner answers the same in SQL and in memory, and as expected.
    static func checkSums(_ sizes: [[Int64]], _ cases: [(String, [Int64])]) throws {
        let model = try ManagedObjectModel(name: "Sums", entities: [
            EntityDescription(name: "Owner", attributes: [AttributeDescription(name: "name", type: .string)],
                              relationships: [RelationshipDescription(name: "items", destination: "Item", inverse: "owner", isToMany: true)]),
            EntityDescription(name: "Item", attributes: [AttributeDescription(name: "size", type: .integer64)],
                              relationships: [RelationshipDescription(name: "owner", destination: "Owner", inverse: "items")]),
        ])
        let container = try Fixtures.container(.inMemory, model: model)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            for (i, owned) in sizes.enumerated() {
                let owner = context.insertNewObject(forEntityName: "Owner")
                owner.setValue("o\(i + 1)", forKey: "name")
                for size in owned {
                    let item = context.insertNewObject(forEntityName: "Item")
                    item.setValue(size, forKey: "size")
                    item.setObject(owner, forKey: "owner")
                }
            }
            _ = try context.save()
            for (format, expected) in cases {
                let (sql, memory) = try Self.bothWays(format, entity: "Owner", in: context)
                #expect(sql == memory, "\(format): SQL and memory disagree")
                #expect(sql == expected, "\(format)")
            }
        }
    }

    // MARK: Agreement over many more predicates

    /// Atoms covering every construct; combined below into well over 150 predicates.
    static let atoms: [String] = [
        "qty > 15", "qty <= 120", "qty != 7", "price < 20", "price == nil", "price != nil", "NOT (price >= 10)",
        "amount >= 10", #"amount < "100.5""#, "flag", "NOT flag", "flag == NO", #"note == """#, "note == nil", #"note != "gen""#,
        #"name BEGINSWITH "item-1""#, #"name ENDSWITH[c] "E""#, #"name CONTAINS[cd] "A""#, #"name LIKE "*-2?""#, #"name LIKE[cd] "*E*""#,
        #"name MATCHES "item-[0-9]+5""#, #"name MATCHES[c] ".*A.*""#, #"name > "item-2""#, #"name <[c] "m""#, #"name IN {"ab", "abc", "item-42"}"#,
        #"when > CAST(8640000, "NSDate")"#, #"when <= "2001-03-01T00:00:00Z""#, "qty BETWEEN {10, 110}", "price BETWEEN {5, 50}",
        #"owner.name == "Generator""#, "owner == nil", "owner.level >= 2", #"owner.name BEGINSWITH[cd] "E""#, #"owner != "Owner/4""#,
        #"labels.text == "gen-a""#, #"ANY labels.text CONTAINS "e""#, #"ALL labels.text BEGINSWITH "gen""#, #"NONE labels.text ==[c] "RED""#,
        "labels.@count >= 1", "labels.@count == 0", #""gen-b" IN labels.text"#, #"labels.text IN {"red", "green"}"#,
        #"SUBQUERY(labels, $l, $l.text CONTAINS "-").@count == 2"#, #"SUBQUERY(labels, $l, $l.items.@count > 100).@count > 0"#, "owner.items.@count > 20",
        "qty > price", "qty == price", "TRUEPREDICATE", "FALSEPREDICATE", "owner.items.@max.qty == 149",
        "cost < 0", "cost >= 1.2", "cost BETWEEN {-1.25, 1.25}", "cost IN {1.2, 12.5, -0.5, 3, 0}", "cost == 12.50", "cost == nil",
        "cost != 0", "cost > amount", "cost <= -0.001", "owner.items.@max.cost > 2", "owner.items.@min.cost <= -2.5",
    ]

    static let combined: [String] = {
        var result: [String] = []
        for (i, atom) in atoms.enumerated() {
            result.append(atom)
            result.append("NOT (\(atom))")
            let other = atoms[(i * 7 + 3) % atoms.count]
            result.append("(\(atom)) AND (\(other))")
            result.append("(\(atom)) OR NOT (\(other))")
        }
        return result
    }()

    @Test("SQL and memory agree on every combination")
    func agreement() throws {
        #expect(Self.combined.count + Self.expectedCases.count >= 150)
        var disagreements: [String] = []
        let context = Self.container.newBackgroundContext()
        try context.performAndWait {
            for format in Self.combined {
                let (sql, memory) = try Self.bothWays(format, in: context)
                if sql != memory { disagreements.append("\(format): SQL \(sql.count) \(Set(sql).symmetricDifference(memory).sorted().prefix(5)) vs memory \(memory.count)") }
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements.joined(separator: "\n"))")
    }

    @Test("sorting by a decimal orders alike in SQL and in memory", arguments: [true, false])
    func decimalSortAgrees(ascending: Bool) throws {
        let context = Self.container.newBackgroundContext()
        try context.performAndWait {
            let request = FetchRequest(entityName: "Item", sortDescriptors: [ObjectSortDescriptor("cost", ascending: ascending), ObjectSortDescriptor("qty")])
            let sql = try context.fetch(request).compactMap(\.objectID.primaryKey)
            let prepared = try context.prepare(request)
            let evaluator = PredicateEvaluator(context: context)
            let memory = try context.fetch(FetchRequest(entityName: "Item")).sorted { evaluator.precedes($0, $1, sorts: prepared.sorts) }
            #expect(sql == memory.compactMap(\.objectID.primaryKey))
            // And the order is the numbers' (nulls first ascending, last descending).
            let costs = memory.map { $0.value("cost", as: Decimal.self) }
            let numbers = costs.compactMap { $0 }
            #expect(numbers == (ascending ? numbers.sorted() : numbers.sorted(by: >)))
            // (Two expectations rather than one with `?:`: that one took the compiler 22 s.)
            let nulls = costs.count - numbers.count
            if ascending {
                #expect(costs.prefix(nulls).allSatisfy { $0 == nil })
            } else {
                #expect(costs.suffix(nulls).allSatisfy { $0 == nil })
            }
        }
    }

    @Test("unsaved changes answer through memory exactly as they would after saving")
    func pendingChangesMatchSavedAnswers() throws {
        let container = try Fixtures.container(.inMemory, model: Self.model)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let owner = context.insertNewObject(forEntityName: "Owner")
            owner.setValue("Straße", forKey: "name")
            let label = context.insertNewObject(forEntityName: "Label")
            label.setValue("Café", forKey: "text")
            for i in 0..<10 {
                let item = context.insertNewObject(forEntityName: "Item")
                item.setValue("İtem \(i)", forKey: "name")
                item.setValue(Int64(i), forKey: "qty")
                if i % 2 == 0 { item.setObject(owner, forKey: "owner") }
                if i % 3 == 0 { item.addObject(label, toKey: "labels") }
            }
            let formats = [#"owner.name ==[c] "strasse""#, #"labels.text ==[cd] "cafe""#, "labels.@count == 0", #"name BEGINSWITH[cd] "item""#,
                           "qty BETWEEN {2, 5} AND owner != nil", #"SUBQUERY(labels, $l, $l.text LIKE "C*").@count > 0"#]
            var before: [[String]] = []
            for format in formats {
                let request = FetchRequest(entityName: "Item", predicate: try ObjectPredicate(format: format), sortDescriptors: [ObjectSortDescriptor("qty")])
                before.append(try context.fetch(request).compactMap { $0.value("name", as: String.self) })
            }
            try context.save()
            context.reset()
            for (format, unsaved) in zip(formats, before) {
                let request = FetchRequest(entityName: "Item", predicate: try ObjectPredicate(format: format), sortDescriptors: [ObjectSortDescriptor("qty")])
                #expect(try context.fetch(request).compactMap { $0.value("name", as: String.self) } == unsaved, "\(format)")
            }
        }
    }
}
