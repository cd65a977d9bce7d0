import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite

/// `withStoredObject` reads an object's saved row without making a managed object. It must agree
/// with the managed object's values everywhere, and show the store, not unsaved changes.
@Suite("Stored rows read in place")
struct StoredObjectRowTests {
    /// Everything a row can tell, in plain values, so that tests compare it with the object.
    private struct Snapshot: Equatable {
        var version: Int64
        var attributes: [AttributeValue]
        var toOne: [ManagedObjectID?]
        var toMany: [[ManagedObjectID]]
    }

    private static func snapshot(_ context: ManagedObjectContext, _ id: ManagedObjectID) throws -> Snapshot? {
        let entity = try #require(context.coordinator.model.entity(named: id.entityName))
        return try context.withStoredObject(id) { row in
            var toOne: [ManagedObjectID?] = []
            var toMany: [[ManagedObjectID]] = []
            for (index, relationship) in entity.relationships.enumerated() {
                if relationship.isToMany {
                    var ids: [ManagedObjectID] = []
                    try row.forEachDestination(ofToManyAt: index) { ids.append($0) }
                    toMany.append(ids)
                } else {
                    toOne.append(try row.destination(ofToOneAt: index))
                }
            }
            return Snapshot(version: row.version, attributes: entity.attributes.indices.map { row.value(ofAttributeAt: $0) },
                            toOne: toOne, toMany: toMany)
        }
    }

    /// The same, read from a managed object (to-many IDs sorted by key, as the row gives them).
    private static func snapshot(of object: ManagedObject) -> Snapshot {
        let entity = object.entity.descriptionValue
        let keyOrder: (ManagedObjectID, ManagedObjectID) -> Bool = { ($0.primaryKey ?? 0) < ($1.primaryKey ?? 0) }
        return Snapshot(version: object.version, attributes: entity.attributes.map { object.attributeValue(forKey: $0.name) },
                        toOne: entity.relationships.filter { !$0.isToMany }.map { object.objectID(forKey: $0.name) },
                        toMany: entity.relationships.filter(\.isToMany).map { object.objectIDs(forKey: $0.name).sorted(by: keyOrder) })
    }

    @Test("a row shows what the managed object shows: version, every attribute type, to-one and to-many")
    func agreesWithManagedObjects() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let ids = try context.performAndWait {
            let project = context.insertNewObject(forEntityName: "Project")
            project.setValue("Apollo", forKey: "name")
            let tags = (1...3).map { n -> ManagedObject in
                let tag = context.insertNewObject(forEntityName: "Tag")
                tag.setValue("tag \(n)", forKey: "label")
                return tag
            }
            let full = context.insertNewObject(forEntityName: "Task")
            full.setValue("full \"quoted\" ✓", forKey: "title")
            full.setValue(Int64(4), forKey: "priority")
            full.setValue(true, forKey: "done")
            full.setValue(2.5, forKey: "estimate")
            full.setValue(Date(timeIntervalSince1970: 1_800_000_000.25), forKey: "due")
            full.setObject(project, forKey: "project")
            full.setObjects([tags[2], tags[0]], forKey: "tags")
            let bare = context.insertNewObject(forEntityName: "Task")
            bare.setValue("bare", forKey: "title")
            try context.save()
            full.setValue(Int64(5), forKey: "priority")  // a second version
            try context.save()
            return [full, bare, project, tags[0]].map(\.objectID)
        }
        let reader = container.newBackgroundContext()
        try reader.performAndWait {
            for id in ids {
                let row = try Self.snapshot(reader, id)
                let object = try reader.existingObject(with: id)
                #expect(row == Self.snapshot(of: object), "\(id)")
                // Values written as JSON straight from the row read as the object's values do.
                let attributes = object.entity.descriptionValue.attributes
                let written = try reader.withStoredObject(id) { row in
                    attributes.indices.map { i in var writer = JSONWriter(); row.writeJSON(ofAttributeAt: i, into: &writer); return writer.string }
                }
                #expect(written == attributes.map { attribute in
                    var writer = JSONWriter()
                    writer.write(object.attributeValue(forKey: attribute.name))
                    return writer.string
                }, "\(id)")
            }
            // Spot checks, so that agreeing on wrong values cannot pass.
            let full = try #require(try Self.snapshot(reader, ids[0]))
            #expect(full.version == 2)
            #expect(full.attributes[0] == .string("full \"quoted\" ✓"))
            #expect(full.attributes[1] == .integer(5))
            #expect(full.toOne == [ids[2]])
            #expect(full.toMany[0].count == 2)
            let bare = try #require(try Self.snapshot(reader, ids[1]))
            #expect(bare.attributes[3] == .null && bare.toOne == [nil] && bare.toMany == [[]])
        }
    }

    @Test("a one-to-one is found from the side that does not hold the key")
    func oneToOneFromEitherSide() throws {
        let container = try Fixtures.container(model: OneToOneTests.model)
        let context = container.newBackgroundContext()
        let (person, passport, loner) = try context.performAndWait {
            let person = context.insertNewObject(forEntityName: "Person")
            let passport = context.insertNewObject(forEntityName: "Passport")
            let loner = context.insertNewObject(forEntityName: "Person")
            person.setObject(passport, forKey: "passport")
            try context.save()
            return (person.objectID, passport.objectID, loner.objectID)
        }
        let found = try context.performAndWait {
            try [person, passport, loner].map { id in try context.withStoredObject(id) { try $0.destination(ofToOneAt: 0) } }
        }
        #expect(found == [.some(passport), .some(person), .some(nil)])
    }

    @Test("the store's state, not the context's: unsaved changes do not show, deleted and temporary objects are nil")
    func showsTheStore() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let (_, tasks) = try Fixtures.seedProject(context, name: "Apollo", taskTitles: ["kept", "deleted"])
        try context.performAndWait {
            try context.existingObject(with: tasks[0]).setValue("unsaved", forKey: "title")
            let inserted = context.insertNewObject(forEntityName: "Task")
            #expect(try context.withStoredObject(tasks[0]) { $0.value(ofAttributeAt: 0) } == .string("kept"))
            #expect(try context.withStoredObject(inserted.objectID) { _ in true } == nil)
            context.delete(try context.existingObject(with: tasks[1]))
            context.rollback()
        }
        try context.performAndWait {
            context.delete(try context.existingObject(with: tasks[1]))
            try context.save()
            #expect(try context.withStoredObject(tasks[1]) { _ in true } == nil)
            #expect(try context.withStoredObject(tasks[0]) { $0.version } == 1)
        }
    }

    @Test("an ID of another store is refused with a typed error")
    func foreignIDs() throws {
        let mine = try Fixtures.container()
        let other = try Fixtures.container()
        let (_, tasks) = try Fixtures.seedProject(other.newBackgroundContext(), name: "Other", taskTitles: ["t"])
        let context = mine.newBackgroundContext()
        context.performAndWait {
            #expect(throws: ContextError.foreignObjectID(tasks[0])) { try context.withStoredObject(tasks[0]) { _ in true } }
        }
    }
}
