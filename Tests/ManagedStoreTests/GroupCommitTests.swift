import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite

@Suite("Group commit")
struct GroupCommitTests {
    @Test("saves inside one group commit: one COMMIT, a failing save rolls back alone, later saves see earlier ones")
    func savepointsPerSave() throws {
        let store = TemporaryStore()
        let container = try PersistentContainer(model: .taskTracker(), store: .sqlite(store.url))
        let (_, taskIDs) = try Fixtures.seedProject(container.viewContext, name: "P", taskTitles: ["a"])
        let writer = ManagedObjectContext(coordinator: container.coordinator, name: "writer", readsThroughWriter: true)
        let commitsBefore = container.coordinator.commitCount
        var outcomes: [String] = []
        try writer.performAndWait {
            try container.coordinator.performGroupCommit(in: writer) {
                // 1: an update.
                writer.object(with: taskIDs[0]).setValue("first", forKey: "title")
                try writer.save()
                outcomes.append("1 saved")
                // 2: invalid, fails alone.
                let bad = writer.insertNewObject(forEntityName: "Task")
                bad.setValue(Int64(99), forKey: "priority")
                do { try writer.save() } catch { outcomes.append("2 refused"); writer.rollback() }
                // 3: sees 1 (through the writer) and builds on it without a false conflict.
                writer.reset()
                let task = try writer.existingObject(with: taskIDs[0])
                #expect(task.value("title", as: String.self) == "first")
                #expect(task.version == 2)
                task.setValue("third", forKey: "title")
                let added = writer.insertNewObject(forEntityName: "Task")
                added.setValue("added", forKey: "title")
                try writer.save()
                outcomes.append("3 saved")
                // Readers do not see the group before its COMMIT.
                let reader = container.newBackgroundContext()
                let seen = try reader.performAndWait { try reader.existingObject(with: taskIDs[0]).value("title", as: String.self) }
                #expect(seen == "a")
            }
        }
        #expect(outcomes == ["1 saved", "2 refused", "3 saved"])
        #expect(container.coordinator.commitCount == commitsBefore + 1)
        let reader = container.newBackgroundContext()
        try reader.performAndWait {
            let task = try reader.existingObject(with: taskIDs[0])
            #expect(task.value("title", as: String.self) == "third")
            #expect(task.version == 3)
            #expect(try reader.count(for: FetchRequest(entityName: "Task")) == 2)
        }
    }

    @Test("an error after saves in a group commit leaves nothing written")
    func failingGroupWritesNothing() throws {
        let container = try Fixtures.container()
        let writer = ManagedObjectContext(coordinator: container.coordinator, name: "writer", readsThroughWriter: true)
        struct Abort: Error {}
        #expect(throws: Abort.self) {
            try writer.performAndWait {
                try container.coordinator.performGroupCommit(in: writer) {
                    let tag = writer.insertNewObject(forEntityName: "Tag")
                    tag.setValue("gone", forKey: "label")
                    try writer.save()
                    throw Abort()
                }
            }
        }
        writer.performAndWait { writer.reset() }
        let reader = container.newBackgroundContext()
        try reader.performAndWait {
            #expect(try reader.count(for: FetchRequest(entityName: "Tag")) == 0)
            // Keys handed out inside the rolled-back group are handed out again: nothing refers to them.
            let tag = reader.insertNewObject(forEntityName: "Tag")
            tag.setValue("kept", forKey: "label")
            try reader.save()
            #expect(tag.objectID.primaryKey == 1)
        }
    }

    @Test("a group knows when SQLite rolled its transaction back on its own, and restarts it for the saves still to come")
    func groupRolledBackBySQLite() throws {
        let store = TemporaryStore()
        let container = try PersistentContainer(model: .taskTracker(), store: .sqlite(store.url))
        let writer = ManagedObjectContext(coordinator: container.coordinator, name: "writer", readsThroughWriter: true)
        try container.coordinator.sqlite.writer.withConnection { connection in
            try connection.execute(#"CREATE TEMP TRIGGER "boom" BEFORE INSERT ON "Tag" WHEN NEW."label" = 'boom' BEGIN SELECT RAISE(ROLLBACK, 'boom'); END"#)
        }
        var outcomes: [String] = []
        try writer.performAndWait {
            try container.coordinator.performGroupCommit(in: writer) { group in
                for label in ["first", "boom", "third"] {
                    let tag = writer.insertNewObject(forEntityName: "Tag")
                    tag.setValue(label, forKey: "label")
                    do { try writer.save(); outcomes.append("\(label) saved") } catch { outcomes.append("\(label) failed"); writer.rollback() }
                    if !group.isIntact {
                        outcomes.append("lost")
                        writer.reset()
                        try group.restart()
                    }
                }
            }
        }
        #expect(outcomes == ["first saved", "boom failed", "lost", "third saved"])
        let reader = container.newBackgroundContext()
        let labels = try reader.performAndWait { try reader.fetch(FetchRequest(entityName: "Tag")).compactMap { $0.value("label", as: String.self) } }
        #expect(labels == ["third"], "the first save went with the transaction SQLite rolled back")
        #expect(try container.coordinator.checkIntegrity().isEmpty)
    }
}
