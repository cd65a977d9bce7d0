import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore

/// Relationships whose destination is a parent entity (Core Data allows them): a folder's
/// items are notes and links; a tag's items too; a note's `related` is any item. Keys are
/// shared across a hierarchy, so a stored key names one object and each destination comes
/// back under its own entity: in a fault, a prefetch, a stored row, a conflict, a fetch's
/// predicate, the history, and after deletes. Every store runs it.
@Suite("Relationships to a parent entity")
struct RelationshipToParentTests {
    static let model: ManagedObjectModel = {
        do {
            return try ManagedObjectModel(name: "Shelf", entities: [
                EntityDescription(name: "Folder", attributes: [AttributeDescription(name: "name", type: .string)], relationships: [
                    RelationshipDescription(name: "items", destination: "Item", inverse: "folder", isToMany: true,
                                            deleteRule: .cascade, isOrdered: true),
                    // One-way, to a concrete parent (Link) whose sub-entity is Video.
                    RelationshipDescription(name: "featured", destination: "Link", inverse: nil),
                ]),
                EntityDescription(name: "Item", attributes: [AttributeDescription(name: "title", type: .string)], relationships: [
                    RelationshipDescription(name: "folder", destination: "Folder", inverse: "items"),
                    RelationshipDescription(name: "tags", destination: "Tag", inverse: "items", isToMany: true),
                    RelationshipDescription(name: "related", destination: "Item", inverse: nil),
                ], isAbstract: true),
                EntityDescription(name: "Note", attributes: [AttributeDescription(name: "body", type: .string)], parent: "Item"),
                EntityDescription(name: "Link", attributes: [AttributeDescription(name: "url", type: .string)], parent: "Item"),
                EntityDescription(name: "Video", attributes: [AttributeDescription(name: "seconds", type: .integer64)], parent: "Link"),
                EntityDescription(name: "Tag", attributes: [AttributeDescription(name: "name", type: .string)], relationships: [
                    RelationshipDescription(name: "items", destination: "Item", inverse: "tags", isToMany: true),
                ]),
            ])
        } catch {
            fatalError("the relationship-to-parent test model is invalid: \(error)")
        }
    }()

    struct Seeded {
        let folder: ManagedObjectID
        let tag: ManagedObjectID
        /// By title: n1, l1, v1, n2 (inserted in that order).
        let items: [String: ManagedObjectID]
    }

    /// A folder holding, in this order, v1, n1, l1, n2; a tag on n1 and v1; n2 related to l1;
    /// the folder featuring v1.
    static func seed(_ container: PersistentContainer) throws -> Seeded {
        let context = container.newBackgroundContext(name: "seed")
        return try context.performAndWait {
            let folder = context.insertNewObject(forEntityName: "Folder")
            folder.setValue("inbox", forKey: "name")
            var items: [String: ManagedObject] = [:]
            for (entity, title) in [("Note", "n1"), ("Link", "l1"), ("Video", "v1"), ("Note", "n2")] {
                let item = context.insertNewObject(forEntityName: entity)
                item.setValue(title, forKey: "title")
                items[title] = item
            }
            folder.setObjects(["v1", "n1", "l1", "n2"].map { items[$0]! }, forKey: "items")
            folder.setObject(items["v1"], forKey: "featured")
            let tag = context.insertNewObject(forEntityName: "Tag")
            tag.setValue("red", forKey: "name")
            tag.setObjects([items["n1"]!, items["v1"]!], forKey: "items")
            items["n2"]!.setObject(items["l1"], forKey: "related")
            try context.save()
            return Seeded(folder: folder.objectID, tag: tag.objectID, items: items.mapValues(\.objectID))
        }
    }

    @Test("both model formats keep a relationship to a parent: JSON and Xcode's, there and back")
    func formatsRoundTrip() throws {
        let model = Self.model
        let json = try ManagedObjectModel(json: model.jsonValue)
        #expect(json.authoredEntities == model.authoredEntities && json.versionHash == model.versionHash)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("to-parent-\(UUID().uuidString)/Shelf.xcdatamodel")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder.deletingLastPathComponent()) }
        try Data(try model.xcodeModelContents().utf8).write(to: folder.appendingPathComponent("contents"))
        let xcode = try ManagedObjectModel(contentsOf: folder)
        #expect(xcode.authoredEntities == model.authoredEntities && xcode.entities == model.entities)
        #expect(xcode.entity(named: "Note")?.relationship(named: "folder")?.destination == "Folder", "inherited by each kind")
    }

    @Test("keys are shared across a hierarchy: one sequence for every kind")
    func keysAreSharedAcrossAHierarchy() throws {
        let container = try Fixtures.container(model: Self.model)
        let seeded = try Self.seed(container)
        let keys = ["n1", "l1", "v1", "n2"].map { seeded.items[$0]!.primaryKey! }
        #expect(Set(keys).count == 4, "no two objects of the hierarchy share a key: \(keys)")
        #expect(keys.max() == 4, "one sequence for the hierarchy: four objects took keys 1 to 4, \(keys)")
        #expect(seeded.items.mapValues(\.entityName) == ["n1": "Note", "l1": "Link", "v1": "Video", "n2": "Note"])
        #expect(try container.coordinator.checkIntegrity().isEmpty)
    }

    @Test("destinations come back under their own entities: faults, prefetch, stored rows, both sides")
    func destinationsKeepTheirEntities() throws {
        let container = try Fixtures.container(model: Self.model)
        let s = try Self.seed(container)
        let ordered = ["v1", "n1", "l1", "n2"].map { s.items[$0]! }
        let reader = container.newBackgroundContext(name: "reader")
        try reader.performAndWait { () throws in
            let folder = try reader.existingObject(with: s.folder)
            #expect(folder.objectIDs(forKey: "items") == ordered, "an ordered to-many across kinds keeps its order")
            #expect(folder.objects(forKey: "items").map { $0.entityName } == ["Video", "Note", "Link", "Note"])
            #expect(folder.objectID(forKey: "featured") == s.items["v1"], "a to-one to a concrete parent holds its sub-entity's object")
            let tag = try reader.existingObject(with: s.tag)
            #expect(Set(tag.objectIDs(forKey: "items")) == [s.items["n1"]!, s.items["v1"]!], "many-to-many to a parent")
            let n2 = try reader.existingObject(with: s.items["n2"]!)
            #expect(n2.objectID(forKey: "related") == s.items["l1"], "a one-way to-one to a parent")
            #expect(n2.objectID(forKey: "folder") == s.folder, "the inverse, inherited by each kind")
            #expect(try reader.existingObject(with: s.items["v1"]!).objectIDs(forKey: "tags") == [s.tag])
            #expect(n2.value("title", as: String.self) == "n2")
        }
        let prefetching = container.newBackgroundContext(name: "prefetch")
        try prefetching.performAndWait {
            var request = FetchRequest(entityName: "Folder")
            request.relationshipKeyPathsForPrefetching = ["items", "featured"]
            let folder = try #require(try prefetching.fetch(request).first)
            #expect(folder.objectIDs(forKey: "items") == ordered, "prefetched the same as faulted")
            #expect(folder.objects(forKey: "items").map { $0.value("title", as: String.self) } == ["v1", "n1", "l1", "n2"])
        }
        let rows = container.newBackgroundContext(name: "rows")
        try rows.performAndWait {
            let read = try rows.withStoredObject(s.folder) { row in
                var items: [ManagedObjectID] = []
                try row.forEachDestination(ofToManyAt: 0) { items.append($0) }
                return (items, try row.destination(ofToOneAt: 1))
            }
            #expect(read?.0 == ordered, "a stored row names each destination by its entity")
            #expect(read?.1 == s.items["v1"])
            let related = try rows.withStoredObject(s.items["n2"]!) { row in try row.destination(ofToOneAt: 2) }
            #expect(related == s.items["l1"])
        }
        #expect(try container.coordinator.checkIntegrity().isEmpty)
    }

    @Test("twin: the kinds a fetch reads for all its rows at once name the same objects as one read per object")
    func kindCacheTwin() throws {
        let container = try Fixtures.container(model: Self.model)
        let s = try Self.seed(container)
        // More notes, each related to an item of another kind; one of them deleted since.
        let writer = container.newBackgroundContext(name: "writer")
        try writer.performAndWait {
            for (n, target) in ["l1", "v1", "n1", "l1", "v1"].enumerated() {
                let note = writer.insertNewObject(forEntityName: "Note")
                note.setValue("extra \(n)", forKey: "title")
                note.setObject(writer.object(with: s.items[target]!), forKey: "related")
            }
            try writer.save()
            writer.delete(try writer.existingObject(with: s.items["v1"]!))
            try writer.save()
        }
        func relatedByTitle(_ context: ManagedObjectContext) throws -> [String: ManagedObjectID?] {
            try context.performAndWait {
                var request = FetchRequest(entityName: "Item")
                request.returnsObjectsAsFaults = false
                return Dictionary(uniqueKeysWithValues: try context.fetch(request).map {
                    ($0.value("title", as: String.self) ?? "?", $0.objectID(forKey: "related"))
                })
            }
        }
        // The plain path: a context reading through the writer keeps no kinds, and asks per object.
        let plain = ManagedObjectContext(coordinator: container.coordinator, name: "plain", readsThroughWriter: true)
        let cached = container.newBackgroundContext(name: "cached")
        let expected = try relatedByTitle(plain)
        #expect(try relatedByTitle(cached) == expected)
        #expect(expected["extra 0"] == s.items["l1"] && expected["extra 2"] == s.items["n1"] && expected["n2"] == s.items["l1"])
        #expect(expected["extra 1"] == .some(nil), "the deleted video left the one-way relationship")
        #expect(try cached.performAndWait { try relatedByTitle(cached) } == expected, "again, from the kinds kept")
    }

    @Test("twin: a store's existing keys of an entity are the keys of the rows it reads")
    func existingKeysTwin() throws {
        let container = try Fixtures.container(model: Self.model)
        let s = try Self.seed(container)
        let asked = s.items.values.compactMap(\.primaryKey) + [s.folder.primaryKey!, 0, -3, 9_000_000_000]
        try container.coordinator.readStore { session in
            for entity in Self.model.schema {
                let plain = Set(try session.rows(of: entity, keys: asked).keys)
                #expect(try session.existingKeys(of: entity, among: asked) == plain, "\(entity.name)")
                #expect(try session.existingKeys(of: entity, among: []).isEmpty)
            }
        }
    }

    @Test("predicates follow a relationship to a parent, in the store's query and in memory alike")
    func predicatesAcrossKinds() throws {
        let container = try Fixtures.container(model: Self.model)
        let s = try Self.seed(container)
        let context = container.newBackgroundContext(name: "fetch")
        for compiles in [true, false] {
            try context.performAndWait { () throws in
                context.storeCompilesPredicates = compiles
                func titles(_ entity: String, _ format: String, _ args: Any...) throws -> Set<String> {
                    let request = FetchRequest(entityName: entity, predicate: try ObjectPredicate(format: format, argumentArray: args))
                    return Set(try context.fetch(request).map { object in
                        object.value(object.entityDescription.attribute(named: "title") == nil ? "name" : "title", as: String.self) ?? "?"
                    })
                }
                #expect(try titles("Folder", "ANY items.title == 'l1'") == ["inbox"])
                #expect(try titles("Folder", "ANY items.title == 'nothing'") == [])
                #expect(try titles("Folder", "featured.title == 'v1'") == ["inbox"], "a to-one to a concrete parent, its sub-entity's row")
                #expect(try titles("Tag", "ANY items.title == 'v1'") == ["red"], "many-to-many to a parent")
                #expect(try titles("Tag", "items.@count == 2") == ["red"])
                #expect(try titles("Note", "related.title == 'l1'") == ["n2"], "a one-way to-one to a parent")
                #expect(try titles("Item", "related == %@", s.items["l1"]!) == ["n2"], "compared with an ID of a sub-entity")
                #expect(try titles("Item", "folder.name == 'inbox' AND ANY tags.name == 'red'") == ["n1", "v1"])
                #expect(try titles("Folder", "featured == %@", s.items["v1"]!) == ["inbox"])
                // An abstract entity has no objects: its "ID" names nothing, whichever kind holds the key.
                let abstract = "Item/\(s.items["l1"]!.primaryKey!)"
                #expect(throws: FetchError.self) { _ = try titles("Note", "related == %@", abstract) }
                #expect(throws: FetchError.self) { _ = try titles("Folder", "featured == %@", "Note/\(s.items["n1"]!.primaryKey!)") }
            }
        }
    }

    @Test("dictionary results and aggregates name a parent's destinations by their entities")
    func dictionariesAndAggregates() throws {
        let container = try Fixtures.container(model: Self.model)
        let s = try Self.seed(container)
        let context = container.newBackgroundContext(name: "values")
        try context.performAndWait { () throws in
            let request = FetchRequest(entityName: "Folder", resultType: .dictionaries, propertiesToFetch: ["name", "featured"])
            let rows = try context.fetchDictionaries(request)
            #expect(rows.count == 1)
            #expect(rows.first?["featured"] == .object(s.items["v1"]!), "a to-one to a concrete parent: its sub-entity's ID")
            let related = try context.fetchDictionaries(FetchRequest(entityName: "Note", predicate: try ObjectPredicate(format: "title == 'n2'"),
                                                                     resultType: .dictionaries, propertiesToFetch: ["related", "folder"]))
            #expect(related.first?["related"] == .object(s.items["l1"]!))
            #expect(related.first?["folder"] == .object(s.folder))
            let groups = try context.aggregate(AggregateRequest(entityName: "Note", properties: [.groupKey("related"), .count()]))
            #expect(Set(groups.compactMap { $0["related"] }) == [.object(nil), .object(s.items["l1"]!)], "grouped by a to-one to a parent")
        }
    }

    @Test("changes from either side keep both sides; deletes cascade and nullify across kinds")
    func changesAndDeletes() throws {
        let container = try Fixtures.container(model: Self.model)
        let s = try Self.seed(container)
        let context = container.newBackgroundContext(name: "writer")
        try context.performAndWait {
            let folder = try context.existingObject(with: s.folder)
            // A new link joins from its own side: it goes last in the ordered relationship.
            let l2 = context.insertNewObject(forEntityName: "Link")
            l2.setValue("l2", forKey: "title")
            l2.setObject(folder, forKey: "folder")
            // A video leaves the tag; the tag gains the link.
            let tag = try context.existingObject(with: s.tag)
            tag.setObjects([context.object(with: s.items["n1"]!), l2], forKey: "items")
            try context.save()
        }
        let reader = container.newBackgroundContext(name: "reader")
        try reader.performAndWait { () throws in
            let folder = try reader.existingObject(with: s.folder)
            #expect(folder.objects(forKey: "items").map { $0.value("title", as: String.self) } == ["v1", "n1", "l1", "n2", "l2"])
            let tag = try reader.existingObject(with: s.tag)
            #expect(Set(tag.objects(forKey: "items").map { $0.value("title", as: String.self) ?? "?" }) == ["n1", "l2"])
            #expect(try reader.existingObject(with: s.items["v1"]!).objectIDs(forKey: "tags").isEmpty)
        }
        // Deleting l1 takes it out of the folder (nullify) and out of n2's one-way `related`.
        try context.performAndWait {
            context.delete(try context.existingObject(with: s.items["l1"]!))
            try context.save()
        }
        try reader.performAndWait { () throws in
            reader.reset()
            #expect(try reader.existingObject(with: s.items["n2"]!).objectID(forKey: "related") == nil)
            #expect(try reader.existingObject(with: s.folder).objects(forKey: "items").map { $0.value("title", as: String.self) } == ["v1", "n1", "n2", "l2"])
        }
        // Deleting the video empties the one-way `featured` of the folder, a concrete parent's holder.
        try context.performAndWait {
            context.delete(try context.existingObject(with: s.items["v1"]!))
            try context.save()
        }
        try reader.performAndWait { () throws in
            reader.reset()
            #expect(try reader.existingObject(with: s.folder).objectID(forKey: "featured") == nil)
        }
        // Deleting the folder cascades to every kind it holds.
        try context.performAndWait {
            context.delete(try context.existingObject(with: s.folder))
            try context.save()
        }
        try reader.performAndWait { () throws in
            reader.reset()
            #expect(try reader.fetch(FetchRequest(entityName: "Item")).isEmpty, "notes and links cascaded")
            #expect(try reader.existingObject(with: s.tag).objectIDs(forKey: "items").isEmpty)
        }
        #expect(try container.coordinator.checkIntegrity().isEmpty)
    }

    @Test("the history names a parent's destinations by their entities, also once they are deleted")
    func historyNamesKinds() throws {
        let container = try Fixtures.container(model: Self.model)
        let s = try Self.seed(container)
        let context = container.newBackgroundContext(name: "writer")
        let token = try context.performAndWait {
            let tag = try context.existingObject(with: s.tag)
            tag.setObjects([context.object(with: s.items["n1"]!), context.object(with: s.items["l1"]!)], forKey: "items")
            try context.existingObject(with: s.items["n2"]!).setObject(context.object(with: s.items["v1"]!), forKey: "related")
            return try #require(try context.save().token)
        }
        try context.performAndWait {
            context.delete(try context.existingObject(with: s.items["v1"]!))
            try context.save()
        }
        let saved = try #require(try container.coordinator.history(after: PersistentHistoryToken(rawValue: token.rawValue - 1)).first)
        let byID = Dictionary(uniqueKeysWithValues: saved.changes.map { ($0.objectID, $0) })
        #expect(byID[s.tag]?.previousValues["items"] == .destinations(added: [s.items["l1"]!], removed: [s.items["v1"]!]))
        #expect(byID[s.items["n2"]!]?.previousValues["related"] == .destinations(added: [s.items["v1"]!], removed: [s.items["l1"]!]))
    }

    @Test("a conflict's stored state names destinations by their entities")
    func conflictsNameKinds() throws {
        let container = try Fixtures.container(model: Self.model)
        let s = try Self.seed(container)
        let stale = container.newBackgroundContext(name: "stale")
        let fresh = container.newBackgroundContext(name: "fresh")
        try stale.performAndWait { _ = try stale.existingObject(with: s.folder).objectIDs(forKey: "items") }
        try fresh.performAndWait {
            try fresh.existingObject(with: s.folder).setValue("renamed", forKey: "name")
            try fresh.save()
        }
        try stale.performAndWait {
            stale.mergePolicy = .storeTrump
            let folder = try stale.existingObject(with: s.folder)
            folder.setObjects([stale.object(with: s.items["n2"]!), stale.object(with: s.items["v1"]!)], forKey: "items")
            try stale.save()
            #expect(folder.objectIDs(forKey: "items") == [s.items["n2"]!, s.items["v1"]!])
            #expect(folder.value("name", as: String.self) == "renamed")
        }
        try fresh.performAndWait {
            fresh.reset()
            let folder = try fresh.existingObject(with: s.folder)
            #expect(folder.objectIDs(forKey: "items") == [s.items["n2"]!, s.items["v1"]!])
            #expect(Set(folder.objects(forKey: "items").map { $0.entityName }) == ["Note", "Video"])
        }
        #expect(try container.coordinator.checkIntegrity().isEmpty)
    }
}
