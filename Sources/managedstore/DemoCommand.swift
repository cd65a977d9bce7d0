import ArgumentParser
import Foundation
import ManagedStore

/// `managedstore demo`: the library at work on the built-in task tracker, one context writing
/// on a background queue while another reads.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Create or open a task-tracker store, insert objects on a background context while another context reads, and report.")

    @Option(help: "The store file (created with its folder if missing), or :memory:.")
    var store = "./data/demo.sqlite"

    @Option(help: "How many tasks to insert.")
    var tasks = 3000

    @Option(help: "Save (and reset) the writing context after this many tasks.")
    var batch = 500

    func validate() throws {
        guard tasks > 0, batch > 0 else { throw ValidationError("--tasks and --batch must be positive") }
    }

    func run() async throws {
        let started = Date()
        let container: PersistentContainer
        do {
            container = try PersistentContainer(model: .taskTracker(), store: .path(store))
        } catch {
            print("managedstore demo: \(error)")
            throw ExitCode(1)
        }
        print("store   \(store) (id \(container.coordinator.storeIdentifier))")
        let writer = container.newBackgroundContext(name: "writer")
        let reader = container.newBackgroundContext(name: "reader")
        let taskCount = tasks, batchSize = batch

        // The writer: a run's projects and tags, then tasks in batches, each batch one save.
        async let written: (projects: Int, tags: Int, saves: Int) = writer.perform {
            let run = try writer.count(for: FetchRequest(entityName: "Project")) / 5 + 1
            var projects: [ManagedObject] = []
            for i in 1...5 {
                let project = writer.insertNewObject(forEntityName: "Project")
                project.setValue("Run \(run) project \(i)", forKey: "name")
                projects.append(project)
            }
            let labels = ["urgent", "bug", "feature", "docs"]
            var tags: [ManagedObject] = []
            for label in labels {
                let existing = try writer.fetch(FetchRequest(entityName: "Tag", predicate: .key("label") == label)).first
                tags.append(existing ?? {
                    let tag = writer.insertNewObject(forEntityName: "Tag")
                    tag.setValue(label, forKey: "label")
                    return tag
                }())
            }
            try writer.save()
            let projectIDs = projects.map(\.objectID), tagIDs = tags.map(\.objectID)
            var saves = 1
            for n in 0..<taskCount {
                let task = writer.insertNewObject(forEntityName: "Task")
                task.setValue("Task \(n + 1) of run \(run)", forKey: "title")
                task.setValue(Int64(n % 6), forKey: "priority")
                task.setValue(n % 3 == 0, forKey: "done")
                task.setValue(Double(n % 8) * 0.5, forKey: "estimate")
                task.setValue(Date(timeIntervalSinceNow: Double(n) * 3600), forKey: "due")
                task.setObject(writer.object(with: projectIDs[n % projectIDs.count]), forKey: "project")
                if n % 4 == 0 { task.addObject(writer.object(with: tagIDs[n % tagIDs.count]), toKey: "tags") }
                if (n + 1) % batchSize == 0 || n + 1 == taskCount {
                    try writer.save()
                    writer.reset()  // keep memory flat, as a long import should
                    saves += 1
                }
            }
            return (projects.count, tags.count, saves)
        }

        // The reader: polls counts on its own context while the writer works; never waits for it.
        async let observed: [Int] = reader.perform {
            var counts: [Int] = []
            let deadline = Date().addingTimeInterval(30)
            while Date() < deadline {
                let n = try reader.count(for: FetchRequest(entityName: "Task"))
                if counts.last != n { counts.append(n) }
                if counts.count > 1 && n >= taskCount + (counts.first ?? 0) { break }
                Thread.sleep(forTimeInterval: 0.005)
            }
            return counts
        }

        let (summary, counts) = try await (written, observed)
        let report = try await reader.perform {
            let total = try reader.count(for: FetchRequest(entityName: "Task"))
            let urgentOpen = try reader.count(for: FetchRequest(entityName: "Task", predicate: .key("done") == false && .key("priority") >= 4))
            let sample = try reader.fetch(FetchRequest(entityName: "Task", predicate: .key("project.name") != nil,
                                                        sortDescriptors: [ObjectSortDescriptor("priority", ascending: false), ObjectSortDescriptor("title")],
                                                        fetchLimit: 3))
            let lines = sample.map { task in
                "  \(task.objectID)  \(task.value("title", as: String.self) ?? "")  priority \(task.value("priority", as: Int64.self) ?? 0)  "
                    + "in \(task.object(forKey: "project")?.value("name", as: String.self) ?? "-")  tags \(task.objectIDs(forKey: "tags").map(\.description))"
            }
            return (total, urgentOpen, lines)
        }
        print("wrote   \(summary.projects) projects, \(summary.tags) tags and \(taskCount) tasks in \(summary.saves) saves on the 'writer' context")
        print("read    the 'reader' context saw the task count go \(counts.map(String.init).joined(separator: " -> ")) while the writer worked")
        print("store   \(report.0) tasks in all; \(report.1) open with priority >= 4; commits this run: \(container.coordinator.commitCount)")
        print("sample  (sorted by priority desc, title):")
        report.2.forEach { print($0) }
        print(String(format: "done    in %.2f s", Date().timeIntervalSince(started)))
    }
}
