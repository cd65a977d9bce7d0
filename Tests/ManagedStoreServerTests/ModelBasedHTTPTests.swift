import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite
@testable import ManagedStoreHTTP
@testable import ManagedStoreOpenAPI
@testable import ManagedStoreServer

/// A model-based test of the whole service: a random walk of writes (inserts, PATCH, PUT,
/// deletes, transactions; valid, invalid, stale and conflicting) against a running server,
/// each checked against a plain in-memory reference model (`ReferenceStore`). See
/// `ModelWalk` for what is checked after every step.
///
/// Runs 3,000 steps per model, or 60 seconds, whichever comes first. Environment:
/// `MANAGEDSTORE_MODEL_STEPS=N` (N steps, no time limit unless `MANAGEDSTORE_MODEL_SECONDS`),
/// `MANAGEDSTORE_MODEL_SEED=S` (replay a failure's seed), `MANAGEDSTORE_MODEL_CRASHERS=0`
/// (leave out the transactions that used to crash the server: see `TransactionCrashTests`), and for
/// triage `MANAGEDSTORE_MODEL_RELAX=name,...` (loosens the named checks so that a known server
/// bug does not hide the next one; `WalkSettings.Relax` lists them). Every check is on by default.
@Suite("Model-based HTTP test")
struct ModelBasedHTTPTests {
    /// The second model: Author 1-n Book n-m Genre, Book 1-n Loan (Tests/Models/library.json,
    /// shared with the Swift client's generator check, scripts/client/swift_client_round.sh).
    static let libraryJSON: String = {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Models/library.json")
        guard let text = try? String(contentsOf: file, encoding: .utf8) else { fatalError("no test model at \(file.path)") }
        return text
    }()

    static func library() throws -> ManagedObjectModel { try ManagedObjectModel(jsonData: Array(libraryJSON.utf8)) }

    static func walk(model: ManagedObjectModel, name: String, seed: UInt64) throws {
        let settings = WalkSettings.fromEnvironment(defaultSteps: 3_000, defaultSeconds: 60, defaultSeed: seed)
        let harness = try ServerHarness(model: model)
        let walk = ModelWalk(port: harness.port, model: model, name: name, settings: settings)
        let started = Date()
        do {
            let steps = try walk.run()
            print("model-based walk over \(name): \(steps) steps, \(walk.requests) requests in \(String(format: "%.1f", Date().timeIntervalSince(started))) s, seed \(settings.seed); \(walk.summary)")
        } catch let mismatch as ModelMismatch {
            Issue.record(Comment(rawValue: mismatch.description))
        }
    }

    @Test("random writes on the task tracker agree with the reference model")
    func taskTracker() throws {
        try Self.walk(model: .taskTracker(), name: "task tracker", seed: 20_260_716)
    }

    /// The third model: inheritance. An abstract Region with a uniqueness constraint its
    /// sub-entities share, a concrete Territory with a sub-entity of its own, relationships
    /// between kinds, and an Expedition whose relationships point at the parents: many-to-many
    /// with Region, a to-many whose keys the kinds' rows hold, a to-one to Territory.
    static func world() throws -> ManagedObjectModel {
        try ManagedObjectModel(jsonData: Array(#"""
            {"name": "World", "entities": [
              {"name": "Region", "abstract": true,
               "attributes": [{"name": "name", "type": "string", "optional": false}, {"name": "code", "type": "integer16", "min": 0, "max": 40}],
               "relationships": [{"name": "expeditions", "destination": "Expedition", "toMany": true, "inverse": "visits"},
                                 {"name": "discoveredBy", "destination": "Expedition", "inverse": "discovered"}],
               "uniquenessConstraints": [["code"]]},
              {"name": "Expedition", "attributes": [{"name": "title", "type": "string"}],
               "relationships": [{"name": "visits", "destination": "Region", "toMany": true, "inverse": "expeditions"},
                                 {"name": "discovered", "destination": "Region", "toMany": true, "inverse": "discoveredBy", "deleteRule": "nullify"},
                                 {"name": "base", "destination": "Territory", "inverse": "stationed"}]},
              {"name": "Continent", "parent": "Region", "attributes": [{"name": "area", "type": "double"}],
               "relationships": [{"name": "countries", "destination": "Country", "toMany": true, "inverse": "continent", "deleteRule": "deny"}]},
              {"name": "Country", "parent": "Region", "attributes": [{"name": "capital", "type": "string"}],
               "relationships": [{"name": "continent", "destination": "Continent", "inverse": "countries"},
                                 {"name": "cities", "destination": "City", "toMany": true, "inverse": "country", "deleteRule": "cascade"}]},
              {"name": "City", "attributes": [{"name": "title", "type": "string", "optional": false}, {"name": "population", "type": "integer64", "default": 0}],
               "relationships": [{"name": "country", "destination": "Country", "inverse": "cities"}]},
              {"name": "Territory", "parent": "Region", "attributes": [{"name": "governedBy", "type": "string"}],
               "relationships": [{"name": "stationed", "destination": "Expedition", "toMany": true, "inverse": "base"}]},
              {"name": "Island", "parent": "Territory", "attributes": [{"name": "area", "type": "double"}]}]}
            """#.utf8))
    }

    @Test("random writes on a model with inheritance agree with the reference model (lists of parents, uniqueness across kinds)")
    func inheritance() throws {
        try Self.walk(model: try Self.world(), name: "world", seed: 20_261_128)
    }

    @Test("random writes on the library model agree with the reference model")
    func library() throws {
        try Self.walk(model: try Self.library(), name: "library", seed: 19_451_031)
    }
}
