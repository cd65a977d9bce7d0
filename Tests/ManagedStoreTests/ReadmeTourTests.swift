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

    @Test("the tour's write queue runs as the README shows it")
    func writeQueue() async throws {
        let model = try ManagedObjectModel(jsonData: Array(ManagedObjectModel.taskTrackerJSON.utf8))
        let container = try PersistentContainer(model: model, store: .inMemory)
        // README: begin queue
        let view = container.viewContext
        let queue = WriteQueue(coordinator: container.coordinator, mergingInto: view)
        queue.start()
        let tagID = try await queue.perform { context in
            let tag = context.insertNewObject(forEntityName: "Tag")
            tag.setValue("urgent", forKey: "label")
            try context.save()
            return tag.objectID
        }
        // Committed before perform returns: the view context reads the tag at once.
        let label = view.performAndWait { view.object(with: tagID).value("label", as: String.self) }
        struct Refused: Error {}
        do {
            try await queue.perform { context in
                context.insertNewObject(forEntityName: "Tag").setValue("draft", forKey: "label")
                try context.save()
                throw Refused()                              // nothing of this unit is kept
            }
        } catch is Refused {}
        queue.submit({ context in try context.count(for: FetchRequest(entityName: "Tag")) },
                     result: { result in print(result) })   // success(1), once committed
        queue.stop()                                         // waits for what was submitted
        // label == "urgent"
        // README: end queue
        #expect(label == "urgent")
        let tags = try view.performAndWait { try view.count(for: FetchRequest(entityName: "Tag")) }
        #expect(tags == 1)
    }

    @Test("the README's code blocks are the code the tests and the example package run, line for line")
    func readmeMatchesTests() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardizedFileURL
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        // Each file, and the names of its blocks ("" for the one after a bare "// README: begin").
        let sources: [(String, [String])] = [
            ("Tests/ManagedStoreTests/ReadmeTourTests.swift", ["", "queue"]),
            ("Tests/TypedModelTests/TypedModelTests.swift", [""]),
            ("Examples/ReadingList/Package.swift", ["package"]),
            ("Examples/ReadingList/Sources/ReadingList/main.swift", ["model", "path"]),
        ]
        for (path, names) in sources {
            let source = try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
            for name in names {
                let begin = "// README: begin" + (name.isEmpty ? "" : " " + name) + "\n", end = "// README: end" + (name.isEmpty ? "\n" : " " + name)
                let start = try #require(source.range(of: begin), "\(path) has no '\(begin)'")
                let stop = try #require(source.range(of: end, range: start.upperBound..<source.endIndex), "\(path) has no '\(end)'")
                // The block's lines, without the indentation they share.
                let lines = source[start.upperBound..<stop.lowerBound].split(separator: "\n", omittingEmptySubsequences: false).dropLast()
                let indent = lines.filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }.map { $0.prefix { $0 == " " }.count }.min() ?? 0
                let block = lines.map { String($0.dropFirst(min(indent, $0.prefix { $0 == " " }.count))) }.joined(separator: "\n")
                #expect(readme.contains(block), "README.md no longer holds the block after '\(begin)' in \(path)")
            }
        }
    }
}
