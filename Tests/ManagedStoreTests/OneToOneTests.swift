import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite

/// One-to-one relationships store their key on one side only; these tests use both sides.
@Suite("One-to-one relationships")
struct OneToOneTests {
    // try!: a fixed model written here; an error is a bug in this file, not input.
    static let model = try! ManagedObjectModel(name: "People", entities: [
        EntityDescription(name: "Person", attributes: [AttributeDescription(name: "name", type: .string)],
                          relationships: [RelationshipDescription(name: "passport", destination: "Passport", inverse: "holder", deleteRule: .cascade)]),
        EntityDescription(name: "Passport", attributes: [AttributeDescription(name: "number", type: .string)],
                          relationships: [RelationshipDescription(name: "holder", destination: "Person", inverse: "passport")]),
    ])

    @Test("each side is kept up to date, a partner taken over is released, and the store agrees")
    func inverseMaintenance() throws {
        let container = try Fixtures.container(model: Self.model)
        let context = container.newBackgroundContext()
        let (ann, bob, p1) = try context.performAndWait {
            let ann = context.insertNewObject(forEntityName: "Person"); ann.setValue("Ann", forKey: "name")
            let bob = context.insertNewObject(forEntityName: "Person"); bob.setValue("Bob", forKey: "name")
            let p1 = context.insertNewObject(forEntityName: "Passport"); p1.setValue("P1", forKey: "number")
            ann.setObject(p1, forKey: "passport")
            #expect(p1.object(forKey: "holder") === ann)
            try context.save()
            // Set from the other side: Bob takes P1, so Ann loses it.
            p1.setObject(bob, forKey: "holder")
            #expect(bob.object(forKey: "passport") === p1)
            #expect(ann.object(forKey: "passport") == nil)
            try context.save()
            return (ann.objectID, bob.objectID, p1.objectID)
        }
        let reader = container.newBackgroundContext()
        try reader.performAndWait {
            #expect(reader.object(with: bob).objectID(forKey: "passport") == p1)
            #expect(reader.object(with: ann).objectID(forKey: "passport") == nil)
            #expect(reader.object(with: p1).objectID(forKey: "holder") == bob)
            // Key paths and comparisons through either side, in SQL.
            let holders = try reader.fetch(ObjectFetch.people(passportNumber: "P1"))
            #expect(holders.map(\.objectID) == [bob])
            let passports = try reader.fetchObjectIDs(FetchRequest(entityName: "Passport", predicate: .key("holder.name") == "Bob"))
            #expect(passports == [p1])
            #expect(try reader.count(for: FetchRequest(entityName: "Person", predicate: .key("passport") == nil)) == 1)
            #expect(try reader.count(for: FetchRequest(entityName: "Person", predicate: .key("passport") == p1)) == 1)
        }
        try context.performAndWait {
            // Cascade from Person deletes the passport.
            context.delete(context.object(with: bob))
            try context.save()
            #expect(try context.count(for: FetchRequest(entityName: "Passport")) == 0)
        }
        #expect(try container.coordinator.checkIntegrity() == [])
    }
}

enum ObjectFetch {
    static func people(passportNumber: String) -> FetchRequest {
        FetchRequest(entityName: "Person", predicate: .key("passport.number") == passportNumber)
    }
}
