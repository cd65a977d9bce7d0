import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStorePostgreSQL
import ManagedStoreTestSupport

/// The same hostile values written to an SQLite store and to a PostgreSQL store: each value
/// either is kept by both, and then reads back the same, is found by the same comparisons and
/// sorts into the same place; or PostgreSQL refuses it at validation, naming the attribute,
/// for one of the two reasons it has (`PGValueLimits`). Never a store failure: that is the
/// 503 a client retries for ever. Runs when the suites run on PostgreSQL.
@Suite("Store value parity", .serialized)
struct StoreValueParityTests {
    /// Every attribute type; `indexed` has an index and `unique` a uniqueness constraint (both
    /// B-trees in PostgreSQL), `text` neither.
    static let model: ManagedObjectModel = {
        let json = #"""
        { "name": "Parity", "version": 1, "entities": [ { "name": "Item", "attributes": [
            {"name": "n", "type": "integer64"},
            {"name": "indexed", "type": "string"}, {"name": "unique", "type": "string"}, {"name": "text", "type": "string"},
            {"name": "i64", "type": "integer64"}, {"name": "dec", "type": "decimal"}, {"name": "dbl", "type": "double"},
            {"name": "flt", "type": "float"}, {"name": "when", "type": "date"}, {"name": "data", "type": "binary"},
            {"name": "uid", "type": "uuid"}, {"name": "link", "type": "uri"}, {"name": "flag", "type": "boolean"} ],
          "uniquenessConstraints": [["unique"]], "indexes": [["indexed"]] } ] }
        """#
        return try! ManagedObjectModel(jsonData: Array(json.utf8))
    }()

    static let strings: [String] = [
        "", " ", "a", "A", "Z", "é", "e\u{301}", "𝄞", "\u{FEFF}x", "\u{200B}", "\u{7F}", "\u{1}", "\u{1}\u{2}",
        "\u{FFFD}", "\u{10FFFF}", "'; DROP TABLE \"Item\"; --", "\\", "%_*?", "\"", "line\r\nbreak\ttab",
        "a\u{0}b", "\u{0}", String(repeating: "x", count: 2_600), String(repeating: "y", count: 2_800),
        String(repeating: "ab", count: 50_000), String((0..<4_000).map { Character(UnicodeScalar(UInt8(33 + ($0 * 7919) % 90))) }),
    ]

    /// Values of each attribute; strings go to all three string attributes.
    static var values: [(attribute: String, value: AttributeValue)] {
        var all: [(String, AttributeValue)] = []
        for name in ["indexed", "unique", "text"] { all += strings.map { (name, .string($0)) } }
        all += [Int64.min, -1, 0, 1, Int64.max].map { ("i64", .integer($0)) }
        all += ["0", "-1", "3.14", "-0.000000000000000000000000000001", "99999999999999999999999999999999999999",
                "-99999999999999999999999999999999999999", "12345678901234567890.123456789", "1e100", "-1e-100", "1e-125"]
            .map { ("dec", .decimal(Decimal(string: $0)!)) }
        all += [0, -0.0, 0.1 + 0.2, .pi, -.greatestFiniteMagnitude, .greatestFiniteMagnitude, .leastNonzeroMagnitude, -.leastNormalMagnitude, 1e300]
            .map { ("dbl", .double($0)) }
        all += [Float(0), -1.5, .greatestFiniteMagnitude, .leastNonzeroMagnitude, -.greatestFiniteMagnitude].map { ("flt", .float($0)) }
        all += [Date.distantPast, .distantFuture, Date(timeIntervalSinceReferenceDate: 0), Date(timeIntervalSinceReferenceDate: -1e12),
                Date(timeIntervalSinceReferenceDate: 1e12), Date(timeIntervalSinceReferenceDate: 123_456_789.123_456_7)]
            .map { ("when", .date($0)) }
        all += [Data(), Data([0]), Data([0, 0xff, 0x5c, 0x78, 0x27]), Data(repeating: 0xab, count: 3_000), Data((0..<100_000).map { UInt8($0 % 251) })]
            .map { ("data", .binary($0)) }
        all += [UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)), UUID(uuidString: "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF")!,
                UUID(uuidString: "0A1B2C3D-4E5F-6071-8293-A4B5C6D7E8F9")!].map { ("uid", .uuid($0)) }
        all += ["a:b", "https://example.com/%C3%A4?q=%00#frag", "urn:isbn:0451450523", "https://example.com/" + String(repeating: "p", count: 3_000)]
            .map { ("link", .uri(URL(string: $0)!)) }
        all += [true, false].map { ("flag", .boolean($0)) }
        return all
    }

    /// Whether `text` in `attribute` makes an index entry longer than PostgreSQL takes.
    static func tooLongToIndex(_ attribute: String, _ text: String) -> Bool {
        ["indexed", "unique"].contains(attribute) && PGValueLimits.entryBytes([.string(text)]) > PGValueLimits.indexEntryBytes
    }

    /// What a store did with the value of object `n`: kept it, or refused it (the errors' properties and codes).
    enum Outcome: Equatable {
        case kept
        case refused([String])
    }

    /// Saves each value on an object of its own (`n` its number), one save each; what each save did.
    static func write(_ container: PersistentContainer) throws -> [Outcome] {
        let context = container.newBackgroundContext()
        return try context.performAndWait {
            try values.enumerated().map { n, entry in
                let item = context.insertNewObject(forEntityName: "Item")
                item.setAttributeValue(.integer(Int64(n)), forKey: "n")
                item.setAttributeValue(entry.value, forKey: entry.attribute)
                do {
                    try context.save()
                    return .kept
                } catch SaveError.validation(let errors) {
                    context.rollback()
                    return .refused(errors.map { "\($0.property ?? "-") \($0.code.rawValue)" })
                } catch {
                    // Not a refusal: recorded as one that matches no expectation, and the walk goes on.
                    context.rollback()
                    return .refused(["failed: \(error)"])
                }
            }
        }
    }

    /// For attribute `name`: the objects in ascending order of it (then by key), by their `n`.
    static func order(_ context: ManagedObjectContext, _ name: String, among kept: Set<Int64>) throws -> [Int64] {
        let request = FetchRequest(entityName: "Item", sortDescriptors: [ObjectSortDescriptor(name), ObjectSortDescriptor("n")])
        return try context.fetch(request).compactMap { $0.value("n", as: Int64.self) }.filter { kept.contains($0) }
    }

    /// The objects (by `n`, sorted) for which `name op value` holds.
    static func matching(_ context: ManagedObjectContext, _ name: String, _ op: ComparisonOperator, _ value: AttributeValue) throws -> [Int64] {
        let request = FetchRequest(entityName: "Item", predicate: .compare(name, op, .attribute(value)))
        return try context.fetch(request).compactMap { $0.value("n", as: Int64.self) }.sorted()
    }

    @Test("hostile values: kept alike by SQLite and PostgreSQL, or refused by PostgreSQL naming the attribute, never a store failure",
          .enabled(if: TestStore.isPostgres))
    func valuesAcrossStores() throws {
        try Self.onBothStores(Self.model) { sqlite, postgres in try Self.compareValues(sqlite, postgres) }
    }

    @Test("hostile values inserted in one save (a column's values as one array) read, compare and sort as those inserted one save each",
          .enabled(if: TestStore.isPostgres))
    func batchedInsertsAsSingleOnes() throws {
        let oneByOne = try PersistentContainer(model: Self.model, store: TestStore.freshPostgresStore(base: .inMemory))
        let together = try PersistentContainer(model: Self.model, store: TestStore.freshPostgresStore(base: .inMemory))
        let outcomes = try Self.write(oneByOne)
        let kept = Set(outcomes.indices.filter { outcomes[$0] == .kept }.map(Int64.init))
        let context = together.newBackgroundContext()
        try context.performAndWait {
            for (n, entry) in Self.values.enumerated() where kept.contains(Int64(n)) {
                let item = context.insertNewObject(forEntityName: "Item")
                item.setAttributeValue(.integer(Int64(n)), forKey: "n")
                item.setAttributeValue(entry.value, forKey: entry.attribute)
            }
            try context.save()
        }
        let single = try Self.answers(oneByOne, kept: kept), batched = try Self.answers(together, kept: kept)
        for (question, answer) in single.sorted(by: { $0.key < $1.key }) {
            #expect(batched[question] == answer, "\(question.prefix(120))")
        }
        #expect(batched.count == single.count && kept.count > 50)
    }

    /// `body` with a container of `model` on a new SQLite file and one on a new PostgreSQL schema.
    static func onBothStores(_ model: ManagedObjectModel, _ body: (PersistentContainer, PersistentContainer) throws -> Void) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parity-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try body(try PersistentContainer(model: model, store: .sqlite(directory.appendingPathComponent("parity.sqlite"))),
                 try PersistentContainer(model: model, store: TestStore.freshPostgresStore(base: .inMemory)))
    }

    /// Writes `values` to both stores and compares what each kept and answers.
    static func compareValues(_ sqlite: PersistentContainer, _ postgres: PersistentContainer) throws {
        let values = Self.values
        let onSQLite = try Self.write(sqlite)
        let onPostgres = try Self.write(postgres)

        // SQLite keeps every one of them; PostgreSQL refuses only what it cannot hold.
        var kept = Set<Int64>()
        for (n, entry) in values.enumerated() {
            let shown = "\(entry.attribute) = \(String(describing: entry.value).prefix(60))"
            #expect(onSQLite[n] == .kept, "SQLite: \(shown)")
            switch onPostgres[n] {
            case .kept: kept.insert(Int64(n))
            case .refused(let errors):
                guard case .string(let text) = entry.value else { Issue.record("PostgreSQL refused \(shown): \(errors)"); continue }
                let expected = text.utf8.contains(0) ? "\(entry.attribute) invalid-type"
                    : Self.tooLongToIndex(entry.attribute, text) ? "\(entry.attribute) too-long" : "kept"
                #expect(errors == [expected], "PostgreSQL: \(shown)")
            }
        }
        // The refusals are the two kinds, where they apply, and nothing else.
        let refusable = values.filter { entry in
            guard case .string(let text) = entry.value else { return false }
            return text.utf8.contains(0) || Self.tooLongToIndex(entry.attribute, text)
        }
        #expect(values.count - kept.count == refusable.count)
        #expect(refusable.count == 3 * 2 + 2 * 3, "two strings with U+0000 in each string attribute, three long ones in each indexed one")

        // Each store's answers, asked of each in turn (a context answers on its own queue only).
        let there = try Self.answers(sqlite, kept: kept), here = try Self.answers(postgres, kept: kept)
        for (question, answer) in there.sorted(by: { $0.key < $1.key }) {
            #expect(here[question] == answer, "\(question.prefix(120))")
        }
        #expect(here.count == there.count)
    }

    /// What `container`'s store answers for every kept value: its order among the kept
    /// objects by each attribute, the value read back, and the objects each comparison with it finds.
    static func answers(_ container: PersistentContainer, kept: Set<Int64>) throws -> [String: [String]] {
        let context = container.newBackgroundContext()
        let values = Self.values
        return try context.performAndWait {
            var answers: [String: [String]] = [:]
            for name in Set(values.map(\.attribute)) {
                answers["order of \(name)"] = try order(context, name, among: kept).map(String.init)
            }
            for (n, entry) in values.enumerated() where kept.contains(Int64(n)) {
                let shown = "\(entry.attribute) = \(String(describing: entry.value).prefix(60)) (object \(n))"
                let request = FetchRequest(entityName: "Item", predicate: .key("n") == Int64(n))
                let stored = try context.fetch(request).first?.attributeValue(forKey: entry.attribute)
                answers["read back \(shown)"] = [stored == entry.value ? "as written" : "\(String(describing: stored).prefix(80))"]
                for op in [ComparisonOperator.equal, .lessThan, .greaterThanOrEqual] {
                    answers["\(op.rawValue) \(shown)"] = try matching(context, entry.attribute, op, entry.value).filter(kept.contains).map(String.init)
                }
            }
            return answers
        }
    }

    /// SQL's reserved words as entity, attribute and relationship names.
    static let reservedNamesModel: ManagedObjectModel = {
        let json = #"""
        { "name": "Reserved", "version": 1, "entities": [
          { "name": "Order", "attributes": [{"name": "select", "type": "string"}, {"name": "user", "type": "integer64"},
                                            {"name": "from", "type": "date"}],
            "relationships": [{"name": "group", "destination": "Table", "inverse": "orders"}],
            "uniquenessConstraints": [["select"]], "indexes": [["user", "from"]] },
          { "name": "Table", "attributes": [{"name": "where", "type": "string"}],
            "relationships": [{"name": "orders", "destination": "Order", "inverse": "group", "toMany": true}] } ] }
        """#
        return try! ManagedObjectModel(jsonData: Array(json.utf8))
    }()

    @Test("SQL's reserved words as names: written, fetched, sorted and followed alike on both stores", .enabled(if: TestStore.isPostgres))
    func reservedNames() throws {
        try Self.onBothStores(Self.reservedNamesModel) { sqlite, postgres in
            let there = try Self.reservedNameAnswers(sqlite)
            #expect(there == ["s0", "s2", "s4", "3"])
            #expect(try Self.reservedNameAnswers(postgres) == there)
        }
    }

    /// The reserved-name model's answers on `container`'s store: orders of one user in one table, sorted; tables by their orders.
    static func reservedNameAnswers(_ container: PersistentContainer) throws -> [String] {
        let context = container.newBackgroundContext()
        return try context.performAndWait {
            let table = context.insertNewObject(forEntityName: "Table")
            table.setValue("t", forKey: "where")
            for n in 0..<5 {
                let order = context.insertNewObject(forEntityName: "Order")
                order.setValue("s\(4 - n)", forKey: "select")
                order.setValue(Int64(n % 2), forKey: "user")
                order.setValue(Date(timeIntervalSinceReferenceDate: Double(n)), forKey: "from")
                if n % 2 == 0 { order.setObject(table, forKey: "group") }
            }
            try context.save()
            context.reset()
            let sorted = try context.fetch(FetchRequest(entityName: "Order", predicate: try ObjectPredicate(format: "user == 0 AND group.where == 't'"),
                                                        sortDescriptors: [ObjectSortDescriptor("select")]))
            let tables = try context.fetch(FetchRequest(entityName: "Table", predicate: try ObjectPredicate(format: "ANY orders.select BEGINSWITH 's'")))
            return sorted.map { $0.value("select", as: String.self) ?? "?" } + tables.map { "\($0.objects(forKey: "orders").count)" }
        }
    }

    @Test("a refused value leaves the PostgreSQL store as it was, and the same save without it goes through", .enabled(if: TestStore.isPostgres))
    func refusalChangesNothing() throws {
        let description = try TestStore.freshPostgresStore(base: .inMemory)
        let container = try PersistentContainer(model: Self.model, store: description)
        guard case .postgres(let uri) = description.location else { Issue.record("not a PostgreSQL store"); return }
        let before = try PostgresTestDatabase.contents(uri)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let good = context.insertNewObject(forEntityName: "Item")
            good.setAttributeValue(.string("fine"), forKey: "text")
            let bad = context.insertNewObject(forEntityName: "Item")
            bad.setAttributeValue(.string("nul\u{0}here"), forKey: "text")
            bad.setAttributeValue(.string(String(repeating: "u", count: 3_000)), forKey: "unique")
            do {
                try context.save()
                Issue.record("saved values PostgreSQL cannot hold")
            } catch SaveError.validation(let errors) {
                #expect(Set(errors.map { "\($0.property ?? "-") \($0.code.rawValue)" }) == ["text invalid-type", "unique too-long"])
                #expect(errors.allSatisfy { $0.objectID == bad.objectID })
            }
            #expect(try PostgresTestDatabase.contents(uri) == before)
            context.delete(bad)
            try context.save()
        }
        let reader = container.newBackgroundContext()
        #expect(try reader.performAndWait { try reader.count(for: FetchRequest(entityName: "Item")) } == 1)
    }
}
