import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite

@Suite("SQLite and in-memory stores")
struct StoreTests {
    @Test("a file store survives reopening, keeps its UUID, and runs in WAL mode")
    func reopen() throws {
        let store = TemporaryStore()
        let firstID: UUID
        do {
            let container = try Fixtures.container(.sqlite(store.url))
            firstID = container.coordinator.storeIdentifier
            try Fixtures.seedProject(container.viewContext, name: "Kept", taskTitles: ["one"])
        }
        let container = try Fixtures.container(.sqlite(store.url))
        #expect(container.coordinator.storeIdentifier == firstID)
        let mode = try container.coordinator.sqlite.writer.withConnection { c in try c.withStatement("PRAGMA journal_mode") { s throws(StoreError) in try s.step() ? s.text(0) : "" } }
        #expect(mode == "wal")
        let context = container.newBackgroundContext()
        try context.performAndWait { () throws in
            #expect(try context.fetch(FetchRequest(entityName: "Project")).map { $0.value("name", as: String.self) } == ["Kept"])
        }
    }

    @Test("opening a store with another model, migration turned off, fails with a clear error")
    func modelMismatch() throws {
        let store = TemporaryStore()
        _ = try Fixtures.container(.sqlite(store.url))
        let other = try ManagedObjectModel(name: "Other", entities: [EntityDescription(name: "Thing", attributes: [AttributeDescription(name: "x", type: .string)])])
        var description = StoreDescription.sqlite(store.url)
        description.shouldInferMappingModelAutomatically = false
        #expect {
            _ = try PersistentContainer(model: other, store: description)
        } throws: { error in
            guard case StoreError.modelMismatch(let name, _, let hash, .migrationOff)? = error as? StoreError else { return false }
            return name == "Tracker" && hash == other.versionHash && "\(error)".contains("another model")
        }
    }

    @Test("a database ManagedStore did not create is refused, and left as it was")
    func foreignDatabase() throws {
        let store = TemporaryStore()
        let connection = try SQLiteConnection(path: store.url.path)
        try connection.execute("CREATE TABLE people (name TEXT)")
        #expect(throws: StoreError.notAManagedStore(path: store.url.path)) {
            _ = try PersistentStoreCoordinator(model: Fixtures.tracker, store: .sqlite(store.url))
        }
        #expect(try connection.scalarInt("SELECT count(*) FROM sqlite_master WHERE name = 'Task'") == 0)
    }

    @Test("the in-memory store behaves like the file store", arguments: [true, false])
    func sameBehaviour(inMemory: Bool) throws {
        let store = TemporaryStore()
        let container = try Fixtures.container(inMemory ? .inMemory : .sqlite(store.url))
        let (projectID, taskIDs) = try Fixtures.seedProject(container.viewContext, name: "P", taskTitles: ["a", "b", "c"])
        let context = container.newBackgroundContext()
        try context.performAndWait {
            #expect(try context.count(for: FetchRequest(entityName: "Task", predicate: .key("project") == projectID)) == 3)
            context.delete(context.object(with: taskIDs[1]))
            try context.save()
            #expect(context.object(with: projectID).objectIDs(forKey: "tasks") == [taskIDs[0], taskIDs[2]])
        }
        #expect(try container.coordinator.checkIntegrity().isEmpty)
    }

    @Test("prepared statements are cached per connection")
    func statementCache() throws {
        let connection = try SQLiteConnection(path: ":memory:")
        let first = try connection.cachedStatement("SELECT 1")
        let second = try connection.cachedStatement("SELECT 1")
        #expect(first === second)
        #expect(try connection.cachedStatement("SELECT 2") !== first)
    }

    @Test("readers see a consistent snapshot and never wait for the writer's open transaction")
    func readersDoNotWait() throws {
        let store = TemporaryStore()
        let container = try Fixtures.container(.sqlite(store.url))
        try Fixtures.seedProject(container.viewContext, name: "P", taskTitles: ["a"])
        // Hold the write lock with an uncommitted insert; a read must still answer, without it.
        try container.coordinator.sqlite.writer.withConnection { writer in
            try writer.execute("BEGIN IMMEDIATE")
            try writer.execute("INSERT INTO \"Task\" (\"_pk\", \"_version\", \"title\") VALUES (100, 1, 'uncommitted')")
            let context = container.newBackgroundContext()
            let count = try context.performAndWait { try context.count(for: FetchRequest(entityName: "Task")) }
            #expect(count == 1)
            try writer.execute("ROLLBACK")
        }
    }

    @Test("fetches of ever new shapes do not grow a connection's statement cache without bound, and keep working")
    func statementCacheIsBounded() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try Fixtures.seedProject(context, name: "Apollo", taskTitles: ["a", "b", "c"])
        let limit = SQLiteConnection.statementCacheLimit
        try context.performAndWait {
            // Each limit is written into the SQL, so each fetch prepares a statement of its own.
            for n in 1...(limit + 100) {
                let found = try context.fetchObjectIDs(FetchRequest(entityName: "Task", predicate: .key("title") != "b", fetchLimit: n))
                #expect(found.count == min(n, 2))
            }
        }
        let cached = try container.coordinator.sqlite.writer.withConnection { $0.cachedStatementCount }
        #expect(cached > 0 && cached <= limit)
    }
}
