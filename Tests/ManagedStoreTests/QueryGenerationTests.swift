import Foundation
import Synchronization
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite

/// Query generations [NSQueryGenerationToken]: a pinned context reads one state of the store,
/// across fetches, counts, faults and perform blocks, while others save; and the one reader
/// pool that lends read contexts (`withReadContext`).
@Suite("Query generations and the reader pool")
struct QueryGenerationTests {
    private static let allTasks = FetchRequest(entityName: "Task", sortDescriptors: [ObjectSortDescriptor("title")])

    /// A file store with a project of tasks "a", "b", "c".
    private static func seeded() throws -> (TemporaryStore, PersistentContainer, ManagedObjectContext, [ManagedObjectID]) {
        let store = TemporaryStore()
        let container = try Fixtures.container(.path(store.url.path, readerCount: 2))
        let writer = container.newBackgroundContext(name: "writer")
        let (_, tasks) = try Fixtures.seedProject(writer, name: "Apollo", taskTitles: ["a", "b", "c"])
        return (store, container, writer, tasks)
    }

    /// Renames task 0, deletes task 1 and inserts "d" and "e", in one save.
    private static func changeEverything(_ writer: ManagedObjectContext, _ tasks: [ManagedObjectID]) throws {
        try writer.performAndWait { () throws in
            try writer.existingObject(with: tasks[0]).setValue("a2", forKey: "title")
            writer.delete(try writer.existingObject(with: tasks[1]))
            for title in ["d", "e"] { writer.insertNewObject(forEntityName: "Task").setValue(title, forKey: "title") }
            try writer.save()
        }
    }

    private static func titles(_ context: ManagedObjectContext) throws -> [String] {
        try context.performAndWait { try context.fetch(allTasks).map { $0.value("title", as: String.self) ?? "?" } }
    }

    @Test("a pinned context reads one generation in fetches, counts and faults while another saves; unpinned it reads the latest")
    func pinnedContextSeesOneGeneration() throws {
        let (store, container, writer, tasks) = try Self.seeded()
        defer { withExtendedLifetime(store) {} }
        let pinned = container.newBackgroundContext(name: "pinned")
        try pinned.performAndWait { () throws in
            #expect(pinned.queryGenerationToken == nil)
            try pinned.setQueryGenerationFrom(.current)
            #expect(pinned.queryGenerationToken != nil && pinned.queryGenerationToken != .current)
            #expect(try pinned.count(for: Self.allTasks) == 3)  // the generation is taken here
        }
        try Self.changeEverything(writer, tasks)

        #expect(try Self.titles(pinned) == ["a", "b", "c"])
        try pinned.performAndWait { () throws in
            #expect(try pinned.count(for: Self.allTasks) == 3)
            // A fault fired now reads the generation too: task b, deleted since, is still there.
            #expect(try pinned.existingObject(with: tasks[1]).value("title", as: String.self) == "b")
            #expect(try pinned.existingObject(with: tasks[0]).value("title", as: String.self) == "a")
            // The same in one snapshot block.
            #expect(try pinned.performInSnapshot { try pinned.count(for: Self.allTasks) } == 3)
        }
        // Another context pinned to its token reads the same generation; an unpinned one moves on.
        let sharing = container.newBackgroundContext(name: "sharing")
        let token = pinned.performAndWait { pinned.queryGenerationToken }
        try sharing.performAndWait { try sharing.setQueryGenerationFrom(token) }
        #expect(try Self.titles(sharing) == ["a", "b", "c"])
        #expect(try Self.titles(container.newBackgroundContext(name: "latest")) == ["a2", "c", "d", "e"])

        try pinned.performAndWait { () throws in
            try pinned.setQueryGenerationFrom(nil)
            #expect(pinned.queryGenerationToken == nil)
            pinned.reset()
        }
        #expect(try Self.titles(pinned) == ["a2", "c", "d", "e"])
    }

    @Test("a pinned context saves against the latest state (conflicts found, merges from it) and then reads the current generation")
    func pinnedContextSavesAgainstLatest() throws {
        let (store, container, writer, tasks) = try Self.seeded()
        defer { withExtendedLifetime(store) {} }
        let pinned = container.newBackgroundContext(name: "pinned")
        try pinned.performAndWait { () throws in
            try pinned.setQueryGenerationFrom(.current)
            #expect(try pinned.existingObject(with: tasks[2]).value("title", as: String.self) == "c")
        }
        try Self.changeEverything(writer, tasks)
        try writer.performAndWait { () throws in
            try writer.existingObject(with: tasks[2]).setValue("c2", forKey: "title")
            try writer.save()
        }
        let before = pinned.performAndWait { pinned.queryGenerationToken }
        // Under `error` the change to c conflicts with the writer's, which the pinned generation
        // does not show: the save compares with the store's latest state.
        pinned.performAndWait {
            try? pinned.existingObject(with: tasks[2]).setValue(5, forKey: "priority")
            #expect(throws: SaveError.self) { try pinned.save() }
        }
        #expect(pinned.performAndWait { pinned.queryGenerationToken } == before)  // a failed save stays pinned where it was
        try pinned.performAndWait { () throws in
            let saved = try pinned.save(mergePolicy: .objectTrump)
            #expect(saved.updated == [tasks[2]])
            let task = try pinned.existingObject(with: tasks[2])
            #expect(task.value("title", as: String.self) == "c2")  // merged from the latest state
            #expect(task.value("priority", as: Int.self) == 5)
            // Pinned still, now to the generation after its own save.
            #expect(pinned.queryGenerationToken != nil && pinned.queryGenerationToken != before)
            #expect(try pinned.count(for: Self.allTasks) == 4)
        }
    }

    @Test("reset moves a pinned context to the current generation, still pinned")
    func resetAdvances() throws {
        let (store, container, writer, tasks) = try Self.seeded()
        defer { withExtendedLifetime(store) {} }
        let pinned = container.newBackgroundContext(name: "pinned")
        try pinned.performAndWait { () throws in
            try pinned.setQueryGenerationFrom(.current)
            #expect(try pinned.count(for: Self.allTasks) == 3)
        }
        try Self.changeEverything(writer, tasks)
        #expect(try pinned.performAndWait { try pinned.count(for: Self.allTasks) } == 3)
        pinned.performAndWait { pinned.reset() }
        #expect(try Self.titles(pinned) == ["a2", "c", "d", "e"])
        try writer.performAndWait { () throws in
            writer.insertNewObject(forEntityName: "Task").setValue("f", forKey: "title")
            try writer.save()
        }
        #expect(try Self.titles(pinned) == ["a2", "c", "d", "e"])  // pinned again, at the reset
    }

    @Test("what cannot be pinned is a typed error: an in-memory store, the writer's context, another store's token")
    func pinningErrors() throws {
        // The SQLite store's in-memory database keeps no older states (the other stores do).
        let memory = try PersistentContainer(model: Fixtures.tracker, store: .inMemory)
        let context = memory.newBackgroundContext()
        context.performAndWait {
            #expect(throws: QueryGenerationError.inMemoryStore) { try context.setQueryGenerationFrom(.current) }
            #expect(context.queryGenerationToken == nil)
        }
        let (store, container, _, _) = try Self.seeded()
        defer { withExtendedLifetime(store) {} }
        let throughWriter = ManagedObjectContext(coordinator: container.coordinator, name: "w", readsThroughWriter: true)
        throughWriter.performAndWait {
            _ = #expect(throws: QueryGenerationError.readsThroughWriter) { try throughWriter.setQueryGenerationFrom(.current) }
        }
        let other = TemporaryStore()
        let otherContainer = try Fixtures.container(.path(other.url.path))
        let foreign = try otherContainer.newBackgroundContext().performAndWait { () throws -> QueryGenerationToken? in
            let c = otherContainer.newBackgroundContext()
            return try c.performAndWait {
                try c.setQueryGenerationFrom(.current)
                return c.queryGenerationToken
            }
        }
        let mine = container.newBackgroundContext()
        mine.performAndWait {
            _ = #expect(throws: QueryGenerationError.foreignToken) { try mine.setQueryGenerationFrom(foreign) }
        }
        withExtendedLifetime(other) {}
    }

    // MARK: The reader pool

    @Test("withReadContext lends at most readerCount contexts at once, each reading the latest save, and takes them back reset and unpinned",
          arguments: [false, true])
    func readContextsComeFromOnePool(inMemory: Bool) throws {
        let store = TemporaryStore()
        defer { withExtendedLifetime(store) {} }
        let container = try Fixtures.container(inMemory ? StoreDescription(location: .inMemory, readerCount: 2)
                                                        : .path(store.url.path, readerCount: 2))
        let writer = container.newBackgroundContext(name: "writer")
        let (_, tasks) = try Fixtures.seedProject(writer, name: "Apollo", taskTitles: ["a"])
        let coordinator = container.coordinator
        let busy = Mutex((now: 0, most: 0))
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 6) { i in
            do {
                try coordinator.withReadContext { context in
                    busy.withLock { $0.now += 1; $0.most = max($0.most, $0.now) }
                    defer { busy.withLock { $0.now -= 1 } }
                    #expect(context.registeredObjects.isEmpty, "a lent context comes clean")
                    #expect(context.queryGenerationToken == nil)
                    if !inMemory { try context.setQueryGenerationFrom(.current) }  // undone when it goes back
                    _ = try context.existingObject(with: tasks[0])
                    Thread.sleep(forTimeInterval: 0.05)
                }
            } catch {
                failures.withLock { $0.append("\(i): \(error)") }
            }
        }
        #expect(failures.withLock { $0 } == [])
        #expect(busy.withLock { $0.most } <= 2)
        for round in 1...5 {
            try writer.performAndWait { () throws in
                try writer.existingObject(with: tasks[0]).setValue("a\(round)", forKey: "title")
                try writer.save()
            }
            let title = try coordinator.withReadContext { context in try context.existingObject(with: tasks[0]).value("title", as: String.self) }
            #expect(title == "a\(round)")
        }
    }

    @Test("a coordinator whose pool lent read contexts is freed when its last user lets go (its contexts do not keep it alive)")
    func pooledContextsDoNotLeakTheCoordinator() throws {
        let store = TemporaryStore()
        defer { withExtendedLifetime(store) {} }
        weak var freed: PersistentStoreCoordinator?
        do {
            let container = try Fixtures.container(.path(store.url.path, readerCount: 2))
            try Fixtures.seedProject(container.newBackgroundContext(), name: "Apollo", taskTitles: ["a"])
            let count = try container.coordinator.withReadContext { context in try context.count(for: Self.allTasks) }
            #expect(count == 1)
            freed = container.coordinator
        }
        #expect(freed == nil)
    }
}
