import Foundation
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStorePostgreSQL
@testable import ManagedStoreSQLite
import ManagedStoreTestSupport

/// A fresh store file in its own temporary folder, removed when the value goes away.
final class TemporaryStore: Sendable {
    let directory: URL
    var url: URL { directory.appendingPathComponent("store.sqlite") }

    init() {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("managedstore-tests-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: directory) }
}

/// Which store the suites' in-memory containers are: the SQLite store's in-memory database
/// (the default), the dictionary store (`MANAGEDSTORE_TEST_STORE=dictionary`: `make
/// test-dictionary-store`), or a PostgreSQL database (`MANAGEDSTORE_TEST_STORE=postgres` with
/// `MANAGEDSTORE_TEST_POSTGRES` its URI: `make test-postgres-store` starts a throw-away cluster).
enum TestStore {
    static let isDictionary = ProcessInfo.processInfo.environment["MANAGEDSTORE_TEST_STORE"] == "dictionary"
    static var isPostgres: Bool { PostgresTestDatabase.isActive }

    /// A store of its own in the test database: a new schema, named on the URI's search path.
    static func freshPostgresStore(base: StoreDescription) throws -> StoreDescription {
        try PostgresTestDatabase.freshStore(base: base)
    }
}

enum Fixtures {
    static let tracker = ManagedObjectModel.taskTracker()

    /// A container over the task tracker, in memory or in a file. In memory it is the
    /// dictionary store when `TestStore.isDictionary`, a PostgreSQL schema of its own when
    /// `TestStore.isPostgres`.
    static func container(_ store: StoreDescription = .inMemory, model: ManagedObjectModel = tracker) throws -> PersistentContainer {
        if TestStore.isDictionary, store.location == .inMemory {
            return PersistentContainer(coordinator: PersistentStoreCoordinator(model: model, store: DictionaryStore(model: model, description: store)))
        }
        if TestStore.isPostgres, store.location == .inMemory {
            return try PersistentContainer(model: model, store: TestStore.freshPostgresStore(base: store))
        }
        return try PersistentContainer(model: model, store: store)
    }

    /// Inserts a project named `name` with `taskTitles` tasks, saves, and returns their IDs.
    @discardableResult
    static func seedProject(_ context: ManagedObjectContext, name: String, taskTitles: [String]) throws -> (ManagedObjectID, [ManagedObjectID]) {
        try context.performAndWait {
            let project = context.insertNewObject(forEntityName: "Project")
            project.setValue(name, forKey: "name")
            let tasks = taskTitles.map { title -> ManagedObject in
                let task = context.insertNewObject(forEntityName: "Task")
                task.setValue(title, forKey: "title")
                task.setObject(project, forKey: "project")
                return task
            }
            try context.save()
            return (project.objectID, tasks.map(\.objectID))
        }
    }
}

extension PersistentStoreCoordinator {
    /// The SQLite store under the coordinator, for the tests of SQLite's own behaviour.
    var sqlite: SQLiteStore { store as! SQLiteStore }
}

extension SQLiteStore {
    /// `body` on one of the store's reader connections, in a snapshot of the latest state.
    func readConnection<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        try read(throughWriter: false) { session in try body(session as! SQLiteConnection) }
    }
}
