import Foundation
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite

/// A seeded generator of task-tracker operations that are always valid (unique names, values
/// in range, no tag deleted while it holds tasks), for running the same script in two stacks.
struct RandomOperationScript {
    enum Operation: Sendable {
        case insertProject(String)
        case insertTask(String, project: String?, priority: Int64)
        case insertTag(String)
        case setPriority(String, Int64)
        case setDone(String, Bool)
        case setEstimate(String, Double?)
        case moveTask(String, to: String?)
        case addTag(String, task: String)
        case removeTag(String, task: String)
        case archiveProject(String, Bool)
        case deleteTask(String)
        case deleteProject(String)
        case deleteTag(String)
    }

    private var random: PredicateFuzzTests.SplitMix64
    private var counter = 0
    /// What exists after the operations so far: project → its tasks, task → its project and
    /// tags, tag → its tasks.
    private var projects: [String: Set<String>] = [:]
    private var tasks: [String: (project: String?, tags: Set<String>)] = [:]
    private var tags: [String: Set<String>] = [:]

    init(seed: UInt64) { random = PredicateFuzzTests.SplitMix64(seed: seed) }

    mutating func nextRound() -> [Operation] {
        (0..<Int.random(in: 6...14, using: &random)).map { _ in next() }
    }

    private mutating func name(_ prefix: String) -> String {
        counter += 1
        return "\(prefix)\(counter)"
    }

    private mutating func pick(_ keys: some Collection<String>) -> String? {
        keys.sorted().randomElement(using: &random)
    }

    private mutating func next() -> Operation {
        let taskNames = tasks.keys, projectNames = projects.keys, tagNames = tags.keys
        switch Int.random(in: 0..<13, using: &random) {
        case 0:
            let project = name("project-")
            projects[project] = []
            return .insertProject(project)
        case 1, 2:
            let task = name("task-"), project = Bool.random(using: &random) ? pick(projectNames) : nil
            tasks[task] = (project, [])
            if let project { projects[project]!.insert(task) }
            return .insertTask(task, project: project, priority: Int64.random(in: 0...5, using: &random))
        case 3:
            let tag = name("tag-")
            tags[tag] = []
            return .insertTag(tag)
        case 4 where !taskNames.isEmpty:
            return .setPriority(pick(taskNames)!, Int64.random(in: 0...5, using: &random))
        case 5 where !taskNames.isEmpty:
            return .setDone(pick(taskNames)!, Bool.random(using: &random))
        case 6 where !taskNames.isEmpty:
            return .setEstimate(pick(taskNames)!, Bool.random(using: &random) ? Double(Int.random(in: 1...40, using: &random)) / 4 : nil)
        case 7 where !taskNames.isEmpty:
            let task = pick(taskNames)!, target = Bool.random(using: &random) ? pick(projectNames) : nil
            if let old = tasks[task]!.project { projects[old]!.remove(task) }
            if let target { projects[target]!.insert(task) }
            tasks[task]!.project = target
            return .moveTask(task, to: target)
        case 8 where !taskNames.isEmpty && !tagNames.isEmpty:
            let task = pick(taskNames)!, tag = pick(tagNames)!
            tasks[task]!.tags.insert(tag)
            tags[tag]!.insert(task)
            return .addTag(tag, task: task)
        case 9 where tags.values.contains { !$0.isEmpty }:
            let tag = pick(tags.filter { !$0.value.isEmpty }.keys)!, task = pick(tags[tag]!)!
            tasks[task]!.tags.remove(tag)
            tags[tag]!.remove(task)
            return .removeTag(tag, task: task)
        case 10 where !projectNames.isEmpty:
            return .archiveProject(pick(projectNames)!, Bool.random(using: &random))
        case 11 where !taskNames.isEmpty:
            let task = pick(taskNames)!
            forget(task: task)
            return .deleteTask(task)
        case 12 where !projectNames.isEmpty:
            let project = pick(projectNames)!
            for task in projects[project]! { forget(task: task) }  // cascade
            projects[project] = nil
            return .deleteProject(project)
        case 12 where tags.values.contains(where: \.isEmpty):
            let tag = pick(tags.filter { $0.value.isEmpty }.keys)!
            tags[tag] = nil
            return .deleteTag(tag)
        default:
            let tag = name("tag-")
            tags[tag] = []
            return .insertTag(tag)
        }
    }

    private mutating func forget(task: String) {
        guard let (project, taskTags) = tasks[task] else { return }
        if let project { projects[project]?.remove(task) }
        for tag in taskTags { tags[tag]?.remove(task) }
        tasks[task] = nil
    }
}

struct MissingObject: Error { let key: String }

extension RandomOperationScript.Operation {
    /// Runs the operation in `context`, finding objects by their unique names with fetches.
    func apply(in context: ManagedObjectContext) throws {
        func find(_ entity: String, _ key: String, _ value: String) throws -> ManagedObject {
            guard let object = try context.fetch(FetchRequest(entityName: entity, predicate: .key(key) == value)).first else {
                throw MissingObject(key: value)
            }
            return object
        }
        func task(_ title: String) throws -> ManagedObject { try find("Task", "title", title) }
        func project(_ name: String) throws -> ManagedObject { try find("Project", "name", name) }
        func tag(_ label: String) throws -> ManagedObject { try find("Tag", "label", label) }
        switch self {
        case .insertProject(let name):
            context.insertNewObject(forEntityName: "Project").setValue(name, forKey: "name")
        case let .insertTask(title, projectName, priority):
            let object = context.insertNewObject(forEntityName: "Task")
            object.setValue(title, forKey: "title")
            object.setValue(priority, forKey: "priority")
            if let projectName { object.setObject(try project(projectName), forKey: "project") }
        case .insertTag(let label):
            context.insertNewObject(forEntityName: "Tag").setValue(label, forKey: "label")
        case let .setPriority(title, priority):
            try task(title).setValue(priority, forKey: "priority")
        case let .setDone(title, done):
            try task(title).setValue(done, forKey: "done")
        case let .setEstimate(title, estimate):
            try task(title).setValue(estimate, forKey: "estimate")
        case let .moveTask(title, target):
            try task(title).setObject(try target.map(project), forKey: "project")
        case let .addTag(label, title):
            try task(title).addObject(try tag(label), toKey: "tags")
        case let .removeTag(label, title):
            try tag(label).removeObject(try task(title), fromKey: "tasks")
        case let .archiveProject(name, archived):
            try project(name).setValue(archived, forKey: "archived")
        case .deleteTask(let title):
            context.delete(try task(title))
        case .deleteProject(let name):
            context.delete(try project(name))
        case .deleteTag(let label):
            context.delete(try tag(label))
        }
    }
}

/// Everything a store holds, by the objects' unique names (not their keys), versions included.
struct StoreDump: Equatable, CustomStringConvertible {
    var projects: [String: String] = [:]
    var tasks: [String: String] = [:]
    var tags: [String: String] = [:]

    init(_ container: PersistentContainer) throws {
        try self.init(reading: container.newBackgroundContext(name: "dump"))
    }

    /// What `context` sees (a child of a context: that context's unsaved state included).
    init(reading context: ManagedObjectContext) throws {
        try context.performAndWait {
            var names: [ManagedObjectID: String] = [:]
            var all: [String: [ManagedObject]] = [:]
            for (entity, key) in [("Project", "name"), ("Task", "title"), ("Tag", "label")] {
                all[entity] = try context.fetch(FetchRequest(entityName: entity, returnsObjectsAsFaults: false))
                for object in all[entity]! { names[object.objectID] = object.value(key, as: String.self) }
            }
            func related(_ object: ManagedObject, _ key: String) -> String {
                object.objectIDs(forKey: key).map { names[$0] ?? "?" }.sorted().joined(separator: ",")
            }
            for object in all["Project"]! {
                projects[names[object.objectID]!] = "v\(object.version) archived=\(object.value("archived", as: Bool.self)!) tasks=\(related(object, "tasks"))"
            }
            for object in all["Task"]! {
                let values = ["priority", "done", "estimate"].map { "\($0)=\(object.attributeValue(forKey: $0))" }.joined(separator: " ")
                let project = object.objectID(forKey: "project").map { names[$0] ?? "?" } ?? "-"
                tasks[names[object.objectID]!] = "v\(object.version) \(values) project=\(project) tags=\(related(object, "tags"))"
            }
            for object in all["Tag"]! { tags[names[object.objectID]!] = "v\(object.version) tasks=\(related(object, "tasks"))" }
        }
    }

    var description: String {
        [projects, tasks, tags].flatMap { $0.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" } }.joined(separator: "\n")
    }
}
