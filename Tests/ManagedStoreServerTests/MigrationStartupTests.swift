import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite
@testable import ManagedStoreHTTP
@testable import ManagedStoreOpenAPI
@testable import ManagedStoreServer

/// `serve` on a store made from an older model: the port opens at once and the migration runs
/// behind it (the contract's "Start, stop, container"), out of process as a container runs it.
@Suite("Migration at start-up", .serialized, .sqliteWhateverTheRun)
struct MigrationStartupTests {
    @Test("a slow migration: healthz 200 and readyz 503 with Retry-After while it runs, then the migrated store is served")
    func readinessDuringSlowMigration() throws {
        let folder = TemporaryFolder()
        let directory = folder.url
        let tracker = ManagedObjectModel.taskTracker()
        // v2: Task gets a mandatory `notes` with a default, filled into every existing row, and
        // an index on it; Task.title is renamed `name`.
        let entities = tracker.entities.map { entity -> EntityDescription in
            guard entity.name == "Task" else { return entity }
            var task = entity
            task.attributes[0].name = "name"
            task.attributes[0].renamingIdentifier = "title"
            task.attributes.append(AttributeDescription(name: "notes", type: .string, isOptional: false, defaultValue: .string("none")))
            task.indexes.append(["notes", "priority"])
            return task
        }
        let v2 = try ManagedObjectModel(name: tracker.name, version: 2, entities: entities)
        let modelFile = directory.appendingPathComponent("v2.json")
        try Data(v2.jsonValue.serialized().utf8).write(to: modelFile)

        // A large store of the old model: enough rows that the migration takes a while.
        let count = 300_000
        do {
            let coordinator = try PersistentStoreCoordinator(model: tracker, store: .sqlite(directory.appendingPathComponent("store.sqlite"), durability: .normal))
            let context = ManagedObjectContext(coordinator: coordinator, name: "seed")
            var n = 0
            let result = try context.performAndWait {
                try context.execute(BatchInsertRequest(entityName: "Task") {
                    n += 1
                    return n <= count ? ["title": .attribute(.string("task \(n)")), "priority": .attribute(.integer(Int64(n % 6)))] : nil
                })
            }
            #expect(result.count == count)
        }

        let server = try ServerProcess(waitUntilReady: false, directory: directory, model: modelFile.path)
        // The port is open before the store is: the first probes come while it migrates.
        let health = try RawHTTPClient(port: server.port).request("GET", "/v1/healthz")
        #expect(health.status == 200)
        let ready = try RawHTTPClient(port: server.port).request("GET", "/v1/readyz")
        #expect(ready.status == 503, "readyz while migrating \(count) rows")
        #expect(ready.header("Retry-After") != nil)
        let data = try RawHTTPClient(port: server.port).request("GET", "/v1/objects/Task?limit=1")
        #expect(data.status == 503)

        try server.waitUntilReady(seconds: 120)
        let first = try RawHTTPClient(port: server.port).request("GET", "/v1/objects/Task/1")
        #expect(first.status == 200)
        let object = try JSONParser().parse(first.body)
        #expect(object["name"]?.stringValue == "task 1", "the renamed attribute keeps its values")
        #expect(object["notes"]?.stringValue == "none", "the new attribute holds its default")
        #expect(object["title"] == nil)
        let counted = try JSONParser().parse(try RawHTTPClient(port: server.port).request("GET", "/v1/objects/Task?count=true&limit=1").body)
        #expect(counted["count"] == .number(String(count)))
        try waitUntil("the migration is logged") { server.stderr.contains("msg=migrated") }
        #expect(server.stderr.contains("rename attribute"), "the log names the steps: \(server.stderr.suffix(800))")
        server.signal(SIGTERM)
        #expect(server.waitForExit(seconds: 30) == 0)
    }

    @Test("a change that cannot be inferred: serve says which, and exits 1; the store is untouched")
    func refusedMigration() throws {
        let folder = TemporaryFolder()
        let tracker = ManagedObjectModel.taskTracker()
        let store = folder.url.appendingPathComponent("store.sqlite")
        do {
            let coordinator = try PersistentStoreCoordinator(model: tracker, store: .sqlite(store, durability: .normal))
            let context = ManagedObjectContext(coordinator: coordinator, name: "seed")
            try context.performAndWait {
                context.insertNewObject(forEntityName: "Tag").setValue("urgent", forKey: "label")
                try context.save()
            }
            try coordinator.settle()
        }
        let before = try Data(contentsOf: store)
        let entities = tracker.entities.map { entity -> EntityDescription in
            guard entity.name == "Tag" else { return entity }
            var tag = entity
            tag.attributes[0].type = .integer64
            return tag
        }
        let changed = try ManagedObjectModel(name: tracker.name, version: 2, entities: entities)
        let modelFile = folder.url.appendingPathComponent("v2.json")
        try Data(changed.jsonValue.serialized().utf8).write(to: modelFile)
        let run = try ServerProcess.run(["serve", "--model", modelFile.path, "--store", store.path, "--port", "0"])
        #expect(run.status == 1)
        #expect(run.stderr.contains("Tag.label"), "the refusal names the property: \(run.stderr.suffix(600))")
        #expect(try Data(contentsOf: store) == before, "the store file is as it was")
    }
}
