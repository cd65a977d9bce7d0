import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite

/// Stores written by earlier versions: format 1 (decimals as plain text in `TEXT COLLATE
/// MS_DECIMAL` columns) is upgraded in place when opened; a format this version does not know
/// is refused.
@Suite("Store file formats")
struct StoreFormatMigrationTests {
    // MARK: A format-1 store, made by hand

    /// Box and Item have decimals (Item's indexed and unique), Tag has none.
    static let model: ManagedObjectModel = {
        do {
            return try ManagedObjectModel(name: "Shop", entities: [
                EntityDescription(name: "Box", attributes: [
                    AttributeDescription(name: "label", type: .string),
                    AttributeDescription(name: "budget", type: .decimal),
                ], relationships: [RelationshipDescription(name: "items", destination: "Item", inverse: "box", isToMany: true)]),
                EntityDescription(name: "Item", attributes: [
                    AttributeDescription(name: "name", type: .string),
                    AttributeDescription(name: "price", type: .decimal),
                    AttributeDescription(name: "qty", type: .integer64),
                ], relationships: [
                    RelationshipDescription(name: "box", destination: "Box", inverse: "items"),
                    RelationshipDescription(name: "tags", destination: "Tag", inverse: "items", isToMany: true),
                ], uniquenessConstraints: [["price"], ["name", "price"]], indexes: [["price"], ["qty", "price"]]),
                EntityDescription(name: "Tag", attributes: [AttributeDescription(name: "label", type: .string)],
                                  relationships: [RelationshipDescription(name: "items", destination: "Item", inverse: "tags", isToMany: true)]),
            ])
        } catch {
            fatalError("the format test model is invalid: \(error)")
        }
    }()

    /// The schema format 1 made for `model`, as it wrote it.
    static let format1Schema = [
        #"CREATE TABLE "_metadata" ("key" TEXT PRIMARY KEY, "value" TEXT NOT NULL)"#,
        #"CREATE TABLE "_sequence" ("entity" TEXT PRIMARY KEY, "max" INTEGER NOT NULL)"#,
        #"CREATE TABLE "Box" ("_pk" INTEGER PRIMARY KEY, "_version" INTEGER NOT NULL, "label" TEXT, "budget" TEXT COLLATE MS_DECIMAL)"#,
        #"CREATE TABLE "Item" ("_pk" INTEGER PRIMARY KEY, "_version" INTEGER NOT NULL, "name" TEXT, "price" TEXT COLLATE MS_DECIMAL, "qty" INTEGER, "box" INTEGER)"#,
        #"CREATE INDEX "Item_fk_box" ON "Item" ("box")"#,
        #"CREATE UNIQUE INDEX "Item_unique_0" ON "Item" ("price")"#,
        #"CREATE UNIQUE INDEX "Item_unique_1" ON "Item" ("name", "price")"#,
        #"CREATE INDEX "Item_index_0" ON "Item" ("price")"#,
        #"CREATE INDEX "Item_index_1" ON "Item" ("qty", "price")"#,
        #"CREATE TABLE "_join_Item_tags" ("a" INTEGER NOT NULL, "b" INTEGER NOT NULL, PRIMARY KEY ("a", "b")) WITHOUT ROWID"#,
        #"CREATE INDEX "_join_Item_tags_b" ON "_join_Item_tags" ("b", "a")"#,
        #"CREATE TABLE "Tag" ("_pk" INTEGER PRIMARY KEY, "_version" INTEGER NOT NULL, "label" TEXT)"#,
    ]

    /// Item prices as format 1 wrote them (`Decimal.description`), one per item, out of order;
    /// item 11 has none.
    static let storedPrices: [String?] = ["12.5", "-1.25", "0", "100000000000000000000", "-100", "1.2", "0.001",
                                          "99999999999999999999999999999999999999", "-0.5", "1.25", nil, "-1.2"]
    /// The same, in numeric order, as the store reads them.
    static let orderedPrices = ["-100", "-1.25", "-1.2", "-0.5", "0", "0.001", "1.2", "1.25", "12.5",
                                "100000000000000000000", "99999999999999999999999999999999999999"]

    /// A format-1 store file with boxes, items and tags, as the coordinator of format 1 left it.
    /// With `strayTable`, a leftover table blocks the upgrade half way (after Box is rebuilt).
    static func makeFormat1Store(strayTable: Bool = false) throws -> TemporaryStore {
        let store = TemporaryStore()
        let connection = try SQLiteConnection(path: store.url.path)
        try connection.execute("BEGIN")
        for statement in format1Schema { try connection.execute(statement) }
        let metadata = [("store_uuid", "6F2C1D2E-9A43-4E55-8C1B-0E9B7C3D5A10"), ("model_hash", model.versionHash),
                        ("model_name", model.name), ("format", "1")]
        for (key, value) in metadata {
            _ = try connection.scalarInt(#"INSERT INTO "_metadata" ("key", "value") VALUES (?, ?)"#, [.string(key), .string(value)])
        }
        for (entity, max) in [("Box", 3), ("Item", 12), ("Tag", 2)] {
            _ = try connection.scalarInt(#"INSERT INTO "_sequence" ("entity", "max") VALUES (?, ?)"#, [.string(entity), .integer(Int64(max))])
        }
        // Box 3's budget is text format 1 read as no number (null); box 2 has none.
        for (pk, label, budget) in [(1, "small", "12.50"), (2, "none", nil), (3, "odd", "abc")] as [(Int64, String, String?)] {
            _ = try connection.scalarInt(#"INSERT INTO "Box" VALUES (?, 1, ?, ?)"#, [.integer(pk), .string(label), budget.map(AttributeValue.string) ?? .null])
        }
        for (i, price) in storedPrices.enumerated() {
            let pk = Int64(i + 1)
            _ = try connection.scalarInt(#"INSERT INTO "Item" VALUES (?, ?, ?, ?, ?, ?)"#, [
                .integer(pk), .integer(pk % 3 + 1), .string("item \(pk)"), price.map(AttributeValue.string) ?? .null,
                .integer(pk * 10), pk % 4 == 0 ? .null : .integer(pk % 2 + 1),
            ])
        }
        for (pk, label) in [(1, "red"), (2, "blue")] as [(Int64, String)] {
            _ = try connection.scalarInt(#"INSERT INTO "Tag" VALUES (?, 1, ?)"#, [.integer(pk), .string(label)])
        }
        for (item, tag) in [(1, 1), (1, 2), (5, 2), (12, 1)] as [(Int64, Int64)] {
            _ = try connection.scalarInt(#"INSERT INTO "_join_Item_tags" VALUES (?, ?)"#, [.integer(item), .integer(tag)])
        }
        if strayTable { try connection.execute(#"CREATE TABLE "_ms_format2_Item" (x)"#) }
        try connection.execute("COMMIT")
        return store
    }

    static func decimal(_ text: String) -> Decimal {
        // Fixed literals of this file; a nil is a typo here, not input.
        Decimal(string: text, locale: Locale(identifier: "en_US_POSIX"))!
    }

    /// The store's recorded format and its definitions (type, name, SQL), read with a plain connection.
    static func formatAndSchema(_ url: URL) throws -> (format: String?, schema: Set<[String]>) {
        let connection = try SQLiteConnection(path: url.path)
        let format = try connection.withStatement(#"SELECT "value" FROM "_metadata" WHERE "key" = 'format'"#) { s throws(StoreError) in
            try s.step() ? s.text(0) : nil
        }
        let schema = try connection.withStatement("SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL") { s throws(StoreError) in
            var rows: Set<[String]> = []
            while try s.step() { rows.insert([s.text(0), s.text(1), s.text(2)]) }
            return rows
        }
        return (format, schema)
    }

    // MARK: Tests

    @Test("the format-1 schema written out here is what StoreSchema makes, with the old collation on decimal columns, no _history column and no later tables")
    func format1SchemaIsFaithful() {
        let later = StoreSchema.historyStatements + IdempotencyTable.createStatements
        let today = StoreSchema.createStatements(for: Self.model).filter { !later.contains($0) }
            .map { $0.replacingOccurrences(of: ", \(StoreSchema.historyColumn) INTEGER", with: "") }
        #expect(Self.format1Schema.map { $0.replacingOccurrences(of: " COLLATE MS_DECIMAL", with: "") } == today)
    }

    @Test("a format-1 store is upgraded in place: same values, numeric order, today's schema, today's format")
    func upgradesFormat1() throws {
        let store = try Self.makeFormat1Store()
        let container = try PersistentContainer(model: Self.model, store: .sqlite(store.url))
        #expect(container.coordinator.storeIdentifier.uuidString == "6F2C1D2E-9A43-4E55-8C1B-0E9B7C3D5A10")
        let context = container.newBackgroundContext()
        try context.performAndWait {
            // Every value reads back exactly, in numeric order.
            let items = try context.fetch(FetchRequest(entityName: "Item", sortDescriptors: [ObjectSortDescriptor("price")]))
            #expect(items.map { $0.value("price", as: Decimal.self) } == [nil] + Self.orderedPrices.map { Self.decimal($0) })
            for item in items {
                let pk = try #require(item.objectID.primaryKey)
                #expect(item.version == pk % 3 + 1)
                #expect(item.value("name", as: String.self) == "item \(pk)")
                #expect(item.value("qty", as: Int64.self) == pk * 10)
                #expect(item.object(forKey: "box")?.objectID.primaryKey == (pk % 4 == 0 ? nil : pk % 2 + 1))
            }
            let boxes = try context.fetch(FetchRequest(entityName: "Box", sortDescriptors: [ObjectSortDescriptor("label")]))
            #expect(boxes.map { $0.value("budget", as: Decimal.self) } == [nil, nil, Self.decimal("12.5")])
            let first = try context.existingObject(with: try #require(container.coordinator.managedObjectID(entityName: "Item", primaryKey: 1)))
            #expect(first.objectIDs(forKey: "tags").compactMap(\.primaryKey) == [1, 2])
            // Predicates compare numbers.
            func names(_ format: String) throws -> [String] {
                let request = FetchRequest(entityName: "Item", predicate: try ObjectPredicate(format: format), sortDescriptors: [ObjectSortDescriptor("price")])
                return try context.fetch(request).compactMap { $0.value("price", as: Decimal.self)?.description }
            }
            #expect(try names("price BETWEEN {-1.25, 1.2}") == ["-1.25", "-1.2", "-0.5", "0", "0.001", "1.2"])
            #expect(try names("price IN {12.50, -100, 3}") == ["-100", "12.5"])
            #expect(try names("price > 1e20") == ["99999999999999999999999999999999999999"])
            #expect(try names("price == nil").isEmpty)
            // The unique index still holds, for equal numbers written differently.
            let duplicate = context.insertNewObject(forEntityName: "Item")
            duplicate.setValue(Self.decimal("1.250"), forKey: "price")
            #expect(throws: SaveError.self) { try context.save() }
            context.rollback()
            // New objects take keys after the ones format 1 handed out.
            let fresh = context.insertNewObject(forEntityName: "Item")
            fresh.setValue(Self.decimal("7"), forKey: "price")
            try context.save()
            #expect(fresh.objectID.primaryKey == 13)
        }
        #expect(try container.coordinator.checkIntegrity().isEmpty)

        let (format, schema) = try Self.formatAndSchema(store.url)
        #expect(format == StoreFormatMigration.currentFormat)
        #expect(schema.allSatisfy { !$0[2].uppercased().contains("COLLATE") }, "\(schema)")
        // The upgraded definitions are exactly a new store's.
        let fresh = TemporaryStore()
        _ = try PersistentContainer(model: Self.model, store: .sqlite(fresh.url))
        #expect(schema == (try Self.formatAndSchema(fresh.url)).schema)
    }

    @Test("an upgraded store passes stock sqlite3's integrity check, which the format-1 file fails",
          .enabled(if: StockSQLite.isInstalled, StockSQLite.missing))
    func upgradedStorePassesStockCheck() throws {
        let store = try Self.makeFormat1Store()
        let before = try StockSQLite.run(store.url, "PRAGMA integrity_check")
        #expect(before.status != 0 && before.stderr.contains("no such collation sequence: MS_DECIMAL"), "\(before)")
        do { _ = try PersistentContainer(model: Self.model, store: .sqlite(store.url)) }
        let after = try StockSQLite.run(store.url, "PRAGMA integrity_check")
        #expect(after.status == 0, "\(after.stderr)")
        #expect(after.lines == ["ok"])
        let readable = try StockSQLite.run(store.url, #"SELECT substr(price, instr(price, ' ') + 1) FROM "Item" WHERE price IS NOT NULL ORDER BY price"#)
        #expect(readable.lines == Self.orderedPrices)
    }

    @Test("an upgrade that fails half way leaves the format-1 store as it was")
    func failedUpgradeRollsBack() throws {
        let store = try Self.makeFormat1Store(strayTable: true)
        let before = try Self.formatAndSchema(store.url)
        #expect(throws: StoreError.self) { _ = try PersistentContainer(model: Self.model, store: .sqlite(store.url)) }
        let after = try Self.formatAndSchema(store.url)
        #expect(after.format == "1")
        #expect(after.schema == before.schema)
    }

    // MARK: Format 4: changes found by an index on (entity, pk, token), no chains

    /// Turns today's store into format 4 as that version left it: no `_history` column in the
    /// entity tables, no `prior` in the change rows, the index on (entity, pk, token).
    /// Today's store as format 5 left it: without the records of idempotent writes.
    static func turnIntoFormat5(_ connection: SQLiteConnection) throws {
        try connection.execute(#"DROP TABLE "_idempotency""#)
        try connection.execute(#"UPDATE "_metadata" SET "value" = '5' WHERE "key" = 'format'"#)
    }

    @Test("a format-5 store is upgraded in place: its objects and history kept, the idempotency table a new store's, keyed saves working")
    func upgradesFormat5() throws {
        let store = TemporaryStore()
        var tagID: ManagedObjectID?
        do {
            let container = try PersistentContainer(model: Self.model, store: .sqlite(store.url))
            let context = container.newBackgroundContext()
            try context.performAndWait { () throws in
                let tag = context.insertNewObject(forEntityName: "Tag")
                tag.setValue("kept", forKey: "label")
                try context.save()
                tagID = tag.objectID
            }
        }
        try Self.turnIntoFormat5(try SQLiteConnection(path: store.url.path))
        #expect(try Self.formatAndSchema(store.url).format == "5")
        let container = try PersistentContainer(model: Self.model, store: .sqlite(store.url))
        let (format, schema) = try Self.formatAndSchema(store.url)
        #expect(format == StoreFormatMigration.currentFormat)
        let fresh = TemporaryStore()
        _ = try PersistentContainer(model: Self.model, store: .sqlite(fresh.url))
        #expect(schema == (try Self.formatAndSchema(fresh.url)).schema, "the definitions are a new store's")
        #expect(try container.coordinator.history(after: .zero).count == 1)
        let context = container.newBackgroundContext()
        try context.performAndWait { () throws in
            let kept = try context.existingObject(with: #require(tagID))
            #expect(kept.value("label", as: String.self) == "kept")
            let key = try #require(IdempotencyKey("after-upgrade"))
            context.insertNewObject(forEntityName: "Tag").setValue("once", forKey: "label")
            #expect(try !context.save(idempotencyKey: key).isReplay)
            context.insertNewObject(forEntityName: "Tag").setValue("once", forKey: "label")
            #expect(try context.save(idempotencyKey: key).isReplay)
        }
        #expect(try container.coordinator.checkIntegrity().isEmpty)
    }

    static func turnIntoFormat4(_ connection: SQLiteConnection) throws {
        try turnIntoFormat5(connection)
        for entity in model.schema { try connection.execute("ALTER TABLE \(entity.table) DROP COLUMN \"_history\"") }
        try connection.execute(#"ALTER TABLE "_history_change" RENAME TO "new_changes""#)
        try connection.execute(#"""
            CREATE TABLE "_history_change" ("token" INTEGER NOT NULL, "entity" TEXT NOT NULL, "pk" INTEGER NOT NULL, "type" INTEGER NOT NULL, \#
            "version" INTEGER, "properties" TEXT, "previous" TEXT, PRIMARY KEY ("token", "entity", "pk")) WITHOUT ROWID
            """#)
        try connection.execute(#"""
            INSERT INTO "_history_change" SELECT "token", "entity", "pk", "type", "version", "properties", "previous" FROM "new_changes"
            """#)
        try connection.execute(#"DROP TABLE "new_changes""#)
        try connection.execute(#"CREATE INDEX "_history_change_object" ON "_history_change" ("entity", "pk", "token")"#)
        try connection.execute(#"UPDATE "_metadata" SET "value" = '4' WHERE "key" = 'format'"#)
    }

    @Test("a format-4 store is upgraded in place: every object's chain finds what a scan of its history finds, for every version")
    func upgradesFormat4() throws {
        let store = TemporaryStore()
        var ids: [ManagedObjectID] = []
        do {
            let container = try PersistentContainer(model: Self.model, store: .sqlite(store.url))
            let context = container.newBackgroundContext()
            try context.performAndWait { () throws in
                let boxes = (0..<2).map { i -> ManagedObject in
                    let box = context.insertNewObject(forEntityName: "Box")
                    box.setValue("box \(i)", forKey: "label")
                    return box
                }
                let tag = context.insertNewObject(forEntityName: "Tag")
                tag.setValue("red", forKey: "label")
                let items = (0..<3).map { i -> ManagedObject in
                    let item = context.insertNewObject(forEntityName: "Item")
                    item.setValue("item \(i)", forKey: "name")
                    item.setObject(boxes[0], forKey: "box")
                    return item
                }
                try context.save()
                items[0].setValue(Int64(5), forKey: "qty")
                try context.save()
                items[1].setObject(boxes[1], forKey: "box")  // both boxes change through the items' keys only
                items[2].addObject(tag, toKey: "tags")  // the tag changes through the join table only
                try context.save()
                context.delete(items[2])
                boxes[1].setValue("box one", forKey: "label")
                try context.save()
                ids = boxes.map(\.objectID) + [tag.objectID] + items.map(\.objectID)
            }
        }
        let transactions: Int
        do {
            let container = try PersistentContainer(model: Self.model, store: .sqlite(store.url))
            transactions = try container.coordinator.history(after: .zero).count
        }
        try Self.turnIntoFormat4(try SQLiteConnection(path: store.url.path))
        #expect(try Self.formatAndSchema(store.url).format == "4")

        let container = try PersistentContainer(model: Self.model, store: .sqlite(store.url))
        #expect(try container.coordinator.history(after: .zero).count == transactions)
        var lists = 0
        for id in ids {
            for version in Int64(1)...4 {
                let scan = try HistoryChainTests.scanned(container, id, after: version)
                #expect(try HistoryChainTests.chained(container, id, after: version) == scan, "\(id) after version \(version)")
                if scan != nil { lists += 1 }
            }
        }
        #expect(lists >= ids.count, "every object's history reaches at least its first version")
        let (format, schema) = try Self.formatAndSchema(store.url)
        #expect(format == StoreFormatMigration.currentFormat)
        let fresh = TemporaryStore()
        _ = try PersistentContainer(model: Self.model, store: .sqlite(fresh.url))
        #expect(schema == (try Self.formatAndSchema(fresh.url)).schema, "the definitions are a new store's")
        #expect(try container.coordinator.checkIntegrity().isEmpty)
    }

    // MARK: Format 3: history tokens by AUTOINCREMENT, a change's properties in their own column

    /// Today's store for `model` with two saves, turned into format 3 as that version left it:
    /// the transaction table with AUTOINCREMENT and its `sqlite_sequence` row at `sequence`, the
    /// change rows with their `properties`; with `prunedAll`, every transaction pruned.
    static func makeFormat3Store(sequence: Int64, prunedAll: Bool) throws -> (TemporaryStore, [ManagedObjectID]) {
        let store = TemporaryStore()
        var ids: [ManagedObjectID] = []
        do {
            let container = try PersistentContainer(model: Self.model, store: .sqlite(store.url))
            let context = container.newBackgroundContext()
            try context.performAndWait {
                let tag = context.insertNewObject(forEntityName: "Tag")
                tag.setValue("first", forKey: "label")
                try context.save()
                tag.setValue("second", forKey: "label")
                try context.save()
                ids.append(tag.objectID)
            }
        }
        let connection = try SQLiteConnection(path: store.url.path)
        try turnIntoFormat4(connection)
        try connection.execute(#"ALTER TABLE "_history_transaction" RENAME TO "old_transactions""#)
        try connection.execute(#"CREATE TABLE "_history_transaction" ("token" INTEGER PRIMARY KEY AUTOINCREMENT, "timestamp" REAL NOT NULL, "author" TEXT, "context" TEXT)"#)
        try connection.execute(#"INSERT INTO "_history_transaction" SELECT * FROM "old_transactions""#)
        try connection.execute(#"DROP TABLE "old_transactions""#)
        try connection.execute(#"UPDATE "sqlite_sequence" SET "seq" = \#(sequence) WHERE "name" = '_history_transaction'"#)
        // Format 3 wrote the names of the changed properties in their own column.
        try connection.execute(#"UPDATE "_history_change" SET "properties" = '["label"]' WHERE "type" = 2"#)
        if prunedAll {
            try connection.execute(#"DELETE FROM "_history_change""#)
            try connection.execute(#"DELETE FROM "_history_transaction""#)
            try connection.execute(#"INSERT OR REPLACE INTO "_metadata" VALUES ('history_pruned_through', '\#(sequence)')"#)
        }
        try connection.execute(#"UPDATE "_metadata" SET "value" = '3' WHERE "key" = 'format'"#)
        return (store, ids)
    }

    @Test("a format-3 store is upgraded in place: its history reads the same, tokens go on after the last one handed out")
    func upgradesFormat3() throws {
        let (store, ids) = try Self.makeFormat3Store(sequence: 2, prunedAll: false)
        let container = try PersistentContainer(model: Self.model, store: .sqlite(store.url))
        let history = try container.coordinator.history(after: .zero)
        #expect(history.map(\.token.rawValue) == [1, 2])
        let update = try #require(history.last?.changes.first)
        #expect(update.objectID == ids[0] && update.changeType == .update)
        #expect(update.updatedProperties == ["label"], "read from the properties column of format 3")
        #expect(update.previousValues["label"] == .attribute(.string("first")))
        let context = container.newBackgroundContext()
        try context.performAndWait { () throws in
            let tag = try context.existingObject(with: ids[0])
            tag.setValue("third", forKey: "label")
            #expect(try context.save().token?.rawValue == 3)
        }
        let latest = try #require(try container.coordinator.history(after: PersistentHistoryToken(rawValue: 2)).first?.changes.first)
        #expect(latest.updatedProperties == ["label"], "read from the values before, as formats 4 and on write them")
        #expect(latest.previousValues["label"] == .attribute(.string("second")))
        let (format, schema) = try Self.formatAndSchema(store.url)
        #expect(format == StoreFormatMigration.currentFormat)
        let fresh = TemporaryStore()
        _ = try PersistentContainer(model: Self.model, store: .sqlite(fresh.url))
        #expect(schema.subtracting(try Self.formatAndSchema(fresh.url).schema).allSatisfy { $0[1] == "sqlite_sequence" },
                "the definitions are a new store's (sqlite_sequence stays: SQLite never drops it)")
        #expect(try container.coordinator.checkIntegrity().isEmpty)
    }

    @Test("a format-3 store whose history was pruned to nothing never hands a token out again")
    func upgradesPrunedFormat3() throws {
        let (store, ids) = try Self.makeFormat3Store(sequence: 7, prunedAll: true)
        let container = try PersistentContainer(model: Self.model, store: .sqlite(store.url))
        #expect(try container.coordinator.historyTransactionCount() == 0)
        #expect(try container.coordinator.lastHistoryToken().rawValue == 7)
        let context = container.newBackgroundContext()
        try context.performAndWait { () throws in
            let tag = try context.existingObject(with: ids[0])
            tag.setValue("after", forKey: "label")
            #expect(try context.save().token?.rawValue == 8)
        }
        #expect(try container.coordinator.history(after: try container.coordinator.oldestHistoryToken()).map(\.token.rawValue) == [8])
    }

    @Test("a store of a format this version does not know is refused, saying which formats it reads", arguments: ["8", "0", "", nil] as [String?])
    func unknownFormatRefused(_ format: String?) throws {
        let store = TemporaryStore()
        do { _ = try PersistentContainer(model: Self.model, store: .sqlite(store.url)) }
        let connection = try SQLiteConnection(path: store.url.path)
        if let format {
            _ = try connection.scalarInt(#"UPDATE "_metadata" SET "value" = ? WHERE "key" = 'format'"#, [.string(format)])
        } else {
            try connection.execute(#"DELETE FROM "_metadata" WHERE "key" = 'format'"#)
        }
        #expect {
            _ = try PersistentContainer(model: Self.model, store: .sqlite(store.url))
        } throws: { error in
            guard let error = error as? StoreError else { return false }
            let text = "\(error)"
            return error == .unsupportedFormat(path: store.url.path, format: format ?? "none", readable: ["1", "2", "3", "4", "5", "6", "7"])
                && text.contains("file format \(format ?? "none")") && text.contains("reads formats 1, 2, 3, 4, 5, 6, 7")
        }
        #expect(try Self.formatAndSchema(store.url).format == format)
    }
}
