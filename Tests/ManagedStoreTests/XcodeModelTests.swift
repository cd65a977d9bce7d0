import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore

/// Models made in Xcode's editor (`.xcdatamodel`, `.xcdatamodeld`) read as Core Data reads them,
/// and what they hold that has no meaning here refused by name.
@Suite("Xcode models")
struct XcodeModelTests {
    // MARK: The XML underneath

    @Test("the XML reader: attributes, nesting, text, entities, comments, the declaration and a DOCTYPE")
    func xmlTree() throws {
        let document = """
            \u{FEFF}<?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <!-- a comment -->
            <a x="1" y='two &amp; &quot;three&quot;'><b/><!-- inside --><c z="&#x41;&#66;">caf&#233; &lt;ok&gt;</c></a>
            """
        let root = try XMLTreeParser.parse(Array(document.utf8))
        #expect(root.name == "a" && root[attribute: "x"] == "1" && root[attribute: "y"] == #"two & "three""#)
        #expect(root.children.map(\.name) == ["b", "c"])
        #expect(root.children[1][attribute: "z"] == "AB" && root.children[1].text == "café <ok>")
    }

    @Test("malformed XML is an error with its byte offset, never a crash", arguments: [
        ("<a>", "ends inside an element"), ("<a></b>", "</b> closes <a>"), ("<a x=1/>", "quoted value"),
        ("<a x='1' x='2'/>", "given twice"), ("<a>&bogus;</a>", "unknown entity"), ("<a/><b/>", "after the root"),
        ("<a><![CDATA[x]]></a>", "CDATA"), ("", "root element"), ("<a x='<'/>", "< inside"), ("<a>&#0;</a>", "unknown entity"),
    ])
    func xmlErrors(_ input: String, _ message: String) {
        #expect {
            _ = try XMLTreeParser.parse(Array(input.utf8))
        } throws: { error in
            guard let error = error as? XMLError else { return false }
            return error.message.contains(message) && error.offset <= input.utf8.count
        }
    }

    @Test("nesting deeper than the bound is an error, not a stack overflow")
    func xmlDepth() {
        let deep = String(repeating: "<a>", count: 10_000) + String(repeating: "</a>", count: 10_000)
        #expect(throws: XMLError.self) { _ = try XMLTreeParser.parse(Array(deep.utf8)) }
    }

    // MARK: Models

    /// A folder with an `.xcdatamodeld` of two versions (the second current) in Xcode's format.
    static func bundle(_ version2: String, current: String? = "Shop 2.xcdatamodel") throws -> (TemporaryStore, URL) {
        let folder = TemporaryStore()
        let bundle = folder.directory.appendingPathComponent("Shop.xcdatamodeld")
        for (name, body) in [("Shop.xcdatamodel", version1), ("Shop 2.xcdatamodel", version2)] {
            let version = bundle.appendingPathComponent(name)
            try FileManager.default.createDirectory(at: version, withIntermediateDirectories: true)
            try Data(model(body).utf8).write(to: version.appendingPathComponent("contents"))
        }
        if let current {
            try Data("""
                <?xml version="1.0" encoding="UTF-8"?>
                <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
                <plist version="1.0">
                <dict>
                \t<key>_XCCurrentVersionName</key>
                \t<string>\(current)</string>
                </dict>
                </plist>
                """.utf8).write(to: bundle.appendingPathComponent(".xccurrentversion"))
        }
        return (folder, bundle)
    }

    static func model(_ entities: String) -> String {
        """
        <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
        <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0" lastSavedToolsVersion="21754" systemVersion="22F66" minimumToolsVersion="Automatic" sourceLanguage="Swift" userDefinedModelVersionIdentifier="">
        \(entities)
            <elements>
                <element name="Order" positionX="-63" positionY="-18" width="128" height="89"/>
            </elements>
        </model>
        """
    }

    static let version1 = """
        <entity name="Order" representedClassName="Order" syncable="YES" codeGenerationType="class">
            <attribute name="number" attributeType="Integer 64" defaultValueString="0" usesScalarValueType="YES"/>
        </entity>
        """

    static let shop = """
        <entity name="Customer" representedClassName="Customer" syncable="YES" elementID="Client">
            <attribute name="email" attributeType="String" minValueString="3" maxValueString="254" regularExpressionString=".+@.+"/>
            <attribute name="id" attributeType="UUID" usesScalarValueType="NO"/>
            <attribute name="joined" optional="YES" attributeType="Date" defaultDateTimeInterval="0" usesScalarValueType="NO"/>
            <attribute name="vip" attributeType="Boolean" defaultValueString="0.0" usesScalarValueType="YES"/>
            <attribute name="homepage" optional="YES" attributeType="URI"/>
            <attribute name="photo" optional="YES" attributeType="Binary" allowsExternalBinaryDataStorage="YES"/>
            <relationship name="orders" toMany="YES" deletionRule="Cascade" destinationEntity="Order" inverseName="customer" inverseEntity="Order"/>
            <uniquenessConstraints>
                <uniquenessConstraint>
                    <constraint value="email"/>
                </uniquenessConstraint>
            </uniquenessConstraints>
            <fetchIndex name="byJoined">
                <fetchIndexElement property="joined" type="Binary" order="ascending"/>
                <fetchIndexElement property="vip" type="Binary" order="descending"/>
            </fetchIndex>
        </entity>
        <entity name="Order" representedClassName="Order" syncable="YES">
            <attribute name="number" attributeType="Integer 64" defaultValueString="0" usesScalarValueType="YES" indexed="YES"/>
            <attribute name="quantity" attributeType="Integer 16" minValueString="1" maxValueString="99" defaultValueString="1" usesScalarValueType="YES"/>
            <attribute name="count32" optional="YES" attributeType="Integer 32" usesScalarValueType="YES"/>
            <attribute name="total" optional="YES" attributeType="Decimal" defaultValueString="0.10"/>
            <attribute name="weight" optional="YES" attributeType="Double" minValueString="0" usesScalarValueType="YES"/>
            <attribute name="ratio" optional="YES" attributeType="Float" usesScalarValueType="YES" elementID="share"/>
            <relationship name="customer" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Customer" inverseName="orders" inverseEntity="Customer"/>
            <relationship name="invoice" optional="YES" maxCount="1" deletionRule="Deny" destinationEntity="Invoice" inverseName="order" inverseEntity="Invoice"/>
            <compoundIndexes>
                <compoundIndex>
                    <index value="customer"/>
                    <index value="number"/>
                </compoundIndex>
            </compoundIndexes>
        </entity>
        <entity name="Invoice" syncable="YES">
            <attribute name="sent" attributeType="Boolean" defaultValueString="NO" usesScalarValueType="YES"/>
            <relationship name="order" maxCount="1" deletionRule="No Action" destinationEntity="Order" inverseName="invoice" inverseEntity="Order"/>
        </entity>
        """

    @Test("a versioned bundle: the current version, named after the bundle, numbered in Xcode's order; every type, rule, index and relationship read")
    func readsABundle() throws {
        let (folder, url) = try Self.bundle(Self.shop)
        defer { withExtendedLifetime(folder) {} }
        let model = try ManagedObjectModel(contentsOf: url)
        #expect(model.name == "Shop" && model.version == 2)
        #expect(model.entities.map(\.name) == ["Customer", "Order", "Invoice"])
        let customer = try #require(model.entity(named: "Customer"))
        #expect(customer.renamingIdentifier == "Client")
        #expect(customer.attributes.map(\.type) == [.string, .uuid, .date, .boolean, .uri, .binary])
        let email = customer.attributes[0]
        #expect(!email.isOptional && email.minLength == 3 && email.maxLength == 254 && email.pattern == ".+@.+")
        #expect(customer.attributes[2].isOptional && customer.attributes[2].defaultValue == .date(Date(timeIntervalSinceReferenceDate: 0)))
        #expect(customer.attributes[3].defaultValue == .boolean(false))
        #expect(customer.uniquenessConstraints == [["email"]] && customer.indexes == [["joined", "vip"]])
        // Not optional="YES": at least one order, as Core Data reads a non-optional to-many.
        #expect(customer.relationships == [RelationshipDescription(name: "orders", destination: "Order", inverse: "customer", isToMany: true,
                                                                   deleteRule: .cascade, minCount: 1)])
        let order = try #require(model.entity(named: "Order"))
        #expect(order.attributes.map(\.type) == [.integer64, .integer16, .integer32, .decimal, .double, .float])
        #expect(order.attributes[1].minValue == .integer(1) && order.attributes[1].maxValue == .integer(99) && order.attributes[1].defaultValue == .integer(1))
        #expect(order.attributes[3].defaultValue == .decimal(Decimal(string: "0.10")!))
        #expect(order.attributes[4].minValue == .double(0) && order.attributes[5].renamingIdentifier == "share")
        #expect(order.indexes == [["number"], ["customer", "number"]])
        #expect(order.relationships.map(\.deleteRule) == [.nullify, .deny] && order.relationships.map(\.isOptional) == [true, true])
        #expect(model.entity(named: "Invoice")?.relationships.first.map { ($0.deleteRule, $0.isOptional) } ?? (.nullify, true) == (.noAction, false))
        // The other version, opened as a model of its own.
        let first = try ManagedObjectModel(contentsOf: url.appendingPathComponent("Shop.xcdatamodel"))
        #expect(first.name == "Shop" && first.version == 1 && first.entities.map(\.name) == ["Order"])
    }

    @Test("a store made from version 1 of a bundle migrates to its current version")
    func migratesBetweenVersions() throws {
        let (folder, url) = try Self.bundle(Self.shop)
        defer { withExtendedLifetime(folder) {} }
        let store = TemporaryStore()
        let v1 = try ManagedObjectModel(contentsOf: url.appendingPathComponent("Shop.xcdatamodel"))
        let first = try PersistentContainer(model: v1, store: .sqlite(store.url))
        try first.viewContext.performAndWait {
            first.viewContext.insertNewObject(forEntityName: "Order").setValue(Int64(7), forKey: "number")
            try first.viewContext.save()
        }
        let current = try PersistentContainer(model: try ManagedObjectModel(contentsOf: url), store: .sqlite(store.url))
        #expect(current.coordinator.appliedMigration.steps.contains(.addEntity("Customer")))
        let quantity = try current.viewContext.performAndWait {
            try current.viewContext.fetch(FetchRequest(entityName: "Order")).first?.value("quantity", as: Int64.self)
        }
        #expect(quantity == 1, "existing orders take the new attribute's default")
    }

    @Test("what has no meaning here, or is not supported yet, is refused naming entity, property and reason")
    func refusals() throws {
        let (folder, url) = try Self.bundle("""
            <entity name="Base" isAbstract="YES" syncable="YES">
                <attribute name="colors" optional="YES" attributeType="Transformable" valueTransformerName="ColorsTransformer"/>
                <attribute name="scratch" optional="YES" transient="YES" attributeType="String"/>
                <attribute name="odd" optional="YES" attributeType="Undefined"/>
                <fetchedProperty name="recent" optional="YES"/>
            </entity>
            <entity name="Leaf" parentEntity="Base" syncable="YES">
                <relationship name="items" toMany="YES" ordered="YES" deletionRule="Nullify" destinationEntity="Item" inverseName="leaf" inverseEntity="Item"/>
                <relationship name="lonely" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Item"/>
            </entity>
            <entity name="Item" syncable="YES">
                <relationship name="leaf" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Leaf" inverseName="items" inverseEntity="Leaf"/>
                <relationship name="many" toMany="YES" minCount="x" deletionRule="Nullify" destinationEntity="Item" inverseName="many" inverseEntity="Item"/>
            </entity>
            <configuration name="Cloud"/>
            <configuration name="Local">
                <memberEntity name="Item"/>
            </configuration>
            """)
        defer { withExtendedLifetime(folder) {} }
        var problems: [String] = []
        do {
            _ = try ManagedObjectModel(contentsOf: url)
            Issue.record("the model was accepted")
        } catch {
            problems = error.problems.map(\.description)
        }
        // The Transformable and the transient attribute are read (CoreDataModelFormsTests), and
        // a fetched property with its fetch request (this one has none);
        // one configuration alone would be too, two that split the entities are not.
        let expected = [
            "Base.odd: attribute type Undefined is not supported",
            "Base.recent: a fetched property needs a name and a fetch request naming its entity",
            "Item.many: minCount \"x\" is not a whole number, 0 or more",
            "configurations Cloud, Local put entities in different stores",
        ]
        #expect(problems.count == expected.count, "\(problems)")
        for (found, start) in zip(problems, expected) { #expect(found.hasPrefix(start), "\(found)") }
    }

    @Test("a bundle without .xccurrentversion opens its only version; with several, it is an error that says so")
    func currentVersion() throws {
        let (folder, url) = try Self.bundle(Self.shop, current: nil)
        defer { withExtendedLifetime(folder) {} }
        #expect {
            _ = try ManagedObjectModel(contentsOf: url)
        } throws: { error in
            (error as? ModelError)?.description.contains("2 versions and no .xccurrentversion") ?? false
        }
        try FileManager.default.removeItem(at: url.appendingPathComponent("Shop.xcdatamodel"))
        #expect(try ManagedObjectModel(contentsOf: url).entities.count == 3)
    }

    @Test("round trip: Xcode's format to a model, to Xcode's format and to JSON, and back, gives the same model")
    func roundTrip() throws {
        let (folder, url) = try Self.bundle(Self.shop)
        defer { withExtendedLifetime(folder) {} }
        let model = try ManagedObjectModel(contentsOf: url)
        let written = folder.directory.appendingPathComponent("Shop.xcdatamodel")
        try FileManager.default.createDirectory(at: written, withIntermediateDirectories: true)
        try Data(try model.xcodeModelContents().utf8).write(to: written.appendingPathComponent("contents"))
        let again = try ManagedObjectModel(contentsOf: written)
        #expect(again.entities == model.entities)
        #expect(again.name == model.name && again.version == model.version && again.versionHash == model.versionHash)
        let json = folder.directory.appendingPathComponent("shop.json")
        try Data(model.jsonValue.serialized().utf8).write(to: json)
        let fromJSON = try ManagedObjectModel(contentsOf: json)
        #expect(fromJSON.versionHash == model.versionHash && fromJSON.entities == model.entities)
        // The task tracker, written in JSON, goes through Xcode's format unchanged too.
        let tracker = ManagedObjectModel.taskTracker()
        let trackerFolder = folder.directory.appendingPathComponent("Tracker.xcdatamodel")
        try FileManager.default.createDirectory(at: trackerFolder, withIntermediateDirectories: true)
        try Data(try tracker.xcodeModelContents().utf8).write(to: trackerFolder.appendingPathComponent("contents"))
        #expect(try ManagedObjectModel(contentsOf: trackerFolder).versionHash == tracker.versionHash)
    }

    @Test("what Xcode's format cannot hold is refused when writing it, not left out")
    func writeRefusal() throws {
        let model = try ManagedObjectModel(name: "Blobs", entities: [EntityDescription(name: "Blob", attributes: [
            AttributeDescription(name: "data", type: .binary, defaultValue: .binary(Data([1, 2]))),
        ])])
        #expect(throws: ModelError.self) { _ = try model.xcodeModelContents() }
    }

    @Test("the demo model ships as models/Tracker.xcdatamodeld and models/tracker.json, both the built-in model")
    func shippedDemoModel() throws {
        let models = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../models")
        let builtIn = ManagedObjectModel.taskTracker()
        for file in ["Tracker.xcdatamodeld", "tracker.json"] {
            let model = try ManagedObjectModel(contentsOf: models.appendingPathComponent(file))
            #expect(model.versionHash == builtIn.versionHash && model.name == builtIn.name && model.version == builtIn.version, "\(file)")
        }
    }

    // MARK: Real models (../shared/coredata-models, when present)

    static let realModels = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../../shared/coredata-models").standardizedFileURL

    @Test("real models from public apps: Kiwix's, Moody's and Mogenerator's are read whole, Transformables, transients and stored fetch requests with them",
          .enabled(if: FileManager.default.fileExists(atPath: realModels.path)))
    func realModelsFromApps() throws {
        let kiwix = try ManagedObjectModel(contentsOf: Self.realModels.appendingPathComponent("Kiwix.xcdatamodeld"))
        #expect(kiwix.entities.map(\.name) == ["Bookmark", "DownloadTask", "Tab", "ZimFile"])
        #expect(kiwix.entity(named: "ZimFile")?.attributes.first { $0.name == "isMissing" }?.defaultValue == .boolean(false))
        let container = try PersistentContainer(model: kiwix, store: .inMemory)
        try container.viewContext.performAndWait {
            let context = container.viewContext
            let file = context.insertNewObject(forEntityName: "ZimFile")
            for (key, value) in [("created", AttributeValue.date(Date())), ("fileDescription", .string("Wikipedia")), ("fileID", .uuid(UUID())),
                                 ("languageCode", .string("en")), ("name", .string("wikipedia_en")), ("persistentID", .string("p"))] {
                file.setAttributeValue(value, forKey: key)
            }
            let bookmark = context.insertNewObject(forEntityName: "Bookmark")
            bookmark.setAttributeValue(.uri(URL(string: "https://example.org/A")!), forKey: "articleURL")
            bookmark.setAttributeValue(.date(Date()), forKey: "created")
            bookmark.setAttributeValue(.string("A"), forKey: "title")
            bookmark.setObject(file, forKey: "zimFile")
            // ZimFile.tabs is a non-optional to-many: at least one tab.
            let tab = context.insertNewObject(forEntityName: "Tab")
            tab.setAttributeValue(.date(Date()), forKey: "created")
            tab.setAttributeValue(.date(Date()), forKey: "lastOpened")
            tab.setObject(file, forKey: "zimFile")
            try context.save()
        }
        let bookmarks = try container.viewContext.performAndWait { try container.viewContext.count(for: FetchRequest(entityName: "Bookmark")) }
        #expect(bookmarks == 1)

        // Moody: its one Transformable is read as its transformer's bytes, with no flag; the
        // abstract Region's sub-entities read whole.
        let moodyURL = Self.realModels.appendingPathComponent("Moody.xcdatamodeld")
        let moody = try ManagedObjectModel(contentsOf: moodyURL)
        #expect(moody.entity(named: "Region")?.isAbstract == true && moody.entity(named: "Country")?.parent == "Region")
        #expect(moody.entity(named: "Continent")?.attributes.map(\.name).prefix(5) == ["markedForDeletionDate", "numberOfMoods", "numericISO3166Code", "uniquenessDummy", "updatedAt"])
        #expect(moody.entity(named: "Mood")?.attribute(named: "colors").map { ($0.type, $0.valueTransformerName) } ?? (.string, nil) == (.binary, "ColorsTransformer"))
        // Through Xcode's format and the JSON format and back: the same model.
        let folder = TemporaryStore()
        let written = folder.directory.appendingPathComponent("Again.xcdatamodel")
        try FileManager.default.createDirectory(at: written, withIntermediateDirectories: true)
        try Data(try moody.xcodeModelContents().utf8).write(to: written.appendingPathComponent("contents"))
        #expect(try ManagedObjectModel(contentsOf: written).authoredEntities == moody.authoredEntities)
        #expect(try ManagedObjectModel(json: moody.jsonValue).versionHash == moody.versionHash)

        // Mogenerator's test model: read whole, its transient, Transformable and five stored
        // fetch requests with it (served over HTTP in XcodeModelHTTPTests).
        let mogenerator = try ManagedObjectModel(contentsOf: Self.realModels.appendingPathComponent("Mogenerator.xcdatamodel"))
        #expect(mogenerator.transientAttributes(ofEntity: "Parent").map(\.name) == ["myInt16Transient"])
        #expect(mogenerator.entity(named: "Parent")?.attribute(named: "myInt16Transient") == nil)
        #expect(mogenerator.entity(named: "Parent")?.attribute(named: "myTransformableSansClassName")?.valueTransformerName == "NSKeyedUnarchiveFromData")
        #expect(mogenerator.fetchRequestTemplates.map(\.name) == ["allHumans", "byHumanName", "byParent", "byParentName", "oneByHumanName"])
    }

    @Test("DuckDuckGo's Bookmarks (six versions, ordered relationships): children in their order; versions 1 to 3, 3 to 4 (a to-one made to-many) and 4 to 6 migrate",
          .enabled(if: FileManager.default.fileExists(atPath: realModels.path)))
    func bookmarksModel() throws {
        let bundle = Self.realModels.appendingPathComponent("Bookmarks.xcdatamodeld")
        let current = try ManagedObjectModel(contentsOf: bundle)
        #expect(current.name == "Bookmarks" && current.version == 6)
        let entity = try #require(current.entity(named: "BookmarkEntity"))
        #expect(entity.relationships.filter(\.isOrdered).map(\.name) == ["children", "favorites"])
        // Through Xcode's format and the JSON format and back: the same model, order flags included.
        let folder = TemporaryStore()
        let written = folder.directory.appendingPathComponent("Again.xcdatamodel")
        try FileManager.default.createDirectory(at: written, withIntermediateDirectories: true)
        try Data(try current.xcodeModelContents().utf8).write(to: written.appendingPathComponent("contents"))
        #expect(try ManagedObjectModel(contentsOf: written).entities == current.entities)
        #expect(try ManagedObjectModel(json: current.jsonValue).versionHash == current.versionHash)
        func version(_ name: String) throws -> ManagedObjectModel { try ManagedObjectModel(contentsOf: bundle.appendingPathComponent(name)) }

        /// Saves a folder whose children are in the reverse of their key order; returns the folder.
        func seed(_ container: PersistentContainer, flag: String?) throws -> ManagedObjectID {
            try container.viewContext.performAndWait {
                let context = container.viewContext
                func bookmark(_ title: String, folder: Bool) -> ManagedObject {
                    let object = context.insertNewObject(forEntityName: "BookmarkEntity")
                    object.setValue(title, forKey: "title")
                    object.setValue(UUID().uuidString, forKey: "uuid")
                    object.setValue(folder, forKey: "isFolder")
                    if let flag { object.setValue(false, forKey: flag) }
                    return object
                }
                let folder = bookmark("root", folder: true)
                folder.setObjects(["c", "b", "a"].map { bookmark($0, folder: false) }, forKey: "children")
                try context.save()
                return folder.objectID
            }
        }
        func childTitles(_ container: PersistentContainer, _ folder: ManagedObjectID) throws -> [String] {
            let context = container.newBackgroundContext()
            return try context.performAndWait {
                try context.existingObject(with: folder).objects(forKey: "children").map { $0.value("title", as: String.self) ?? "?" }
            }
        }
        for (from, to, flag) in [("BookmarksModel.xcdatamodel", "BookmarksModel 3.xcdatamodel", "isFavorite"),
                                 ("BookmarksModel 4.xcdatamodel", "BookmarksModel 6.xcdatamodel", "isPendingDeletion")] {
            let store = TemporaryStore()
            let folder = try seed(try PersistentContainer(model: try version(from), store: .sqlite(store.url)), flag: flag)
            let migrated = try PersistentContainer(model: try version(to), store: .sqlite(store.url))
            #expect(!migrated.coordinator.appliedMigration.steps.isEmpty, "\(from) to \(to)")
            #expect(try childTitles(migrated, folder) == ["c", "b", "a"], "\(from) to \(to): the order survives")
        }
        // Version 4 turned the to-one favoriteFolder into the to-many favoriteFolders, whose
        // inverse is the ordered favorites: inferred, as Core Data infers it. The links move
        // into a link list, the favorites' order with them.
        /// A store of version 3: the root folder's children c, b, a, and a favorites folder
        /// holding a and c, in that order.
        func seedVersion3(_ url: URL) throws -> (root: ManagedObjectID, favorites: ManagedObjectID) {
            let container = try PersistentContainer(model: try version("BookmarksModel 3.xcdatamodel"), store: .sqlite(url))
            let root = try seed(container, flag: nil)
            return try container.viewContext.performAndWait {
                let context = container.viewContext
                let favorites = context.insertNewObject(forEntityName: "BookmarkEntity")
                favorites.setValue("favorites", forKey: "title")
                favorites.setValue(UUID().uuidString, forKey: "uuid")
                favorites.setValue(true, forKey: "isFolder")
                let children = try context.existingObject(with: root).objects(forKey: "children")  // c, b, a
                favorites.setObjects([children[2], children[0]], forKey: "favorites")  // a, then c: not their key order
                try context.save()
                return (root, favorites.objectID)
            }
        }
        let store = TemporaryStore()
        let (root, favoritesFolder) = try seedVersion3(store.url)
        /// The favorites folder's favorites, in order, and each child's favorite folders (by title).
        func favorites(_ container: PersistentContainer, root: ManagedObjectID, folder: ManagedObjectID) throws -> (titles: [String], folders: [String: [String]]) {
            let context = container.newBackgroundContext()
            return try context.performAndWait {
                let titles = try context.existingObject(with: folder).objects(forKey: "favorites").map { $0.value("title", as: String.self) ?? "?" }
                var folders: [String: [String]] = [:]
                for child in try context.existingObject(with: root).objects(forKey: "children") {
                    folders[child.value("title", as: String.self) ?? "?"] = child.objects(forKey: "favoriteFolders").map { $0.value("title", as: String.self) ?? "?" }
                }
                return (titles, folders)
            }
        }
        let version4 = try PersistentContainer(model: try version("BookmarksModel 4.xcdatamodel"), store: .sqlite(store.url))
        #expect(version4.coordinator.appliedMigration.steps.contains(
            .makeToMany(entity: "BookmarkEntity", relationship: "favoriteFolders", inverseEntity: "BookmarkEntity", inverse: "favorites")),
            "\(version4.coordinator.appliedMigration.steps)")
        let moved = try favorites(version4, root: root, folder: favoritesFolder)
        #expect(moved.titles == ["a", "c"], "the favorites' order moved with the links")
        #expect(moved.folders == ["a": ["favorites"], "b": [], "c": ["favorites"]])
        #expect(try childTitles(version4, root) == ["c", "b", "a"])
        #expect(try version4.coordinator.checkIntegrity().isEmpty)
        // A store of version 3 opened with the current version (6) takes the same step on the way.
        let straight = TemporaryStore()
        let seeded = try seedVersion3(straight.url)
        let version6 = try PersistentContainer(model: current, store: .sqlite(straight.url))
        #expect(try favorites(version6, root: seeded.root, folder: seeded.favorites).titles == ["a", "c"])
        #expect(try childTitles(version6, seeded.root) == ["c", "b", "a"])
    }
}
