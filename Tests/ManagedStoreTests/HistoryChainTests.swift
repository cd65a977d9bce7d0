import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite

/// The chain of each object's changes (its row's `_history`, each change's `prior`) is how a
/// conflict finds what the store changed after a version. These tests hold it to the plain
/// way of finding the same changes: scanning the whole history for the object.
@Suite("History chains")
struct HistoryChainTests {
    typealias SplitMix64 = PredicateFuzzTests.SplitMix64

    /// The chain's answer for one object and base version, as "type/version" per change,
    /// newest first; nil when the history does not reach the version.
    static func chained(_ container: PersistentContainer, _ id: ManagedObjectID, after version: Int64) throws -> [String]? {
        let entity = try #require(container.model.resolvedEntity(named: id.entityName))
        let changes = try container.coordinator.sqlite.writer.withConnection { connection in
            try HistoryReader(connection: connection, model: container.model, storeIdentifier: container.coordinator.storeIdentifier)
                .changes(ofObject: entity, pk: id.primaryKey ?? 0, after: version)
        }
        return changes?.map { "\(HistoryCoding.typeCode($0.changeType))/\($0.version.map(String.init) ?? "-")" }
    }

    /// The same found the plain way: the newest change of the object that made `version`, then
    /// every change of the object after it, each found by scanning the history.
    static func scanned(_ container: PersistentContainer, _ id: ManagedObjectID, after version: Int64) throws -> [String]? {
        try container.coordinator.sqlite.writer.withConnection { connection throws(StoreError) -> [String]? in
            var rows: [(token: Int64, type: Int64, version: Int64?)] = []
            // The object's own rows, and the runs of inserts (format 7) whose keys include it.
            try connection.withStatement(#"SELECT "token", "type", "version" FROM "_history_change" WHERE "entity" = ?1 AND "pk" <= ?2 AND coalesce("through", "pk") >= ?2 ORDER BY "token" DESC"#) { s throws(StoreError) in
                s.bindText(id.entityName, at: 1)
                s.bind(id.primaryKey ?? 0, at: 2)
                while try s.step() { rows.append((s.int64(0), s.int64(1), s.isNull(2) ? nil : s.int64(2))) }
            }
            guard let reached = rows.firstIndex(where: { $0.version == version }) else { return nil }
            return rows[..<reached].map { "\($0.type)/\($0.version.map(String.init) ?? "-")" }
        }
    }

    /// Deletes `project` with its tasks (the cascade) and inserts a new project in its place.
    static func replaceProject(_ project: ManagedObject, in context: ManagedObjectContext, name: String,
                               projects: inout [ManagedObject], tasks: inout [ManagedObject]) {
        let doomed = Set(project.objectIDs(forKey: "tasks"))
        context.delete(project)
        tasks.removeAll { doomed.contains($0.objectID) }
        let replacement = context.insertNewObject(forEntityName: "Project")
        replacement.setValue(name, forKey: "name")
        projects = projects.map { $0 === project ? replacement : $0 }
    }

    @Test("random saves on tasks, projects and tags: for every object and base version the chain finds what a scan of the history finds")
    func chainMatchesScan() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        var random = SplitMix64(seed: 0xc4a1_0005)
        var known: [ManagedObjectID] = []
        var compared = 0, reached = 0
        try context.performAndWait { () throws in
            var projects = (0..<3).map { i -> ManagedObject in
                let project = context.insertNewObject(forEntityName: "Project")
                project.setValue("p\(i)", forKey: "name")
                return project
            }
            var tags = (0..<3).map { i -> ManagedObject in
                let tag = context.insertNewObject(forEntityName: "Tag")
                tag.setValue("t\(i)", forKey: "label")
                return tag
            }
            var tasks: [ManagedObject] = []
            try context.save()
            known = projects.map(\.objectID) + tags.map(\.objectID)
            var serial = 0
            for step in 0..<160 {
                serial += 1
                func pick<T>(_ items: [T]) -> T { items[Int(random.next() % UInt64(items.count))] }
                switch tasks.isEmpty ? 0 : random.next() % 9 {
                case 0:
                    let task = context.insertNewObject(forEntityName: "Task")
                    task.setValue("task \(serial)", forKey: "title")
                    if random.next() % 2 == 0 { task.setObject(pick(projects), forKey: "project") }
                    if random.next() % 2 == 0 { task.addObject(pick(tags), toKey: "tags") }
                    tasks.append(task)
                case 1: pick(tasks).setValue("title \(serial)", forKey: "title")
                case 2: pick(tasks).setValue(Int64(random.next() % 6), forKey: "priority")
                case 3: pick(tasks).setObject(random.next() % 4 == 0 ? nil : pick(projects), forKey: "project")
                case 4: pick(tasks).addObject(pick(tags), toKey: "tags")  // changes the tag only through the join table
                case 5: pick(tags).removeObject(pick(tasks), fromKey: "tasks")
                case 6:
                    let task = pick(tasks)
                    context.delete(task)
                    tasks.removeAll { $0 === task }
                case 7: pick(projects).setValue("renamed \(serial)", forKey: "name")
                default:
                    // A project deleted with its tasks (cascade), and a new one in its place.
                    Self.replaceProject(pick(projects), in: context, name: "project \(serial)", projects: &projects, tasks: &tasks)
                }
                let saved = try context.save()
                known += saved.inserted.filter { !known.contains($0) }
                if step % 7 == 0 {
                    // Faults again: the next changes reach objects this context has not read.
                    context.reset()
                    projects = try projects.compactMap { try? context.existingObject(with: $0.objectID) }
                    tasks = try tasks.compactMap { try? context.existingObject(with: $0.objectID) }
                    tags = tags.map { context.object(with: $0.objectID) }
                }
                for id in known {
                    for version in Int64(1)...6 {
                        let chain = try Self.chained(container, id, after: version)
                        let scan = try Self.scanned(container, id, after: version)
                        #expect(chain == scan, "step \(step), \(id), after version \(version)")
                        compared += 1
                        if scan != nil { reached += 1 }
                    }
                }
            }
        }
        #expect(compared > 10_000 && reached > 1_000, "the walk compared \(compared) answers, \(reached) of them lists")
    }

    @Test("a save made while the store kept no history breaks the object's chain: what changed after the versions before it is unknown")
    func historyOffBreaksChain() throws {
        let store = TemporaryStore()
        func open(history: Bool) throws -> PersistentContainer {
            var description = StoreDescription.sqlite(store.url)
            description.recordsHistory = history
            return try PersistentContainer(model: Fixtures.tracker, store: description)
        }
        func update(_ container: PersistentContainer, _ id: ManagedObjectID?, title: String) throws -> ManagedObjectID {
            let context = container.newBackgroundContext()
            return try context.performAndWait { () throws in
                let task = try id.map { id throws in try context.existingObject(with: id) } ?? context.insertNewObject(forEntityName: "Task")
                task.setValue(title, forKey: "title")
                try context.save()
                return task.objectID
            }
        }
        var container = try open(history: true)
        let id = try update(container, nil, title: "v1")
        _ = try update(container, id, title: "v2")
        #expect(try Self.chained(container, id, after: 1) == ["2/2"])
        container = try open(history: false)
        _ = try update(container, id, title: "v3, unrecorded")
        container = try open(history: true)
        _ = try update(container, id, title: "v4")
        #expect(try Self.chained(container, id, after: 3) == nil, "the change that made version 3 is not recorded")
        #expect(try Self.chained(container, id, after: 1) == nil, "the changes after version 1 are known only in part")
        #expect(try Self.scanned(container, id, after: 1) == ["2/4", "2/2"], "a scan would miss version 3's change")
    }
}
