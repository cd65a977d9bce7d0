import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore

/// The forms of an Xcode-written model that a server must take as Core Data takes them, read
/// from `Tests/CoreDataModels/Notebook.xcdatamodeld`: defaults written as YES and NO, transient
/// attributes, Transformables, and stored fetch requests with `$VARIABLES`.
@Suite("Core Data model forms: YES defaults, transients, Transformables, fetch request templates")
struct CoreDataModelFormsTests {
    static let notebookURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../CoreDataModels/Notebook.xcdatamodeld").standardizedFileURL

    static func notebook() throws -> ManagedObjectModel { try ManagedObjectModel(contentsOf: notebookURL) }

    @Test("YES and NO are the default of every number type, as Core Data reads them; 2.5e1 and a date in seconds since 2001 too")
    func yesDefaults() throws {
        let note = try #require(try Self.notebook().entity(named: "Note"))
        func value(_ name: String) -> AttributeValue? { note.attribute(named: name)?.defaultValue }
        #expect(value("small") == .integer(1))
        #expect(value("priority") == .integer(1))
        #expect(value("big") == .integer(1))
        #expect(value("archived") == .integer(0))
        #expect(value("amount") == .decimal(1))
        #expect(value("weight") == .double(1))
        #expect(value("ratio") == .float(1))
        #expect(value("pinned") == .boolean(true))
        #expect(value("scale") == .double(25))
        #expect(value("created") == .date(Date(timeIntervalSinceReferenceDate: 704_721_600)))
        // And on a new object, through the store.
        let container = try PersistentContainer(model: try Self.notebook(), store: .inMemory)
        let saved = try container.viewContext.performAndWait {
            let object = container.viewContext.insertNewObject(forEntityName: "Note")
            try container.viewContext.save()
            return object.objectID
        }
        let reader = container.newBackgroundContext()
        let stored = reader.performAndWait { ["small", "priority", "big", "weight", "ratio"].map { reader.object(with: saved).attributeValue(forKey: $0) } }
        #expect(stored == [.integer(1), .integer(1), .integer(1), .double(1), .float(1)])
    }

    @Test("a transient attribute: in the model, never in a table, the version hash or the stored JSON; held on its object, cleared by a refresh")
    func transientAttribute() throws {
        let model = try Self.notebook()
        #expect(model.transientAttributes(ofEntity: "Note").map(\.name) == ["draftText", "isSelected"])
        #expect(model.entity(named: "Note")?.attribute(named: "draftText") == nil, "not among the stored attributes")
        let json = model.jsonValue.serialized()
        #expect(json.contains(#""name":"draftText","type":"string","optional":true,"default":"draft","transient":true"#), "\(json)")
        // The same model without its transients (and fetched properties) has the same version
        // hash: nothing stored differs.
        var plain = model.authoredEntities
        plain[1].attributes.removeAll(where: \.isTransient)
        plain[0].fetchedProperties = []
        #expect(try ManagedObjectModel(name: model.name, version: model.version, entities: plain,
                                       fetchRequestTemplates: model.fetchRequestTemplates).versionHash == model.versionHash)

        let store = TemporaryStore()
        let container = try PersistentContainer(model: model, store: .path(store.url.path))
        let context = container.viewContext
        let id = try context.performAndWait {
            let note = context.insertNewObject(forEntityName: "Note")
            // An inserted object starts at the transient's default, and keeps what is set.
            #expect(note.value("draftText", as: String.self) == "draft")
            #expect(note["isSelected"] == nil)
            note["isSelected"] = true
            note.setValue("typing", forKey: "draftText")
            try context.save()
            #expect(note.value("draftText", as: String.self) == "typing" && note.value("isSelected", as: Bool.self) == true)
            #expect(!note.hasChanges, "a transient change is nothing to save")
            // A merge keeps them; a refresh that turns it into a fault clears them.
            context.refresh(note, mergeChanges: true)
            #expect(note.value("isSelected", as: Bool.self) == true)
            context.refresh(note, mergeChanges: false)
            #expect(note["isSelected"] == nil && note["draftText"] == nil)
            return note.objectID
        }
        // Another context's object starts without them: they were never stored.
        let other = container.newBackgroundContext()
        let fetched = other.performAndWait { other.object(with: id).attributeValue(forKey: "draftText") }
        #expect(fetched == .null)
        if StockSQLite.isInstalled {
            let columns = try StockSQLite.run(store.url, "SELECT name FROM pragma_table_info('Note') ORDER BY name").lines
            #expect(columns.contains("title") && !columns.contains("draftText") && !columns.contains("isSelected"), "\(columns)")
        }
        // A store made without the transients opens with them, and one made with them without:
        // no migration, no table changed.
        let plainModel = try ManagedObjectModel(name: model.name, version: model.version, entities: plain)
        let reopened = try PersistentContainer(model: plainModel, store: .path(store.url.path))
        #expect(reopened.coordinator.appliedMigration.isEmpty)
        let count = try reopened.viewContext.performAndWait { try reopened.viewContext.count(for: FetchRequest(entityName: "Note")) }
        #expect(count == 1)
    }

    @Test("Transformables are the bytes their transformer wrote, with its name (NSKeyedUnarchiveFromData when none is named), round-tripping through the store")
    func transformables() throws {
        let model = try Self.notebook()
        let note = try #require(model.entity(named: "Note"))
        #expect(note.attribute(named: "color").map { ($0.type, $0.valueTransformerName) } ?? (.string, nil) == (.binary, "ColorTransformer"))
        #expect(note.attribute(named: "keywords")?.valueTransformerName == "NSSecureUnarchiveFromData")
        #expect(note.attribute(named: "legacy")?.valueTransformerName == "NSKeyedUnarchiveFromData")
        let archived = Data([0x62, 0x70, 0x6c, 0x69, 0x73, 0x74, 0x30, 0x30, 0x00, 0xff])  // "bplist00" and two bytes
        let store = TemporaryStore()
        let container = try PersistentContainer(model: model, store: .path(store.url.path))
        let id = try container.viewContext.performAndWait {
            let object = container.viewContext.insertNewObject(forEntityName: "Note")
            object.setValue(archived, forKey: "keywords")
            try container.viewContext.save()
            return object.objectID
        }
        let reader = container.newBackgroundContext()
        #expect(reader.performAndWait { reader.object(with: id).value("keywords", as: Data.self) } == archived)
    }

    @Test("fetch request templates: read with their variables, fetched with values as Core Data's API names it, a missing value an error naming it")
    func templates() throws {
        let model = try Self.notebook()
        #expect(model.fetchRequestTemplates.map(\.name) == ["notesInFolder", "notesTitled", "pinnedNotes"])
        #expect(model.fetchRequestTemplatesByName["notesTitled"]?.fetchLimit == 10)
        #expect(model.variables(ofFetchRequestTemplate: "notesInFolder")?.map { "\($0.name):\($0.typeName ?? "-")" }
                == [#"FOLDER:ID of a Folder (such as "Folder/7")"#, "MIN_PRIORITY:integer32"])
        #expect(model.variables(ofFetchRequestTemplate: "notesTitled")?.first?.isList == true)
        #expect(model.fetchRequestTemplate(forName: "nope") == nil)

        let container = try PersistentContainer(model: model, store: .inMemory)
        let context = container.viewContext
        try context.performAndWait {
            let work = context.insertNewObject(forEntityName: "Folder"), home = context.insertNewObject(forEntityName: "Folder")
            work.setValue("Work", forKey: "name")
            home.setValue("Home", forKey: "name")
            for (title, priority, folder) in [("a", 1, work), ("b", 3, work), ("c", 5, home)] as [(String, Int32, ManagedObject)] {
                let note = context.insertNewObject(forEntityName: "Note")
                note.setValue(title, forKey: "title")
                note.setValue(priority, forKey: "priority")
                note.setObject(folder, forKey: "folder")
            }
            try context.save()
            func titles(_ request: FetchRequest?) throws -> [String] {
                var request = try #require(request)
                request.sortDescriptors = [ObjectSortDescriptor("title")]
                return try context.fetch(request).compactMap { $0.value("title", as: String.self) }
            }
            #expect(try titles(model.fetchRequestFromTemplate(withName: "notesInFolder", substitutionVariables: ["FOLDER": work.objectID, "MIN_PRIORITY": 2])) == ["b"])
            #expect(try titles(model.fetchRequestFromTemplate(withName: "notesTitled", substitutionVariables: ["TITLES": ["a", "c", "z"]])) == ["a", "c"])
            #expect(try titles(model.fetchRequestFromTemplate(withName: "pinnedNotes", substitutionVariables: [:])) == ["a", "b", "c"])
            #expect(throws: FetchTemplateError.missingVariable(template: "notesInFolder", variable: "MIN_PRIORITY")) {
                _ = try model.fetchRequestFromTemplate(withName: "notesInFolder", substitutionVariables: ["FOLDER": work.objectID])
            }
            #expect(try model.fetchRequestFromTemplate(withName: "nope", substitutionVariables: [:]) == nil)
            // Values given as text (what the server does with var.NAME), typed by what they meet.
            let fromText = try model.fetchRequestFromTemplate(withName: "notesInFolder", variableTexts: ["FOLDER": "\(work.objectID)", "MIN_PRIORITY": "1"],
                                                              storeIdentifier: container.coordinator.storeIdentifier)
            #expect(try titles(fromText) == ["a", "b"])
            #expect(throws: FetchTemplateError.self) {
                _ = try model.fetchRequestFromTemplate(withName: "notesInFolder", variableTexts: ["FOLDER": "Note/1", "MIN_PRIORITY": "1"],
                                                       storeIdentifier: container.coordinator.storeIdentifier)
            }
            #expect(throws: FetchTemplateError.self) {
                _ = try model.fetchRequestFromTemplate(withName: "notesInFolder", variableTexts: ["FOLDER": "\(work.objectID)", "MIN_PRIORITY": "high"],
                                                       storeIdentifier: container.coordinator.storeIdentifier)
            }
        }
    }

    @Test("a template naming an unknown entity or key path, or with a predicate that does not parse, is refused by name")
    func templateRefusals() throws {
        let model = try Self.notebook()
        for (template, expected) in [
            (FetchRequestTemplate(name: "x", entityName: "Nope"), "fetch request template x: unknown entity 'Nope'"),
            (FetchRequestTemplate(name: "y", entityName: "Note", predicateFormat: "colour == $C"), "Note: fetch request template y: unknown key path 'colour' on Note"),
            (FetchRequestTemplate(name: "z", entityName: "Note", predicateFormat: "title ==="), "Note: fetch request template z: its predicate title === is not valid"),
        ] {
            #expect {
                _ = try ManagedObjectModel(name: "M", entities: model.authoredEntities, fetchRequestTemplates: [template])
            } throws: { error in
                (error as? ModelError)?.problems.first?.description.hasPrefix(expected) ?? false
            }
        }
    }

    @Test("fetched properties: answered as the fetch they are, $FETCH_SOURCE the object asked and $FETCH_SOURCE.name its current value")
    func fetchedProperties() throws {
        let model = try Self.notebook()
        #expect(model.entity(named: "Folder")?.fetchedProperties.map(\.name) == ["namesakes", "urgentNotes"])
        let container = try PersistentContainer(model: model, store: .inMemory)
        let context = container.viewContext
        try context.performAndWait {
            let work = context.insertNewObject(forEntityName: "Folder"), home = context.insertNewObject(forEntityName: "Folder")
            work.setValue("Work", forKey: "name")
            home.setValue("Home", forKey: "name")
            for (title, priority, folder) in [("a", 1, work), ("b", 3, work), ("c", 5, home), ("Home", 0, work), ("Work", 4, home)] as [(String, Int32, ManagedObject)] {
                let note = context.insertNewObject(forEntityName: "Note")
                note.setValue(title, forKey: "title")
                note.setValue(priority, forKey: "priority")
                note.setObject(folder, forKey: "folder")
            }
            try context.save()
            func titles(_ objects: [ManagedObject]) -> [String] { objects.compactMap { $0.value("title", as: String.self) }.sorted() }
            #expect(titles(try context.fetch(fetchedProperty: "urgentNotes", of: work)) == ["b"])
            #expect(titles(try context.fetch(fetchedProperty: "urgentNotes", of: home)) == ["Work", "c"])
            #expect(titles(try context.fetch(fetchedProperty: "namesakes", of: home)) == ["Home"])
            home.setValue("a", forKey: "name")  // unsaved: the value the object holds now
            #expect(titles(try context.fetch(fetchedProperty: "namesakes", of: home)) == ["a"])
            #expect(throws: FetchError.unknownKeyPath("nope", entity: "Folder")) { _ = try context.fetch(fetchedProperty: "nope", of: home) }
        }
    }

    @Test("a fetched property with another variable than $FETCH_SOURCE, or a key path its entities do not have, is refused by name")
    func fetchedPropertyRefusals() throws {
        let model = try Self.notebook()
        for (predicate, expected) in [("folder == $FETCHED_PROPERTY", "$FETCHED_PROPERTY: a fetched property's predicate takes $FETCH_SOURCE only"),
                                      ("title == $FETCH_SOURCE.colour", "unknown key path 'colour' on Folder"),
                                      ("colour == $FETCH_SOURCE", "unknown key path 'colour' on Note")] {
            var entities = model.authoredEntities
            entities[0].fetchedProperties = [FetchedPropertyDescription(name: "odd", destinationEntityName: "Note", predicateFormat: predicate)]
            #expect {
                _ = try ManagedObjectModel(name: "M", entities: entities)
            } throws: { error in
                let text = (error as? ModelError)?.problems.first?.description ?? ""
                return text.hasPrefix("Folder.odd: its predicate \(predicate) cannot be used") && text.contains(expected)
            }
        }
    }

    @Test("both formats round-trip transients, Transformables and templates: Xcode's to JSON, JSON to Xcode's, and back")
    func formatsRoundTrip() throws {
        let model = try Self.notebook()
        let json = try ManagedObjectModel(json: model.jsonValue)
        #expect(json.authoredEntities == model.authoredEntities && json.fetchRequestTemplates == model.fetchRequestTemplates)
        let folder = TemporaryStore()
        let written = folder.directory.appendingPathComponent("Again.xcdatamodel")
        try FileManager.default.createDirectory(at: written, withIntermediateDirectories: true)
        try Data(try json.xcodeModelContents().utf8).write(to: written.appendingPathComponent("contents"))
        let again = try ManagedObjectModel(contentsOf: written)
        #expect(again.authoredEntities == model.authoredEntities && again.fetchRequestTemplates == model.fetchRequestTemplates)
        #expect(try ManagedObjectModel(json: again.jsonValue).fetchRequestTemplates == model.fetchRequestTemplates)
    }

    static let realModels = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../../shared/coredata-models").standardizedFileURL

    @Test("every shared model of a public app converts to JSON and to Xcode's format and back as the same model (what `model convert` writes)",
          .enabled(if: FileManager.default.fileExists(atPath: realModels.path)),
          arguments: ["Kiwix.xcdatamodeld", "Bookmarks.xcdatamodeld", "Moody.xcdatamodeld", "Mogenerator.xcdatamodel"])
    func sharedModelsConvert(_ name: String) throws {
        let model = try ManagedObjectModel(contentsOf: Self.realModels.appendingPathComponent(name))
        let folder = TemporaryStore()
        let json = folder.directory.appendingPathComponent("model.json")
        try Data(model.jsonValue.serialized().utf8).write(to: json)
        let fromJSON = try ManagedObjectModel(contentsOf: json)
        #expect(fromJSON.authoredEntities == model.authoredEntities && fromJSON.fetchRequestTemplates == model.fetchRequestTemplates)
        #expect(fromJSON.versionHash == model.versionHash)
        let written = folder.directory.appendingPathComponent("\(model.name).xcdatamodel")
        try FileManager.default.createDirectory(at: written, withIntermediateDirectories: true)
        try Data(try fromJSON.xcodeModelContents().utf8).write(to: written.appendingPathComponent("contents"))
        let back = try ManagedObjectModel(contentsOf: written)
        #expect(back.authoredEntities == model.authoredEntities && back.fetchRequestTemplates == model.fetchRequestTemplates)
    }
}
