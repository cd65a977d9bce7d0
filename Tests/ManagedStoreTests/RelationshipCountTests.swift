import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore

/// `minCount` and `maxCount` on to-many relationships [NSRelationshipDescription minCount,
/// maxCount]: checked on every save that changes how many destinations an object holds,
/// including changes made from the other side (inverse maintenance).
@Suite("To-many count rules")
struct RelationshipCountTests {
    static let model: ManagedObjectModel = {
        do {
            return try ManagedObjectModel(name: "Teams", entities: [
                EntityDescription(name: "Team", attributes: [AttributeDescription(name: "name", type: .string)], relationships: [
                    RelationshipDescription(name: "members", destination: "Member", inverse: "team", isToMany: true,
                                            deleteRule: .cascade, minCount: 1, maxCount: 3),
                ]),
                EntityDescription(name: "Member", attributes: [AttributeDescription(name: "name", type: .string)], relationships: [
                    RelationshipDescription(name: "team", destination: "Team", inverse: "members"),
                ]),
            ])
        } catch {
            fatalError("the count test model is invalid: \(error)")
        }
    }()

    struct Broken: Hashable {
        let id: ManagedObjectID
        let property: String?
        let code: ValidationErrorCode
    }

    /// The validation errors of a save that must fail.
    static func failingSave(_ context: ManagedObjectContext, sourceLocation: SourceLocation = #_sourceLocation) -> Set<Broken> {
        Set(ValidationTests.failingSave(context, sourceLocation: sourceLocation).map { Broken(id: $0.objectID, property: $0.property, code: $0.code) })
    }

    /// Saves a team with `count` members; returns the team's and the members' IDs.
    static func seedTeam(_ container: PersistentContainer, _ name: String, members count: Int) throws -> (ManagedObjectID, [ManagedObjectID]) {
        let context = container.newBackgroundContext(name: "seed")
        return try context.performAndWait {
            let team = context.insertNewObject(forEntityName: "Team")
            team.setValue(name, forKey: "name")
            let members = (0..<count).map { i in
                let member = context.insertNewObject(forEntityName: "Member")
                member.setValue("\(name)\(i)", forKey: "name")
                member.setObject(team, forKey: "team")
                return member
            }
            try context.save()
            return (team.objectID, members.map(\.objectID))
        }
    }

    static func memberCount(_ container: PersistentContainer, of team: ManagedObjectID) throws -> Int {
        let reader = container.newBackgroundContext(name: "reader")
        return try reader.performAndWait { try reader.existingObject(with: team).count(forKey: "members") }
    }

    @Test("a new object below minCount is too-small, above maxCount too-large; on the bounds it saves")
    func newObjects() throws {
        let container = try Fixtures.container(model: Self.model)
        let context = container.newBackgroundContext()
        let (empty, crowded) = context.performAndWait {
            let empty = context.insertNewObject(forEntityName: "Team")
            let crowded = context.insertNewObject(forEntityName: "Team")
            for _ in 0..<4 { context.insertNewObject(forEntityName: "Member").setObject(crowded, forKey: "team") }
            return (empty.objectID, crowded.objectID)
        }
        #expect(Self.failingSave(context) == [Broken(id: empty, property: "members", code: .tooSmall),
                                             Broken(id: crowded, property: "members", code: .tooLarge)])
        _ = try Self.seedTeam(container, "one", members: 1)
        _ = try Self.seedTeam(container, "three", members: 3)
    }

    @Test("the message says the bound and the count")
    func message() throws {
        let container = try Fixtures.container(model: Self.model)
        let context = container.newBackgroundContext()
        let messages = context.performAndWait { () -> [String] in
            _ = context.insertNewObject(forEntityName: "Team")
            do { try context.save() } catch SaveError.validation(let errors) { return errors.map(\.message) } catch {}
            return []
        }
        #expect(messages == ["members must hold at least 1 object; it holds 0"])
    }

    @Test("a member moved away from a team it leaves below minCount is refused, though the team was never read")
    func moveFromTheOtherSide() throws {
        let container = try Fixtures.container(model: Self.model)
        let (small, smallMembers) = try Self.seedTeam(container, "small", members: 1)
        let (big, _) = try Self.seedTeam(container, "big", members: 1)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let member = try context.existingObject(with: smallMembers[0])
            member.setObject(try context.existingObject(with: big), forKey: "team")
        }
        #expect(Self.failingSave(context) == [Broken(id: small, property: "members", code: .tooSmall)])
        #expect(try Self.memberCount(container, of: small) == 1, "nothing was written")
        #expect(try Self.memberCount(container, of: big) == 1)
    }

    @Test("a member added from its side to a full team is too-large")
    func addFromTheOtherSide() throws {
        let container = try Fixtures.container(model: Self.model)
        let (full, _) = try Self.seedTeam(container, "full", members: 3)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            context.insertNewObject(forEntityName: "Member").setObject(try context.existingObject(with: full), forKey: "team")
        }
        #expect(Self.failingSave(context) == [Broken(id: full, property: "members", code: .tooLarge)])
        #expect(try Self.memberCount(container, of: full) == 3)
    }

    @Test("deleting the last member of a team is too-small; deleting the team with it (cascade) saves")
    func deletes() throws {
        let container = try Fixtures.container(model: Self.model)
        let (team, members) = try Self.seedTeam(container, "solo", members: 1)
        let context = container.newBackgroundContext()
        try context.performAndWait { context.delete(try context.existingObject(with: members[0])) }
        #expect(Self.failingSave(context) == [Broken(id: team, property: "members", code: .tooSmall)])
        try context.performAndWait {
            context.rollback()
            context.delete(try context.existingObject(with: team))
            try context.save()
        }
        let reader = container.newBackgroundContext()
        #expect(try reader.performAndWait { try reader.count(for: FetchRequest(entityName: "Member")) } == 0)
    }

    @Test("the JSON format: minCount, maxCount and a non-optional to-many (at least one)")
    func jsonFormat() throws {
        func model(_ relationship: String) throws -> ManagedObjectModel {
            try ManagedObjectModel(jsonData: Array("""
                {"name": "M", "entities": [
                  {"name": "A", "relationships": [{"name": "bs", "destination": "B", "inverse": "a", "toMany": true, \(relationship)}]},
                  {"name": "B", "relationships": [{"name": "a", "destination": "A", "inverse": "bs"}]}]}
                """.utf8))
        }
        let counted = try model(#""minCount": 2, "maxCount": 5"#).entity(named: "A")?.relationships[0]
        #expect(counted?.minCount == 2 && counted?.maxCount == 5)
        let required = try model(#""optional": false"#).entity(named: "A")?.relationships[0]
        #expect(required?.minCount == 1 && required?.isOptional == true)
        let written = try model(#""minCount": 2, "maxCount": 5"#)
        #expect(try ManagedObjectModel(json: written.jsonValue).entities == written.entities)
        for (text, problem) in [(#""minCount": 3, "maxCount": 2"#, "A.bs: 'minCount' is greater than 'maxCount'"),
                                (#""minCount": -1"#, "A.bs: \"minCount\" must be a non-negative integer"),
                                (#""maxCount": "many""#, "A.bs: \"maxCount\" must be a non-negative integer")] {
            #expect(throws: ModelError.self) { try model(text) }
            do { _ = try model(text) } catch let error as ModelError {
                #expect(error.problems.map(\.description).contains(problem), "\(error.problems)")
            }
        }
        #expect {
            try ManagedObjectModel(jsonData: Array("""
                {"name": "M", "entities": [
                  {"name": "A", "relationships": [{"name": "b", "destination": "B", "inverse": "a", "maxCount": 1}]},
                  {"name": "B", "relationships": [{"name": "a", "destination": "A", "inverse": "b"}]}]}
                """.utf8))
        } throws: { error in
            (error as? ModelError)?.problems.map(\.description).contains("A.b: 'minCount' and 'maxCount' apply to to-many relationships only") ?? false
        }
    }

    @Test("Xcode's format: minCount and maxCount on a to-many, non-optional as at least one, and back unchanged")
    func xcodeFormat() throws {
        let (folder, url) = try XcodeModelTests.bundle("""
            <entity name="Order" syncable="YES">
                <relationship name="lines" toMany="YES" minCount="2" maxCount="9" deletionRule="Cascade" destinationEntity="Line" inverseName="order" inverseEntity="Line"/>
                <relationship name="notes" toMany="YES" deletionRule="Nullify" destinationEntity="Line" inverseName="note" inverseEntity="Line"/>
                <relationship name="extras" optional="YES" toMany="YES" maxCount="0" deletionRule="Nullify" destinationEntity="Line" inverseName="extra" inverseEntity="Line"/>
            </entity>
            <entity name="Line" syncable="YES">
                <relationship name="order" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Order" inverseName="lines" inverseEntity="Order"/>
                <relationship name="note" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Order" inverseName="notes" inverseEntity="Order"/>
                <relationship name="extra" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Order" inverseName="extras" inverseEntity="Order"/>
            </entity>
            """)
        defer { withExtendedLifetime(folder) {} }
        let model = try ManagedObjectModel(contentsOf: url)
        let order = try #require(model.entity(named: "Order"))
        #expect(order.relationships.map(\.minCount) == [2, 1, nil], "non-optional means at least one")
        #expect(order.relationships.map(\.maxCount) == [9, nil, nil], "0 means no limit")
        #expect(model.entity(named: "Line")?.relationships.allSatisfy { $0.minCount == nil && $0.maxCount == nil } == true,
                "a to-one's maxCount=\"1\" is not a count rule")
        let written = folder.directory.appendingPathComponent("Again.xcdatamodel")
        try FileManager.default.createDirectory(at: written, withIntermediateDirectories: true)
        try Data(try model.xcodeModelContents().utf8).write(to: written.appendingPathComponent("contents"))
        #expect(try ManagedObjectModel(contentsOf: written).entities == model.entities)
    }
}
