import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite

@Suite("Concurrency stress")
struct StressTests {
    /// How long the stress runs; shorter under ThreadSanitizer, which is ~10x slower.
    static let duration: TimeInterval = ProcessInfo.processInfo.environment["MANAGEDSTORE_STRESS_SECONDS"].flatMap(Double.init) ?? 3

    @Test("8 contexts inserting and updating concurrently: every acknowledged save is in the store, integrity holds")
    func eightContexts() async throws {
        let store = TemporaryStore()
        let container = try Fixtures.container(.sqlite(store.url, readerCount: 4, durability: .normal))
        let (projectID, _) = try Fixtures.seedProject(container.viewContext, name: "Shared", taskTitles: [])
        // A shared counter object that every worker increments with optimistic locking.
        let counterID = try container.viewContext.performAndWait {
            let task = container.viewContext.insertNewObject(forEntityName: "Task")
            task.setValue("counter", forKey: "title")
            task.setValue(0.0, forKey: "estimate")
            try container.viewContext.save()
            return task.objectID
        }
        let deadline = Date().addingTimeInterval(Self.duration)
        let results = try await withThrowingTaskGroup(of: (inserted: [ManagedObjectID], increments: Int, conflicts: Int).self) { group in
            for worker in 0..<8 {
                let context = container.newBackgroundContext(name: "worker-\(worker)")
                group.addTask {
                    try await context.perform {
                        var inserted: [ManagedObjectID] = []
                        var increments = 0, conflicts = 0, round = 0
                        // At least a few rounds even on a machine so loaded that the window
                        // passes before this block starts; at most 10,000.
                        while round < 5 || (Date() < deadline && round < 10_000) {
                            round += 1
                            // Insert a few tasks into the shared project, with a tag of this worker.
                            let project = context.object(with: projectID)
                            var batch: [ManagedObject] = []
                            for n in 0..<3 {
                                let task = context.insertNewObject(forEntityName: "Task")
                                task.setValue("w\(worker) r\(round) n\(n)", forKey: "title")
                                task.setValue(Int64(n), forKey: "priority")
                                task.setObject(project, forKey: "project")
                                batch.append(task)
                            }
                            // Update one of this worker's earlier tasks.
                            if let earlier = inserted.randomElement() {
                                let task = context.object(with: earlier)
                                task.setValue(Int64((task.value("priority", as: Int64.self)! + 1) % 6), forKey: "priority")
                            }
                            try context.save()
                            inserted += batch.map(\.objectID)
                            // Increment the shared counter; on conflict merge the store's value and retry.
                            while true {
                                let counter = context.object(with: counterID)
                                counter.setValue((counter.value("estimate", as: Double.self) ?? 0) + 1, forKey: "estimate")
                                do {
                                    try context.save()
                                    increments += 1
                                    break
                                } catch SaveError.conflict {
                                    conflicts += 1
                                    context.rollback()
                                    context.refresh(counter, mergeChanges: false)
                                }
                            }
                            if round % 20 == 0 { context.reset() }
                        }
                        return (inserted, increments, conflicts)
                    }
                }
            }
            var all: [(inserted: [ManagedObjectID], increments: Int, conflicts: Int)] = []
            for try await result in group { all.append(result) }
            return all
        }
        let insertedIDs = results.flatMap(\.inserted)
        let increments = results.map(\.increments).reduce(0, +)
        #expect(insertedIDs.count >= 8 * 3)
        #expect(Set(insertedIDs).count == insertedIDs.count, "every object got its own key")
        #expect(try container.coordinator.checkIntegrity() == [])
        let check = container.newBackgroundContext()
        try await check.perform {
            // No lost update: the counter holds exactly the number of acknowledged increments.
            let counter = try check.existingObject(with: counterID)
            #expect(counter.value("estimate", as: Double.self) == Double(increments))
            #expect(counter.version == Int64(increments) + 1)
            // Every acknowledged insert is there, in the shared project.
            let stored = Set(try check.fetchObjectIDs(FetchRequest(entityName: "Task", predicate: .key("project") == projectID)))
            #expect(stored == Set(insertedIDs))
            #expect(check.object(with: projectID).count(forKey: "tasks") == insertedIDs.count)
        }
    }
}
