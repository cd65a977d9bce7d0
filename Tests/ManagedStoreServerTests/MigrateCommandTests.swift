import Foundation
import Testing
import ManagedStore
import ManagedStoreTestSupport

/// `managedstore migrate` and `managedstore check`, run as the built executable on a store
/// file holding the task tracker's objects: what they print, their exit statuses, and that
/// a dry run, a refusal and a check leave the file's bytes as they were.
@Suite("managedstore migrate and check")
struct MigrateCommandTests {
    /// A folder with a task-tracker store (two tasks in a project, then an update: two history
    /// transactions), the tracker's model file `v1.json`, and `v2.json`, where Task.title is
    /// renamed `name` and Task gets `notes`.
    final class Files: Sendable {
        let folder = TemporaryFolder()
        var store: String { folder.url.appendingPathComponent("tracker.sqlite").path }
        var v1: String { folder.url.appendingPathComponent("v1.json").path }
        var v2: String { folder.url.appendingPathComponent("v2.json").path }

        init() throws {
            let tracker = ManagedObjectModel.taskTracker()
            try Data(tracker.jsonValue.serialized().utf8).write(to: URL(fileURLWithPath: v1))
            let entities = tracker.entities.map { entity -> EntityDescription in
                guard entity.name == "Task" else { return entity }
                var task = entity
                task.attributes[0].name = "name"
                task.attributes[0].renamingIdentifier = "title"
                task.attributes.append(AttributeDescription(name: "notes", type: .string))
                return task
            }
            let v2Model = try ManagedObjectModel(name: tracker.name, version: 2, entities: entities)
            try Data(v2Model.jsonValue.serialized().utf8).write(to: URL(fileURLWithPath: v2))
            let container = try PersistentContainer(model: tracker, store: .sqlite(URL(fileURLWithPath: store)))
            let context = container.newBackgroundContext()
            try context.performAndWait {
                let project = context.insertNewObject(forEntityName: "Project")
                project.setValue("Apollo", forKey: "name")
                for title in ["Launch", "Land"] {
                    let task = context.insertNewObject(forEntityName: "Task")
                    task.setValue(title, forKey: "title")
                    task.setObject(project, forKey: "project")
                }
                try context.save()
                project.setValue(true, forKey: "archived")
                try context.save()
            }
        }

        /// A model file `name` with Task.priority a string: a change that cannot be inferred.
        func uninferable() throws -> String {
            let path = folder.url.appendingPathComponent("bad.json").path
            let entities = ManagedObjectModel.taskTracker().entities.map { entity -> EntityDescription in
                guard entity.name == "Task" else { return entity }
                var task = entity
                task.attributes[3].type = .string  // estimate, a double
                task.attributes.append(AttributeDescription(name: "owner", type: .string, isOptional: false))
                return task
            }
            let model = try ManagedObjectModel(name: "Tracker", version: 2, entities: entities)
            try Data(model.jsonValue.serialized().utf8).write(to: URL(fileURLWithPath: path))
            return path
        }

        var bytes: Data { get throws { try Data(contentsOf: URL(fileURLWithPath: store)) } }
    }

    static let steps = "rename attribute Task.title -> Task.name\nadd attribute Task.notes (string, optional)\n"

    @Test("--dry-run prints the steps and changes nothing; migrate runs them; again, the store already matches")
    func migrate() throws {
        let files = try Files()
        let before = try files.bytes
        let dry = try ServerProcess.run(["migrate", "--model", files.v2, "--store", files.store, "--dry-run"])
        #expect(dry.status == 0, "\(dry.stderr)")
        #expect(dry.stdout == Self.steps)
        #expect(try files.bytes == before)
        let run = try ServerProcess.run(["migrate", "--model", files.v2, "--store", files.store])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout == Self.steps)
        let again = try ServerProcess.run(["migrate", "--model", files.v2, "--store", files.store])
        #expect(again.status == 0 && again.stdout == "the store already matches the model\n", "\(again)")
        let model = try ManagedObjectModel(jsonData: [UInt8](Data(contentsOf: URL(fileURLWithPath: files.v2))))
        let container = try PersistentContainer(model: model, store: .sqlite(URL(fileURLWithPath: files.store)))
        #expect(container.coordinator.appliedMigration.isEmpty)
        let context = container.newBackgroundContext()
        let found = try context.performAndWait {
            try context.count(for: FetchRequest(entityName: "Task", predicate: try ObjectPredicate(format: "name == %@ AND notes == nil", "Land")))
        }
        #expect(found == 1)
    }

    @Test("a change that cannot be inferred: every reason on stderr, exit 65, the file unchanged")
    func refused() throws {
        let files = try Files()
        let before = try files.bytes
        let bad = try files.uninferable()
        for arguments in [["migrate"], ["migrate", "--dry-run"]] {
            let run = try ServerProcess.run(arguments + ["--model", bad, "--store", files.store])
            #expect(run.status == 65, "\(run)")
            #expect(run.stderr.contains("Task.estimate: type changed from double to string, which cannot be inferred"), "\(run.stderr)")
            #expect(run.stderr.contains("Task.owner: required attribute added without a default while Task has 2 objects"), "\(run.stderr)")
            #expect(run.stdout.isEmpty)
        }
        #expect(try files.bytes == before)
    }

    @Test("a missing store file is a clear message and exit 66, and no file is made")
    func missingStore() throws {
        let files = try Files()
        let missing = files.folder.url.appendingPathComponent("nope.sqlite").path
        for command in ["migrate", "check"] {
            let run = try ServerProcess.run([command, "--model", files.v1, "--store", missing])
            #expect(run.status == 66, "\(run)")
            #expect(run.stderr.contains("nope.sqlite: no such store file"), "\(run.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: missing))
    }

    @Test("check reads integrity, the model's match or migration, and history, without changing the file")
    func check() throws {
        let files = try Files()
        let before = try files.bytes
        let matches = try ServerProcess.run(["check", "--model", files.v1, "--store", files.store])
        #expect(matches.status == 0, "\(matches)")
        #expect(matches.stdout == """
            integrity: ok
            model: the store matches Tracker version 1
            history: 2 transactions, 4 changes, tokens 1 to 2

            """)
        let migratable = try ServerProcess.run(["check", "--model", files.v2, "--store", files.store])
        #expect(migratable.status == 0, "\(migratable)")
        #expect(migratable.stdout.contains("would be migrated to Tracker version 2:\n  rename attribute Task.title -> Task.name\n"), "\(migratable.stdout)")
        let refused = try ServerProcess.run(["check", "--model", try files.uninferable(), "--store", files.store])
        #expect(refused.status == 65, "\(refused)")
        #expect(refused.stdout.contains("cannot be migrated to Tracker version 2:\n  Task.estimate: type changed"), "\(refused.stdout)")
        #expect(refused.stdout.contains("integrity: ok") && refused.stdout.contains("history: 2 transactions"))
        #expect(try files.bytes == before)
    }

    @Test("the commands take their options from the environment too")
    func environment() throws {
        let files = try Files()
        let before = try files.bytes
        let run = try ServerProcess.run(["migrate"], environment: [
            "MANAGEDSTORE_MODEL": files.v2, "MANAGEDSTORE_STORE": files.store, "MANAGEDSTORE_DRY_RUN": "true"])
        #expect(run.status == 0, "\(run)")
        #expect(run.stdout == Self.steps)
        #expect(try files.bytes == before)
        let check = try ServerProcess.run(["check", "--demo"], environment: ["MANAGEDSTORE_STORE": files.store])
        #expect(check.status == 0 && check.stdout.contains("the store matches Tracker version 1"), "\(check)")
    }

    @Test("on a PostgreSQL store: check and --dry-run say what migrate will do and change nothing; migrate does it, once",
          .enabled(if: PostgresTestDatabase.isActive))
    func postgres() throws {
        let files = try Files()
        let uri = try PostgresTestDatabase.freshURI()
        var description = StoreDescription.inMemory
        description.location = .postgres(uri)
        let container = try PersistentContainer(model: .taskTracker(), store: description)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let task = context.insertNewObject(forEntityName: "Task")
            task.setValue("Land", forKey: "title")
            try context.save()
        }
        let before = try PostgresTestDatabase.contents(uri)
        let check = try ServerProcess.run(["check", "--model", files.v2, "--store", uri])
        #expect(check.status == 0, "\(check)")
        #expect(check.stdout.contains("integrity: ok\nmodel: the store (made with Tracker version 1) would be migrated to Tracker version 2:\n"
                                      + "  rename attribute Task.title -> Task.name\n"), "\(check.stdout)")
        let refused = try ServerProcess.run(["check", "--model", try files.uninferable(), "--store", uri])
        #expect(refused.status == 65 && refused.stdout.contains("cannot be migrated to Tracker version 2:\n  Task.estimate: type changed"), "\(refused)")
        let dry = try ServerProcess.run(["migrate", "--model", files.v2, "--store", uri, "--dry-run"])
        #expect(dry.status == 0 && dry.stdout == Self.steps, "\(dry)")
        let failed = try ServerProcess.run(["migrate", "--model", try files.uninferable(), "--store", uri])
        #expect(failed.status == 65 && failed.stderr.contains("Task.estimate: type changed"), "\(failed)")
        #expect(try PostgresTestDatabase.contents(uri) == before)
        let run = try ServerProcess.run(["migrate", "--model", files.v2, "--store", uri])
        #expect(run.status == 0 && run.stdout == Self.steps, "\(run)")
        let again = try ServerProcess.run(["migrate", "--model", files.v2, "--store", uri])
        #expect(again.status == 0 && again.stdout == "the store already matches the model\n", "\(again)")
        let matches = try ServerProcess.run(["check", "--model", files.v2, "--store", uri])
        #expect(matches.status == 0 && matches.stdout.contains("model: the store matches Tracker version 2"), "\(matches)")
        let model = try ManagedObjectModel(jsonData: [UInt8](Data(contentsOf: URL(fileURLWithPath: files.v2))))
        let migrated = try PersistentContainer(model: model, store: description)
        let found = try migrated.viewContext.performAndWait {
            try migrated.viewContext.count(for: FetchRequest(entityName: "Task", predicate: try ObjectPredicate(format: "name == %@ AND notes == nil", "Land")))
        }
        #expect(found == 1)
    }
}
