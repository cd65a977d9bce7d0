import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite

/// Readers keep their read transaction open between reads while nothing is committed
/// (ReaderPool). These pin down what that must never change: a read after a save sees it, and
/// no idle reader holds back a checkpoint.
@Suite("Reader snapshots reused between reads")
struct ReaderSnapshotTests {
    /// A file store with `readers` reader connections and one saved task.
    private static func seeded(readers: Int) throws -> (TemporaryStore, PersistentContainer, ManagedObjectContext, ManagedObjectID) {
        let store = TemporaryStore()
        let container = try Fixtures.container(.path(store.url.path, readerCount: readers))
        let writer = container.newBackgroundContext(name: "writer")
        let (_, ids) = try Fixtures.seedProject(writer, name: "Apollo", taskTitles: ["t"])
        return (store, container, writer, ids[0])
    }

    /// Runs a TRUNCATE checkpoint, which reports busy while any reader still uses an old snapshot.
    private static func truncatingCheckpointIsBusy(_ container: PersistentContainer) throws -> Bool {
        try container.coordinator.sqlite.writer.withConnection { connection in
            try connection.withStatement("PRAGMA wal_checkpoint(TRUNCATE)") { statement throws(StoreError) in
                try statement.step() ? statement.int64(0) != 0 : true
            }
        }
    }

    @Test("every read after a save sees it, from every reader, read after read")
    func readsAfterSaveSeeIt() throws {
        let (store, container, writer, task) = try Self.seeded(readers: 3)
        defer { withExtendedLifetime(store) {} }
        let reader = container.newBackgroundContext(name: "reader")
        for round in 1...20 {
            // Several reads first, so every reader of the pool holds a snapshot of the old state.
            for _ in 0..<6 {
                let title = try reader.performAndWait { try reader.existingObject(with: task).value("title", as: String.self) }
                #expect(title == (round == 1 ? "t" : "title \(round - 1)"))
                reader.performAndWait { reader.reset() }
            }
            try writer.performAndWait {
                try writer.existingObject(with: task).setValue("title \(round)", forKey: "title")
                try writer.save()
            }
            let seen = try reader.performAndWait { try reader.existingObject(with: task).value("title", as: String.self) }
            #expect(seen == "title \(round)")
            reader.performAndWait { reader.reset() }
        }
    }

    @Test("after a commit no idle reader holds an old snapshot: the WAL checkpoints completely")
    func idleReadersDoNotBlockCheckpoints() throws {
        let (store, container, writer, task) = try Self.seeded(readers: 4)
        defer { withExtendedLifetime(store) {} }
        let readers = (0..<4).map { container.newBackgroundContext(name: "reader-\($0)") }
        // Four readers reading at once, so that all four connections hold a snapshot.
        DispatchQueue.concurrentPerform(iterations: 64) { i in
            let reader = readers[i % 4]
            reader.performAndWait {
                _ = try? reader.existingObject(with: task).value("title", as: String.self)
                reader.reset()
            }
        }
        try writer.performAndWait {
            try writer.existingObject(with: task).setValue("changed", forKey: "title")
            try writer.save()
        }
        #expect(try Self.truncatingCheckpointIsBusy(container) == false)
    }

    @Test("a read between every two commits does not keep the WAL from being emptied: it stays under 16 MiB")
    func walBoundedWithReadsBetweenCommits() throws {
        // Each read leaves its reader idle with a snapshot of the latest commit; SQLite's own
        // checkpoint, inside the next COMMIT, could never copy back that commit's frames, so the
        // WAL never restarted and grew by every commit (tens of MB over this loop).
        let (store, container, writer, _) = try Self.seeded(readers: 2)
        defer { withExtendedLifetime(store) {} }
        let reader = container.newBackgroundContext(name: "reader")
        var largest: Int64 = 0
        for round in 0..<6_000 {
            let id: ManagedObjectID = try writer.performAndWait {
                let task = writer.insertNewObject(forEntityName: "Task")
                task.setValue("round \(round) " + String(repeating: "x", count: 200), forKey: "title")
                try writer.save()
                writer.reset()
                return task.objectID
            }
            let seen = try reader.performAndWait { try reader.withStoredObject(id) { $0.version } }
            #expect(seen == 1)
            largest = max(largest, container.coordinator.walSize)
        }
        #expect(largest < 16 << 20, "the WAL reached \(largest) bytes")
        // And at the end a checkpoint empties it.
        try container.coordinator.settle()
        #expect(container.coordinator.walSize == 0)
    }

    @Test("with the file memory-mapped, reads see every save, also after a checkpoint moved it into the file")
    func memoryMappedReadsSeeCheckpointedSaves() throws {
        let (store, container, writer, task) = try Self.seeded(readers: 2)
        defer { withExtendedLifetime(store) {} }
        let reader = container.newBackgroundContext(name: "reader")
        for round in 1...10 {
            try writer.performAndWait {
                try writer.existingObject(with: task).setValue("title \(round)", forKey: "title")
                try writer.save()
            }
            // Every other round the save is checkpointed into the mapped file and the WAL emptied.
            if round.isMultiple(of: 2) {
                #expect(try Self.truncatingCheckpointIsBusy(container) == false)
            }
            let seen = try reader.performAndWait { try reader.withStoredObject(task) { $0.value(ofAttributeAt: 0) } }
            #expect(seen == .string("title \(round)"))
        }
    }

    @Test("memoryMapSize is what every reader maps, 0 turns mapping off, and the writer is never mapped")
    func memoryMapSizeApplies() throws {
        for size in [0, 1 << 20, StoreDescription.sqlite(URL(fileURLWithPath: "/unused")).memoryMapSize] {
            let store = TemporaryStore()
            defer { withExtendedLifetime(store) {} }
            var description = StoreDescription.sqlite(store.url, readerCount: 2)
            description.memoryMapSize = size
            let coordinator = try PersistentStoreCoordinator(model: Fixtures.tracker, store: description)
            let query = "PRAGMA mmap_size"
            let insideWriteTransaction = try coordinator.sqlite.writer.withConnection { try $0.scalarInt(query) }
            let onReader = try coordinator.sqlite.readConnection { try $0.scalarInt(query) }
            #expect(insideWriteTransaction == 0 && onReader == Int64(size))
        }
    }
}
