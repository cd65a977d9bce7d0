import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite
import ManagedStoreTestSupport

/// The five merge policies, property by property: a task read at version 1, a change C another
/// context saves first, and a change R this context saves after it under each policy. Every row
/// states the exact task after the save, and the inverse relationships must agree with it.
@Suite("Merge policies")
struct MergePolicyTests {
    // The table is the server tests' too (Tests/Support/MergePolicyTable.swift).
    typealias Case = MergePolicyTable.Case
    typealias Value = MergePolicyTable.Value
    static let base = MergePolicyTable.base
    static let cases = MergePolicyTable.cases
    static func with(_ changes: [String: Value]) -> [String: Value]? { MergePolicyTable.with(changes) }

    /// A store with projects P1-P3, tags G1-G3 and the task at its base values; returns the
    /// task's ID.
    static func seeded() throws -> (PersistentContainer, ManagedObjectID) {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let id: ManagedObjectID = try context.performAndWait {
            var projects: [String: ManagedObject] = [:]
            for name in ["P1", "P2", "P3"] {
                let project = context.insertNewObject(forEntityName: "Project")
                project.setValue(name, forKey: "name")
                projects[name] = project
            }
            var tags: [String: ManagedObject] = [:]
            for label in ["G1", "G2", "G3"] {
                let tag = context.insertNewObject(forEntityName: "Tag")
                tag.setValue(label, forKey: "label")
                tags[label] = tag
            }
            let task = context.insertNewObject(forEntityName: "Task")
            try set(base, on: task, in: context)
            try context.save()
            return task.objectID
        }
        return (container, id)
    }

    /// Sets table values on `task` through the object API.
    static func set(_ values: [String: Value], on task: ManagedObject, in context: ManagedObjectContext) throws {
        func find(_ entity: String, _ key: String, _ value: String) throws -> ManagedObject {
            try #require(try context.fetch(FetchRequest(entityName: entity, predicate: .key(key) == value)).first)
        }
        for (name, value) in values {
            switch value {
            case .text(let s): task.setValue(s, forKey: name)
            case .number(let n): task.setValue(n, forKey: name)
            case .flag(let b): task.setValue(b, forKey: name)
            case .project(let p): task.setObject(try p.map { try find("Project", "name", $0) }, forKey: name)
            case .tags(let labels): task.setObjects(try labels.map { try find("Tag", "label", $0) }, forKey: name)
            }
        }
    }

    /// The task as the store holds it (nil when deleted), after checking every inverse.
    static func stored(_ container: PersistentContainer, _ id: ManagedObjectID) throws -> [String: Value]? {
        let reader = container.newBackgroundContext()
        return try reader.performAndWait {
            // Inverses agree: each project's tasks and each tag's tasks hold the task exactly
            // where the task points.
            let task = try? reader.existingObject(with: id)
            for project in try reader.fetch(FetchRequest(entityName: "Project")) {
                let holds = project.objectIDs(forKey: "tasks").contains(id)
                #expect(holds == (task?.objectID(forKey: "project") == project.objectID), "\(project.value("name", as: String.self) ?? "?").tasks")
            }
            for tag in try reader.fetch(FetchRequest(entityName: "Tag")) {
                let holds = tag.objectIDs(forKey: "tasks").contains(id)
                #expect(holds == (task?.objectIDs(forKey: "tags").contains(tag.objectID) ?? false), "\(tag.value("label", as: String.self) ?? "?").tasks")
            }
            guard let task else { return nil }
            return [
                "title": .text(task.value("title", as: String.self) ?? ""), "priority": .number(task.value("priority", as: Int64.self) ?? -1),
                "done": .flag(task.value("done", as: Bool.self) ?? false),
                "project": .project(task.object(forKey: "project")?.value("name", as: String.self)),
                "tags": .tags(task.objects(forKey: "tags").compactMap { $0.value("label", as: String.self) }),
            ]
        }
    }

    @Test("each policy leaves the exact object the table states, through the library", arguments: cases)
    func policies(_ scenario: Case) throws {
        for policy in MergePolicy.builtIn {
            let (container, id) = try Self.seeded()
            let mine = container.newBackgroundContext(name: "mine")
            try mine.performAndWait { _ = try mine.existingObject(with: id).version }  // read at version 1
            let other = container.newBackgroundContext(name: "store")
            try other.performAndWait {
                try Self.set(scenario.store, on: try other.existingObject(with: id), in: other)
                try other.save()
            }
            let afterStore = try Self.stored(container, id)
            let outcome: Result<SavedChanges, SaveError> = try mine.performAndWait {
                let task = mine.object(with: id)
                if let values = scenario.mine { try Self.set(values, on: task, in: mine) } else { mine.delete(task) }
                do throws(SaveError) { return .success(try mine.save(mergePolicy: policy)) } catch { return .failure(error) }
            }
            let final = try Self.stored(container, id)
            guard case .error = policy else {
                guard case .success(let saved) = outcome else {
                    Issue.record("\(policy.name): the save failed: \(outcome)")
                    continue
                }
                #expect(saved.resolved.count == 1, "\(policy.name)")
                let expected = scenario.expected[policy.name] ?? nil
                #expect(final == expected, "\(policy.name): \(String(describing: final)) instead of \(String(describing: expected))")
                continue
            }
            guard case .failure(.conflict(let conflicts, _)) = outcome else {
                Issue.record("error: expected a conflict, got \(outcome)")
                continue
            }
            #expect(conflicts.first?.oldVersion == 1 && conflicts.first?.newVersion == 2)
            #expect(final == afterStore, "error: nothing is written")
        }
    }

    /// One context saves one change after another (as a write queue's does): what a save set
    /// ends with it, also when the save had nothing to write (every value set was the stored
    /// one). Before, a no-op save's sets stayed, and the next save's overwrite counted them in
    /// its R and did not put them back to the base version.
    @Test("R ends with each save, also a save with nothing to write")
    func setPropertiesEndWithEachSave() throws {
        let (container, id) = try Self.seeded()
        let other = container.newBackgroundContext(name: "store")
        try other.performAndWait {
            try Self.set(["title": .text("store"), "priority": .number(2)], on: try other.existingObject(with: id), in: other)
            try other.save()
        }
        let writer = container.newBackgroundContext(name: "writer")
        try writer.performAndWait {
            // A write that sets the title the store already holds: nothing to write.
            let task = try writer.existingObject(with: id)
            try Self.set(["title": .text("store")], on: task, in: writer)
            let first = try writer.save()
            #expect(first.token == nil && first.updated.isEmpty, "nothing written")
            // The next write, based on version 1, sets only the priority under overwrite: the
            // title (changed by the store after version 1, not set by this write) goes back.
            task.baseVersion = 1
            try Self.set(["priority": .number(5)], on: task, in: writer)
            let second = try writer.save(mergePolicy: .overwrite)
            #expect(second.resolved.count == 1)
        }
        #expect(try Self.stored(container, id) == Self.with(["priority": .number(5)]))
    }

    @Test("the conflict record: R ∩ C, the values at the base version from the history, every property when the history no longer reaches it")
    func conflictRecord() throws {
        let (container, id) = try Self.seeded()
        let mine = container.newBackgroundContext()
        try mine.performAndWait { _ = try mine.existingObject(with: id).version }
        let other = container.newBackgroundContext()
        try other.performAndWait {
            try Self.set(["title": .text("store"), "project": .project("P2")], on: try other.existingObject(with: id), in: other)
            try other.save()
        }
        func conflict() throws -> MergeConflict? {
            try mine.performAndWait {
                try Self.set(["title": .text("mine"), "done": .flag(true)], on: mine.object(with: id), in: mine)
                defer { mine.rollback() }
                do throws(SaveError) { try mine.save(); return nil } catch {
                    guard case .conflict(let merge, _) = error else { return nil }
                    return merge.first
                }
            }
        }
        let record = try #require(try conflict())
        #expect(record.changedProperties == ["title", "done"])
        #expect(record.storeChangedProperties == ["title", "project"])
        #expect(record.conflictingProperties == ["title"])
        #expect(record.cachedSnapshot?["title"] == .attribute(.string("t0")))
        #expect(record.cachedSnapshot?["project"]?.description == "Project/1")
        #expect(record.persistedSnapshot?["title"] == .attribute(.string("store")))
        #expect(record.objectSnapshot?["title"] == .attribute(.string("mine")))

        // Based on a version this context never read, with the history pruned past it: the
        // values at it are unknown, and every property counts as changed.
        _ = try container.coordinator.deleteHistory(before: try container.coordinator.lastHistoryToken())
        let claimed: MergeConflict? = try mine.performAndWait {
            mine.reset()
            let task = try mine.existingObject(with: id)
            task.baseVersion = 1
            task.setValue("mine", forKey: "title")
            do throws(SaveError) { try mine.save(); return nil } catch {
                guard case .conflict(let merge, _) = error else { return nil }
                return merge.first
            }
        }
        let unknown = try #require(claimed)
        #expect(unknown.cachedSnapshot == nil && unknown.storeChangedProperties == nil)
        #expect(unknown.conflictingProperties == ["title"])
        #expect(unknown.oldVersion == 1 && unknown.newVersion == 2)
    }

    @Test("uniqueness: error refuses; object-trump updates the stored object; overwrite replaces it; store-trump and rollback keep it",
          arguments: MergePolicy.builtIn.map(\.name))
    func uniqueness(_ name: String) throws {
        let policy = try #require(MergePolicy(name: name))
        let (container, taskID) = try Self.seeded()
        let context = container.newBackgroundContext()
        // Tag G1 holds the task. Insert another "G1" that holds nothing but is a fresh object.
        let outcome: Result<SavedChanges, SaveError> = try context.performAndWait {
            let duplicate = context.insertNewObject(forEntityName: "Tag")
            duplicate.setValue("G1", forKey: "label")
            duplicate.setObjects([], forKey: "tasks")
            do throws(SaveError) { return .success(try context.save(mergePolicy: policy)) } catch { return .failure(error) }
        }
        let reader = container.newBackgroundContext()
        let tags = try reader.performAndWait { try reader.fetch(FetchRequest(entityName: "Tag", predicate: .key("label") == "G1")) }
        let holds = try reader.performAndWait { tags.first?.objectIDs(forKey: "tasks") ?? [] }
        #expect(tags.count == 1, "never two tags with one label")
        switch policy {
        case .error:
            guard case .failure(.conflict(_, let constraints)) = outcome else { Issue.record("\(outcome)"); return }
            #expect(constraints.first?.conflictingObjects.count == 1)
            #expect(holds == [taskID])
        case .objectTrump, .overwrite:
            // The insert set tasks to none: the stored tag takes that.
            guard case .success(let saved) = outcome else { Issue.record("\(outcome)"); return }
            #expect(saved.mergedInserts.values.first == tags.first?.objectID)
            #expect(holds.isEmpty)
        default:
            guard case .success(let saved) = outcome else { Issue.record("\(outcome)"); return }
            #expect(saved.inserted.isEmpty && saved.mergedInserts.count == 1)
            #expect(holds == [taskID], "kept as it was")
        }
    }

    @Test("several inserts of one unique key in one save collapse into one object under the trumping policies")
    func insertsCollapse() throws {
        for policy in [MergePolicy.objectTrump, .overwrite, .storeTrump, .rollback] {
            let container = try Fixtures.container()
            let context = container.newBackgroundContext()
            let saved = try context.performAndWait {
                let first = context.insertNewObject(forEntityName: "Project")
                first.setValue("Apollo", forKey: "name")
                let second = context.insertNewObject(forEntityName: "Project")
                second.setValue("Apollo", forKey: "name")
                second.setValue(true, forKey: "archived")
                return try context.save(mergePolicy: policy)
            }
            let reader = container.newBackgroundContext()
            let projects = try reader.performAndWait { try reader.fetch(FetchRequest(entityName: "Project")) }
            #expect(projects.count == 1, "\(policy.name)")
            #expect(saved.mergedInserts.count == 1)
            let archived = try reader.performAndWait { projects.first?.value("archived", as: Bool.self) }
            switch policy {
            case .objectTrump, .overwrite: #expect(archived == true, "\(policy.name): the later insert's values")
            default: #expect(archived == false, "\(policy.name): the first insert kept")
            }
        }
    }

    @Test("a custom merge policy resolves in code")
    func customPolicy() throws {
        struct LongestTitleWins: MergeConflictResolver {
            let name = "longest-title"
            func resolve(_ conflicts: [MergeConflict], constraintConflicts: [ConstraintConflict], in context: ManagedObjectContext) throws {
                for conflict in conflicts {
                    guard case .attribute(.string(let stored))? = conflict.persistedSnapshot?["title"],
                          case .attribute(.string(let mine))? = conflict.objectSnapshot?["title"] else { continue }
                    context.object(with: conflict.objectID).setValue(stored.count > mine.count ? stored : mine, forKey: "title")
                }
            }
        }
        let (container, id) = try Self.seeded()
        let mine = container.newBackgroundContext()
        try mine.performAndWait { _ = try mine.existingObject(with: id).version }
        let other = container.newBackgroundContext()
        try other.performAndWait {
            try other.existingObject(with: id).setValue("a much longer title", forKey: "title")
            try other.save()
        }
        try mine.performAndWait {
            mine.object(with: id).setValue("short", forKey: "title")
            mine.object(with: id).setValue(true, forKey: "done")
            try mine.save(mergePolicy: .custom(LongestTitleWins()))
        }
        #expect(try Self.stored(container, id) == Self.with(["title": .text("a much longer title"), "done": .flag(true)]))
    }
}
