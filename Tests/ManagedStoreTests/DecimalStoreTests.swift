import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite

/// Decimals in a real store: compared and ordered as numbers by plain SQLite (no custom
/// collation), unique and indexed, and the file readable and checkable by the stock `sqlite3`.
@Suite("Decimals in the store, readable by stock SQLite")
struct DecimalStoreTests {
    // MARK: Fixture

    /// One attribute of every type, with uniqueness constraints and indexes on the decimal,
    /// a to-one, a to-many and a many-to-many relationship.
    static let model: ManagedObjectModel = {
        do {
            return try ManagedObjectModel(name: "EveryType", entities: [
                EntityDescription(name: "Product", attributes: [
                    AttributeDescription(name: "sku", type: .string),
                    AttributeDescription(name: "small", type: .integer16),
                    AttributeDescription(name: "medium", type: .integer32),
                    AttributeDescription(name: "large", type: .integer64),
                    AttributeDescription(name: "price", type: .decimal),
                    AttributeDescription(name: "weight", type: .double),
                    AttributeDescription(name: "ratio", type: .float),
                    AttributeDescription(name: "active", type: .boolean),
                    AttributeDescription(name: "added", type: .date),
                    AttributeDescription(name: "photo", type: .binary),
                    AttributeDescription(name: "token", type: .uuid),
                    AttributeDescription(name: "link", type: .uri),
                ], relationships: [
                    RelationshipDescription(name: "category", destination: "Category", inverse: "products"),
                    RelationshipDescription(name: "tags", destination: "Tag", inverse: "products", isToMany: true),
                ], uniquenessConstraints: [["price"], ["sku", "price"]], indexes: [["price"], ["active", "price"]]),
                EntityDescription(name: "Category", attributes: [
                    AttributeDescription(name: "name", type: .string),
                    AttributeDescription(name: "budget", type: .decimal),
                ], relationships: [RelationshipDescription(name: "products", destination: "Product", inverse: "category", isToMany: true)]),
                EntityDescription(name: "Tag", attributes: [AttributeDescription(name: "label", type: .string)],
                                  relationships: [RelationshipDescription(name: "products", destination: "Product", inverse: "tags", isToMany: true)]),
            ])
        } catch {
            fatalError("the every-type test model is invalid: \(error)")
        }
    }()

    /// In numeric order, as people write them (the readable part of the stored text).
    static let prices = ["-100", "-1.25", "-1.2", "-0.5", "0", "0.001", "1.2", "1.25", "12.5",
                         "100000000000000000000", "99999999999999999999999999999999999999"]

    static func decimal(_ text: String) -> Decimal {
        // Fixed literals of this file; a nil is a typo here, not input.
        Decimal(string: text, locale: Locale(identifier: "en_US_POSIX"))!
    }

    /// A file store holding one product per price, inserted out of order (every attribute set),
    /// in two categories.
    static func seededStore() throws -> (TemporaryStore, PersistentContainer) {
        let store = TemporaryStore()
        let container = try PersistentContainer(model: model, store: .sqlite(store.url))
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let categories = ["cheap", "dear"].map { name -> ManagedObject in
                let category = context.insertNewObject(forEntityName: "Category")
                category.setValue(name, forKey: "name")
                category.setValue(decimal(name == "cheap" ? "-0.5" : "1e20"), forKey: "budget")
                return category
            }
            let tag = context.insertNewObject(forEntityName: "Tag")
            tag.setValue("all", forKey: "label")
            for (n, i) in [4, 9, 0, 7, 2, 10, 5, 1, 8, 3, 6].enumerated() {
                let product = context.insertNewObject(forEntityName: "Product")
                product.setValue("sku-\(i)", forKey: "sku")
                product.setValue(Int64(i), forKey: "small")
                product.setValue(Int64(i * 1000), forKey: "medium")
                product.setValue(Int64(n), forKey: "large")
                product.setValue(decimal(prices[i]), forKey: "price")
                product.setValue(Double(i) / 4, forKey: "weight")
                product.setValue(Float(i) / 8, forKey: "ratio")
                product.setValue(i % 2 == 0, forKey: "active")
                product.setValue(Date(timeIntervalSinceReferenceDate: Double(i) * 3600), forKey: "added")
                product.setValue(Data([UInt8(i), 0, 255]), forKey: "photo")
                product.setValue(UUID(), forKey: "token")
                product.setValue(URL(string: "https://example.com/\(i)"), forKey: "link")
                product.setObject(categories[i < 5 ? 0 : 1], forKey: "category")
                product.setObjects([tag], forKey: "tags")
            }
            try context.save()
        }
        return (store, container)
    }

    /// The prices of the products matching `format`, in price order.
    static func prices(_ container: PersistentContainer, _ format: String?, sorts: [ObjectSortDescriptor] = [ObjectSortDescriptor("price")]) throws -> [String] {
        let context = container.newBackgroundContext()
        return try context.performAndWait {
            let request = FetchRequest(entityName: "Product", predicate: try format.map { try ObjectPredicate(format: $0) }, sortDescriptors: sorts)
            return try context.fetch(request).map { "\($0.value("price", as: Decimal.self).map(\.description) ?? "nil")" }
        }
    }

    // MARK: Definitions

    @Test("no table or index definition of a model with every attribute type names a collation or an ms_ function")
    func definitionsArePlainSQLite() throws {
        let (store, container) = try Self.seededStore()
        _ = store
        let definitions: [String] = try container.coordinator.sqlite.writer.withConnection { connection in
            try connection.withStatement("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL") { s throws(StoreError) in
                var all: [String] = []
                while try s.step() { all.append(s.text(0)) }
                return all
            }
        }
        #expect(definitions.count >= 10, "tables and indexes: \(definitions)")
        for sql in definitions {
            #expect(!sql.uppercased().contains("COLLATE"), "\(sql)")
            #expect(!sql.lowercased().contains("ms_"), "\(sql)")
        }
        // Every attribute type is in the model, so every column type StoreSchema writes was checked.
        let types = Set(Self.model.schema[0].attributes.map(\.type))
        #expect(types.count == AttributeType.allCases.count)
    }

    // MARK: Stock SQLite

    @Test("stock sqlite3 checks the file and orders decimals as numbers", .enabled(if: StockSQLite.isInstalled, StockSQLite.missing))
    func stockSQLiteReadsTheStore() throws {
        let (store, container) = try Self.seededStore()
        _ = container
        let check = try StockSQLite.run(store.url, "PRAGMA integrity_check")
        #expect(check.status == 0, "\(check.stderr)")
        #expect(check.lines == ["ok"])
        let ordered = try StockSQLite.run(store.url, #"SELECT price FROM "Product" ORDER BY price"#)
        #expect(ordered.status == 0, "\(ordered.stderr)")
        #expect(ordered.lines.map { DecimalStorage.decode($0) } == Self.prices.map { Self.decimal($0) })
        // What a person sees after the space is the number itself.
        let readable = try StockSQLite.run(store.url, #"SELECT substr(price, instr(price, ' ') + 1) FROM "Product" ORDER BY price DESC"#)
        #expect(readable.lines == Self.prices.reversed())
        // The indexes serve stock SQLite too: a range through the price index, numerically.
        let low = try #require(DecimalStorage.encode(Self.decimal("-1.2"))), high = try #require(DecimalStorage.encode(Self.decimal("1.2")))
        let range = try StockSQLite.run(store.url, #"SELECT sku FROM "Product" INDEXED BY "Product_index_0" WHERE price BETWEEN '\#(low)' AND '\#(high)' ORDER BY price"#)
        #expect(range.lines == ["sku-2", "sku-3", "sku-4", "sku-5", "sku-6"], "\(range.stderr)")
    }

    // MARK: Queries

    @Test("=, <, BETWEEN, IN and ORDER BY on a decimal compare numbers; literals are encoded like stored values", arguments: [
        ("price == 12.50", ["12.5"]),
        (#"price == "1.20""#, ["1.2"]),
        ("price == -0.0", ["0"]),
        ("price != 0 AND price < 1", ["-100", "-1.25", "-1.2", "-0.5", "0.001"]),
        ("price < 0", ["-100", "-1.25", "-1.2", "-0.5"]),
        ("price <= -1.25", ["-100", "-1.25"]),
        ("price > 1.2", ["1.25", "12.5", "100000000000000000000", "99999999999999999999999999999999999999"]),
        ("price >= 1e20", ["100000000000000000000", "99999999999999999999999999999999999999"]),
        ("price BETWEEN {-1.25, 1.2}", ["-1.25", "-1.2", "-0.5", "0", "0.001", "1.2"]),
        ("price BETWEEN {0.0001, 0.01}", ["0.001"]),
        (#"price IN {1.2, 12.50, -0.5, 7, "0.0010"}"#, ["-0.5", "0.001", "1.2", "12.5"]),
        ("NOT (price IN {1.2, 12.5}) AND price > 1", ["1.25", "100000000000000000000", "99999999999999999999999999999999999999"]),
        ("price ==[c] 1.25", ["1.25"]),
        // Cheap (budget -0.5) holds the first five prices, dear (budget 1e20) the rest.
        ("price > category.budget", ["0", "99999999999999999999999999999999999999"]),
        ("category.budget == 1e20 AND price < 2", ["0.001", "1.2", "1.25"]),
    ])
    func predicates(_ format: String, _ expected: [String]) throws {
        let (store, container) = try Self.seededStore()
        _ = store
        #expect(try Self.prices(container, format) == expected)
    }

    @Test("sorting by a decimal, either way and folded, and keyset pages through it, follow the numbers")
    func ordering() throws {
        let (store, container) = try Self.seededStore()
        _ = store
        #expect(try Self.prices(container, nil) == Self.prices)
        #expect(try Self.prices(container, nil, sorts: [ObjectSortDescriptor("price", ascending: false)]) == Self.prices.reversed())
        #expect(try Self.prices(container, nil, sorts: [ObjectSortDescriptor("price", options: [.caseInsensitive, .diacriticInsensitive])]) == Self.prices)
        #expect(try Self.prices(container, nil, sorts: [ObjectSortDescriptor("category.budget"), ObjectSortDescriptor("price", ascending: false)])
                == Array(Self.prices[0..<5].reversed() + Self.prices[5...].reversed()))
        let context = container.newBackgroundContext()
        try context.performAndWait {
            var request = FetchRequest(entityName: "Product", sortDescriptors: [ObjectSortDescriptor("price", ascending: false)])
            request.fetchLimit = 3
            var seen: [String] = []
            while true {
                let page = try context.fetch(request)
                seen += page.compactMap { $0.value("price", as: Decimal.self)?.description }
                guard let last = page.last, page.count == 3 else { break }
                request.after = try context.cursor(after: last, for: request)
            }
            #expect(seen == Self.prices.reversed())
        }
    }

    @Test("a uniqueness constraint on a decimal holds for equal numbers written differently")
    func uniqueness() throws {
        let (store, container) = try Self.seededStore()
        _ = store
        let context = container.newBackgroundContext()
        context.performAndWait {
            let again = context.insertNewObject(forEntityName: "Product")
            again.setValue(Self.decimal("12.50"), forKey: "price")
            let first = context.insertNewObject(forEntityName: "Product")
            first.setValue(Self.decimal("7.5"), forKey: "price")
            let second = context.insertNewObject(forEntityName: "Product")
            second.setValue(Self.decimal("7.500"), forKey: "price")
            do {
                try context.save()
                Issue.record("expected constraint conflicts")
            } catch let SaveError.conflict(_, constraints) {
                let prices = constraints.filter { $0.constraint == ["price"] }
                #expect(prices.count == 2, "\(constraints)")
                #expect(prices.contains { $0.objects == [again.objectID] && $0.conflictingObjects.count == 1 })
                #expect(prices.contains { Set($0.objects) == [first.objectID, second.objectID] && $0.conflictingObjects.isEmpty })
            } catch {
                Issue.record("unexpected \(error)")
            }
        }
    }

    @Test("a stored row reads and writes its decimal as the exact number")
    func storedRow() throws {
        let (store, container) = try Self.seededStore()
        _ = store
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let products = try context.fetch(FetchRequest(entityName: "Product", sortDescriptors: [ObjectSortDescriptor("price")]))
            let index = try #require(Self.model.schema[0].attributes.firstIndex { $0.name == "price" })
            for (product, price) in zip(products, Self.prices) {
                let (value, json) = try #require(try context.withStoredObject(product.objectID) { row in
                    var writer = JSONWriter()
                    row.writeJSON(ofAttributeAt: index, into: &writer)
                    return (row.value(ofAttributeAt: index), writer.string)
                })
                #expect(value == .decimal(Self.decimal(price)))
                #expect(json == "\"\(price)\"")
            }
        }
    }

    @Test("string operators on a decimal are refused: they would see the stored text, not the number", arguments: [
        (#"price BEGINSWITH "1""#, "Product"), (#"price ENDSWITH "5""#, "Product"), (#"price CONTAINS[c] "2""#, "Product"),
        (#"price LIKE "1*""#, "Product"), (#"price MATCHES "1.*""#, "Product"), (#""12.5" BEGINSWITH price"#, "Product"),
        (#"category.budget CONTAINS "0""#, "Product"), (#"ANY products.price BEGINSWITH "1""#, "Category"),
        (#"products.@max.price LIKE "1*""#, "Category"), (#"SUBQUERY(products, $p, $p.price CONTAINS "5").@count > 0"#, "Category"),
    ])
    func stringOperatorsRefused(_ format: String, _ entity: String) throws {
        let container = try PersistentContainer(model: Self.model, store: .inMemory)
        let context = container.newBackgroundContext()
        let predicate = try ObjectPredicate(format: format)
        _ = context.performAndWait {
            #expect {
                _ = try context.fetch(FetchRequest(entityName: entity, predicate: predicate))
            } throws: { error in
                guard case FetchError.incompatibleTypes(_, let detail)? = error as? FetchError else { return false }
                return detail.contains("string")
            }
        }
    }
}
