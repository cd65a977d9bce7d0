import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite

/// `renamingIdentifier` in the model: read and written in the JSON model format, left out of
/// the version hash (as Core Data leaves it out), and two elements may not claim one old name.
@Suite("Renaming identifiers in the model")
struct RenamingIdentifierTests {
    static let json = #"""
    {"name": "M", "entities": [
      {"name": "Job", "renamingIdentifier": "Task",
       "attributes": [{"name": "name", "type": "string", "renamingIdentifier": "title"}],
       "relationships": [{"name": "owner", "destination": "Person", "inverse": "jobs", "renamingIdentifier": "assignee"}]},
      {"name": "Person", "attributes": [{"name": "label", "type": "string"}],
       "relationships": [{"name": "jobs", "destination": "Job", "inverse": "owner", "toMany": true}]}
    ]}
    """#

    @Test("renamingIdentifier is read from the JSON model and written back on entities, attributes and relationships")
    func roundTrip() throws {
        let model = try ManagedObjectModel(jsonData: Array(Self.json.utf8))
        let job = try #require(model.entity(named: "Job"))
        #expect(job.renamingIdentifier == "Task")
        #expect(job.attribute(named: "name")?.renamingIdentifier == "title")
        #expect(job.relationship(named: "owner")?.renamingIdentifier == "assignee")
        #expect(model.entity(named: "Person")?.renamingIdentifier == nil)
        let again = try ManagedObjectModel(jsonData: Array(model.jsonValue.serialized().utf8))
        #expect(again.entities == model.entities)
        #expect(model.jsonValue.serialized().contains(#""renamingIdentifier":"title""#))
    }

    @Test("renamingIdentifier is not part of versionHash; a change of name is")
    func notHashed() throws {
        let plain = Self.json.replacingOccurrences(of: #", "renamingIdentifier": "title""#, with: "")
            .replacingOccurrences(of: #", "renamingIdentifier": "Task""#, with: "")
            .replacingOccurrences(of: #", "renamingIdentifier": "assignee""#, with: "")
        #expect(plain != Self.json)
        let withIdentifiers = try ManagedObjectModel(jsonData: Array(Self.json.utf8))
        let without = try ManagedObjectModel(jsonData: Array(plain.utf8))
        #expect(withIdentifiers.versionHash == without.versionHash)
        let renamed = try ManagedObjectModel(jsonData: Array(plain.replacingOccurrences(of: #""label""#, with: #""tag""#).utf8))
        #expect(renamed.versionHash != without.versionHash)
    }

    @Test("two properties, or two entities, renamed from the same name are refused, naming both")
    func sameOldName() {
        let properties = [EntityDescription(name: "Item", attributes: [
            AttributeDescription(name: "a", type: .string, renamingIdentifier: "old"),
            AttributeDescription(name: "b", type: .string, renamingIdentifier: "old"),
        ])]
        #expect {
            _ = try ManagedObjectModel(name: "M", entities: properties)
        } throws: { error in
            guard let error = error as? ModelError, error.problems.count == 1, let problem = error.problems.first else { return false }
            return problem.entity == "Item" && problem.property == "b" && problem.message.contains("'old'") && problem.message.contains("a")
        }
        let entities = [EntityDescription(name: "A", renamingIdentifier: "Old"), EntityDescription(name: "B", renamingIdentifier: "Old")]
        #expect {
            _ = try ManagedObjectModel(name: "M", entities: entities)
        } throws: { error in
            guard let error = error as? ModelError, let problem = error.problems.first else { return false }
            return error.problems.count == 1 && problem.entity == "B" && problem.property == nil && problem.message.contains("A")
        }
    }

    @Test("a renamingIdentifier that is not a non-empty string is refused where it is")
    func badValue() {
        let json = #"{"name": "M", "entities": [{"name": "A", "attributes": [{"name": "x", "type": "string", "renamingIdentifier": 3}]}]}"#
        #expect {
            _ = try ManagedObjectModel(jsonData: Array(json.utf8))
        } throws: { error in
            guard let error = error as? ModelError, let problem = error.problems.first else { return false }
            return problem.entity == "A" && problem.property == "x" && problem.message.contains("renamingIdentifier")
        }
    }
}
