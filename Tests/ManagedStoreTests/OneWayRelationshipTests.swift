import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore

/// One-way relationships (`"inverse": null`; an Xcode relationship without an inverse): set
/// and read like any other, nothing kept in step on the other side, and a deleted destination
/// taken out of every one-way relationship that holds it, as nullify would, whether the holder
/// was read or not. Every store runs it.
@Suite("One-way relationships")
struct OneWayRelationshipTests {
    static let model: ManagedObjectModel = {
        do {
            return try ManagedObjectModel(name: "Notes", entities: [
                EntityDescription(name: "Note", attributes: [AttributeDescription(name: "title", type: .string)], relationships: [
                    RelationshipDescription(name: "author", destination: "Person", inverse: nil),
                    RelationshipDescription(name: "readers", destination: "Person", inverse: nil, isToMany: true),
                    RelationshipDescription(name: "related", destination: "Note", inverse: nil, isToMany: true, isOrdered: true),
                ]),
                EntityDescription(name: "Person", attributes: [AttributeDescription(name: "name", type: .string)]),
            ])
        } catch {
            fatalError("the one-way test model is invalid: \(error)")
        }
    }()

    /// Saves a note with an author and two readers; returns the IDs.
    static func seed(_ container: PersistentContainer) throws -> (note: ManagedObjectID, people: [ManagedObjectID]) {
        let context = container.newBackgroundContext(name: "seed")
        return try context.performAndWait {
            let people = ["ann", "bob", "cy"].map { name in
                let person = context.insertNewObject(forEntityName: "Person")
                person.setValue(name, forKey: "name")
                return person
            }
            let note = context.insertNewObject(forEntityName: "Note")
            note.setValue("n", forKey: "title")
            note.setObject(people[0], forKey: "author")
            note.setObjects([people[1], people[2]], forKey: "readers")
            try context.save()
            return (note.objectID, people.map(\.objectID))
        }
    }

    static func stored(_ container: PersistentContainer, _ note: ManagedObjectID) throws -> (author: ManagedObjectID?, readers: [ManagedObjectID], version: Int64) {
        let reader = container.newBackgroundContext(name: "reader")
        return try reader.performAndWait {
            let object = try reader.existingObject(with: note)
            return (object.objectID(forKey: "author"), object.objectIDs(forKey: "readers"), object.version)
        }
    }

    @Test("a one-way to-one and to-many are saved and read back; the destination has no side to change")
    func setAndRead() throws {
        let container = try Fixtures.container(model: Self.model)
        let (note, people) = try Self.seed(container)
        let saved = try Self.stored(container, note)
        #expect(saved.author == people[0] && saved.readers == [people[1], people[2]])
        #expect(container.coordinator.model.schema[1].relationships.isEmpty)
    }

    @Test("deleting a destination the context never read takes it out of the one-way relationships that hold it, and the holder's version goes up")
    func deleteUnreadDestination() throws {
        let container = try Fixtures.container(model: Self.model)
        let (note, people) = try Self.seed(container)
        let before = try Self.stored(container, note)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            context.delete(try context.existingObject(with: people[0]))
            context.delete(try context.existingObject(with: people[2]))
            try context.save()
        }
        let after = try Self.stored(container, note)
        #expect(after.author == nil && after.readers == [people[1]])
        #expect(after.version == before.version + 1)
    }

    @Test("deleting a destination a loaded holder points at updates the holder in the context at once")
    func deleteLoadedDestination() throws {
        let container = try Fixtures.container(model: Self.model)
        let (note, people) = try Self.seed(container)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let n = try context.existingObject(with: note)
            #expect(n.objectIDs(forKey: "readers").count == 2)
            context.delete(try context.existingObject(with: people[1]))
            #expect(n.objectIDs(forKey: "readers") == [people[2]])
            // A holder that got the destination in this context, unsaved, lets go of it too.
            let draft = context.insertNewObject(forEntityName: "Note")
            draft.setObject(try context.existingObject(with: people[0]), forKey: "author")
            context.delete(try context.existingObject(with: people[0]))
            #expect(draft.objectID(forKey: "author") == nil && n.objectID(forKey: "author") == nil)
            try context.save()
        }
        let after = try Self.stored(container, note)
        #expect(after.author == nil && after.readers == [people[2]])
    }

    @Test("a rollback of the delete puts the destination back into the holders")
    func rollbackRestores() throws {
        let container = try Fixtures.container(model: Self.model)
        let (note, people) = try Self.seed(container)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let n = try context.existingObject(with: note)
            context.delete(try context.existingObject(with: people[0]))
            context.rollback()
            #expect(n.objectID(forKey: "author") == people[0])
        }
        #expect(try Self.stored(container, note).author == people[0])
    }

    @Test("a one-way relationship to its own entity, ordered: a deleted note leaves the others' lists")
    func selfReferencing() throws {
        let container = try Fixtures.container(model: Self.model)
        let context = container.newBackgroundContext()
        let (first, third) = try context.performAndWait {
            let notes = (0..<3).map { i in
                let note = context.insertNewObject(forEntityName: "Note")
                note.setValue("n\(i)", forKey: "title")
                return note
            }
            notes[0].setObjects([notes[2], notes[1]], forKey: "related")
            try context.save()
            context.delete(notes[1])
            try context.save()
            return (notes[0].objectID, notes[2].objectID)
        }
        let reader = container.newBackgroundContext()
        let related = try reader.performAndWait { try reader.existingObject(with: first).objectIDs(forKey: "related") }
        #expect(related == [third])
    }

    @Test("both model formats: \"inverse\": null, and an Xcode relationship without an inverse; a missing inverse key is still an error")
    func modelFormats() throws {
        let json = try ManagedObjectModel(json: Self.model.jsonValue)
        #expect(json.entities == Self.model.entities)
        #expect(Self.model.jsonValue.serialized().contains(#""inverse":null"#))
        let (folder, url) = try XcodeModelTests.bundle("""
            <entity name="Note" syncable="YES">
                <relationship name="author" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Person"/>
                <relationship name="readers" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Person"/>
            </entity>
            <entity name="Person" syncable="YES"/>
            """)
        defer { withExtendedLifetime(folder) {} }
        let xcode = try ManagedObjectModel(contentsOf: url)
        #expect(xcode.entity(named: "Note")?.relationships.map(\.inverse) == [nil, nil])
        let written = folder.directory.appendingPathComponent("Again.xcdatamodel")
        try FileManager.default.createDirectory(at: written, withIntermediateDirectories: true)
        try Data(try xcode.xcodeModelContents().utf8).write(to: written.appendingPathComponent("contents"))
        #expect(try ManagedObjectModel(contentsOf: written).entities == xcode.entities)
        #expect {
            try ManagedObjectModel(jsonData: Array(#"{"name": "M", "entities": [{"name": "A", "relationships": [{"name": "b", "destination": "A"}]}]}"#.utf8))
        } throws: { error in
            (error as? ModelError)?.problems.map(\.description).contains { $0.hasPrefix("A.b: missing \"inverse\"") } ?? false
        }
    }

    @Test("a migration adds and removes one-way relationships; one that gains an inverse is refused saying so")
    func migrations() throws {
        func model(_ version: Int, _ relationships: [RelationshipDescription], person: [RelationshipDescription] = []) throws -> ManagedObjectModel {
            try ManagedObjectModel(name: "Notes", version: version, entities: [
                EntityDescription(name: "Note", attributes: [AttributeDescription(name: "title", type: .string)], relationships: relationships),
                EntityDescription(name: "Person", attributes: [AttributeDescription(name: "name", type: .string)], relationships: person),
            ])
        }
        let store = TemporaryStore()
        let first = try PersistentContainer(model: try model(1, [RelationshipDescription(name: "author", destination: "Person", inverse: nil)]),
                                            store: .sqlite(store.url))
        let note = try first.viewContext.performAndWait {
            let person = first.viewContext.insertNewObject(forEntityName: "Person")
            let note = first.viewContext.insertNewObject(forEntityName: "Note")
            note.setObject(person, forKey: "author")
            try first.viewContext.save()
            return note.objectID
        }
        let second = try PersistentContainer(model: try model(2, [
            RelationshipDescription(name: "author", destination: "Person", inverse: nil),
            RelationshipDescription(name: "readers", destination: "Person", inverse: nil, isToMany: true),
        ]), store: .sqlite(store.url))
        #expect(second.coordinator.appliedMigration.steps.contains(.addOneWayRelationship(entity: "Note", relationship: "readers", isToMany: true, destination: "Person")))
        try second.viewContext.performAndWait {
            let n = try second.viewContext.existingObject(with: note)
            #expect(n.objectID(forKey: "author") != nil, "the kept relationship keeps its links")
            n.setObjects([try #require(n.object(forKey: "author"))], forKey: "readers")
            try second.viewContext.save()
        }
        let third = try PersistentContainer(model: try model(3, [RelationshipDescription(name: "author", destination: "Person", inverse: nil)]),
                                            store: .sqlite(store.url))
        #expect(third.coordinator.appliedMigration.steps.contains(.removeOneWayRelationship(entity: "Note", relationship: "readers", destination: "Person")))
        #expect {
            _ = try PersistentContainer(model: try model(4, [RelationshipDescription(name: "author", destination: "Person", inverse: "notes")],
                                                         person: [RelationshipDescription(name: "notes", destination: "Note", inverse: "author", isToMany: true)]),
                                        store: .sqlite(store.url))
        } throws: { error in "\(error)".contains("Note.author: was a one-way relationship, now one with an inverse") }
    }
}
