import Foundation
import Testing
import ManagedStore

/// The README's library tour, run as written (keep the two in step).
@Suite("README tour")
struct ReadmeTourTests {
    @Test("the tour runs as the README shows it")
    func tour() async throws {
        // README: begin
        let model = try ManagedObjectModel(jsonData: Array(ManagedObjectModel.taskTrackerJSON.utf8))
        let container = try PersistentContainer(model: model, store: .inMemory)  // or .sqlite(url)

        // Write on a background context: objects live on its queue, IDs travel.
        let writer = container.newBackgroundContext()
        let taskID = try await writer.perform {
            let project = writer.insertNewObject(forEntityName: "Project")
            project.setValue("Apollo", forKey: "name")
            let task = writer.insertNewObject(forEntityName: "Task")
            task.setValue("Launch", forKey: "title")
            task.setValue(Int64(5), forKey: "priority")
            task.setObject(project, forKey: "project")   // project.tasks now holds task too
            try writer.save()                             // temporary IDs become permanent
            return task.objectID                          // Sendable: "Task/1"
        }

        // Read on another context with a predicate, sort and limit.
        let reader = container.newBackgroundContext()
        let titles = try await reader.perform {
            let request = FetchRequest(entityName: "Task",
                                       predicate: .key("priority") >= 3 && .key("project.name") == "Apollo",
                                       sortDescriptors: [ObjectSortDescriptor("title")],
                                       fetchLimit: 20)
            return try reader.fetch(request).compactMap { $0.value("title", as: String.self) }
        }

        // Optimistic locking: a save based on a stale version fails with the conflict.
        _ = await reader.perform { reader.object(with: taskID).value("title", as: String.self) }
        try await writer.perform {
            writer.object(with: taskID).setValue(true, forKey: "done")
            try writer.save()
        }
        let outcome = await reader.perform { () -> String in
            reader.object(with: taskID).setValue("Launch!", forKey: "title")
            do {
                try reader.save()
                return "saved"
            } catch SaveError.conflict(let conflicts, _) {
                return "conflict on \(conflicts[0].objectID): version \(conflicts[0].oldVersion) -> \(conflicts[0].newVersion)"
            } catch {
                return "\(error)"
            }
        }
        // README: end
        #expect(titles == ["Launch"])
        #expect(outcome == "conflict on Task/1: version 1 -> 2")
    }
}
