import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore

/// `FetchedResultsController` [NSFetchedResultsController], fed by the store's history: its
/// answer equals a fetch after every save (batch requests and saves of other contexts
/// included), and each change set is one a table view could apply in one batch update.
@Suite("Fetched results controller", .serialized)
struct FetchedResultsControllerTests {
    /// Records what the delegate hears, and checks each change set against the sections before
    /// and after it (on the view context's queue).
    final class Recorder: FetchedResultsControllerDelegate {
        var sections: [FetchedResultsSectionInfo]
        var objectChanges: [FetchedResultsObjectChange] = []
        var sectionChanges: [FetchedResultsSectionChange] = []
        var changeSets = 0
        var updates = 0
        var problems: [String] = []

        init(_ controller: FetchedResultsController) { sections = controller.sections ?? [] }

        func controllerWillChangeContent(_ controller: FetchedResultsController) {
            objectChanges = []
            sectionChanges = []
        }
        func controller(_ controller: FetchedResultsController, didChange section: FetchedResultsSectionInfo?, atSectionIndex index: Int,
                        for type: FetchedResultsChangeType) {
            sectionChanges.append(FetchedResultsSectionChange(name: section?.name ?? "?", index: index, type: type))
        }
        func controller(_ controller: FetchedResultsController, didChange objectID: ManagedObjectID, at indexPath: IndexPath?,
                        for type: FetchedResultsChangeType, newIndexPath: IndexPath?) {
            objectChanges.append(FetchedResultsObjectChange(objectID: objectID, type: type, indexPath: indexPath, newIndexPath: newIndexPath))
        }
        func controllerDidChangeContent(_ controller: FetchedResultsController) {
            let after = controller.sections ?? []
            if let problem = TableViewBatch.check(before: sections, sectionChanges: sectionChanges, objectChanges: objectChanges, after: after) {
                problems.append(problem)
            }
            changeSets += 1
            updates += objectChanges.filter { $0.type == .update }.count
            sections = after
        }
    }

    @Test("the answer, its sections, and a save's changes told as positions to the delegate and the change sets")
    func followsSaves() async throws {
        let container = try Fixtures.container()
        let writer = container.newBackgroundContext()
        let view = container.newBackgroundContext()
        try writer.performAndWait {
            for (title, priority) in [("a", 1), ("b", 3), ("c", 3), ("d", 0)] {
                let task = writer.insertNewObject(forEntityName: "Task")
                task["title"] = title
                task["priority"] = Int64(priority)
            }
            _ = try writer.save()
        }
        var request = FetchRequest(entityName: "Task", sortDescriptors: [ObjectSortDescriptor("priority", ascending: false), ObjectSortDescriptor("title")])
        request.fetchLimit = 3
        let (controller, recorder) = try view.performAndWait {
            let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: view, sectionNameKeyPath: "priority")
            try controller.performFetch()
            let recorder = Recorder(controller)
            controller.delegate = recorder
            return (controller, recorder)
        }
        let firstSections = view.performAndWait { (controller.sections ?? []).map { "\($0.name):\($0.numberOfObjects)" } }
        #expect(firstSections == ["3:2", "1:1"])
        #expect(view.performAndWait { controller.hasMore })
        let changeSets = view.performAndWait { controller.changeSets }

        // d rises to the top; a, the last, falls out of the window; b changes in place.
        let token = try writer.performAndWait {
            let tasks = try writer.fetch(FetchRequest(entityName: "Task", sortDescriptors: [ObjectSortDescriptor("title")]))
            tasks[3]["priority"] = Int64(5)
            tasks[1]["title"] = "b2"
            return try #require(try writer.save().token)
        }
        try await Self.waitUntil(view, controller, reaches: token)
        let titles = try view.performAndWait { try controller.fetchedObjects?.map { try #require($0.value("title", as: String.self)) } }
        #expect(titles == ["d", "b2", "c"])
        var iterator = changeSets.makeAsyncIterator()
        let changes = try #require(await iterator.next())
        #expect(changes.token == token)
        let kinds = changes.objectChanges.map(\.type)
        #expect(kinds.filter { $0 == .insert }.count == 1 && kinds.filter { $0 == .delete }.count == 1 && kinds.contains(.update))
        #expect(changes.sectionChanges.map(\.type).sorted { "\($0)" < "\($1)" } == [.delete, .insert])
        view.performAndWait {
            #expect(recorder.problems.isEmpty, "\(recorder.problems)")
            #expect(recorder.changeSets == 1)
        }
    }

    @Test("a batch update and a batch delete, which a context's notifications never tell, reach the controller")
    func batchRequests() async throws {
        let container = try Fixtures.container()
        let writer = container.newBackgroundContext()
        let view = container.newBackgroundContext()
        try writer.performAndWait {
            for i in 0..<6 {
                let task = writer.insertNewObject(forEntityName: "Task")
                task["title"] = "t\(i)"
                task["priority"] = Int64(i % 3)
            }
            _ = try writer.save()
        }
        let request = FetchRequest(entityName: "Task", predicate: try ObjectPredicate(format: "priority >= 1"), sortDescriptors: [ObjectSortDescriptor("title")])
        let controller = try view.performAndWait {
            let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: view)
            try controller.performFetch()
            return controller
        }
        #expect(view.performAndWait { controller.fetchedObjectIDs?.count } == 4)
        let updated = try writer.performAndWait {
            try writer.execute(BatchUpdateRequest(entityName: "Task", predicate: try ObjectPredicate(format: "priority == 0"),
                                                  propertiesToUpdate: ["priority": .attribute(.integer(2))])).changes.token
        }
        try await Self.waitUntil(view, controller, reaches: try #require(updated))
        #expect(view.performAndWait { controller.fetchedObjectIDs?.count } == 6)
        let deleted = try writer.performAndWait {
            try writer.execute(BatchDeleteRequest(entityName: "Task", predicate: try ObjectPredicate(format: "title IN {\"t0\", \"t1\"}"))).changes.token
        }
        try await Self.waitUntil(view, controller, reaches: try #require(deleted))
        #expect(try view.performAndWait { try controller.fetchedObjects?.map { try #require($0.value("title", as: String.self)) } } == ["t2", "t3", "t4", "t5"])
    }

    @Test("a section key path that is not the first sort key is refused")
    func sectionKeyMustBeFirstSort() throws {
        let container = try Fixtures.container()
        let view = container.newBackgroundContext()
        let request = FetchRequest(entityName: "Task", sortDescriptors: [ObjectSortDescriptor("title")])
        view.performAndWait {
            let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: view, sectionNameKeyPath: "priority")
            #expect(throws: FetchedResultsControllerError.sectionKeyPathNotFirstSort("priority")) { try controller.performFetch() }
        }
    }

    /// Seed and number of saves of the model-based run (`MANAGEDSTORE_LIVE_SEED`,
    /// `MANAGEDSTORE_LIVE_COMMITS` for a long run by hand).
    static let seed = UInt64(ProcessInfo.processInfo.environment["MANAGEDSTORE_LIVE_SEED"] ?? "") ?? 1
    static let commits = Int(ProcessInfo.processInfo.environment["MANAGEDSTORE_LIVE_COMMITS"] ?? "") ?? 150

    @Test("random saves of every kind under many controllers: each answer equals a fetch at the save's token, each change set is one a table view could apply, and every update is a real change")
    func modelBased() async throws {
        var random = PredicateFuzzTests.SplitMix64(seed: Self.seed)
        let container = try Fixtures.container()
        let writer = container.newBackgroundContext()
        let otherWriter = container.newBackgroundContext()
        let view = container.newBackgroundContext()
        let checker = container.newBackgroundContext()
        try writer.performAndWait {
            for name in ["p1", "p2", "q3"] {
                let project = writer.insertNewObject(forEntityName: "Project")
                project["name"] = name
            }
            for label in ["t1", "t2", "u3", "u4"] {
                let tag = writer.insertNewObject(forEntityName: "Tag")
                tag["label"] = label
            }
            _ = try writer.save()
        }
        let predicates = ["TRUEPREDICATE", "priority >= 2", "done == NO", "estimate == nil", "estimate > 2.5", "title BEGINSWITH \"a\"",
                          "project.name BEGINSWITH \"p\"", "project == nil", "tags.@count > 0", "ANY tags.label BEGINSWITH \"u\"",
                          "SUBQUERY(tags, $t, $t.label == \"t1\").@count > 0", "priority IN {1, 3, 5} AND done == YES",
                          // Equality guards, which the engine indexes (LiveWindowIndex.swift):
                          "priority == 3", "title == \"a1\"", "done == NO AND priority == 2", "title ==[c] \"ab1\""]
        let sorts: [[ObjectSortDescriptor]] = [[ObjectSortDescriptor("priority", ascending: false)], [ObjectSortDescriptor("estimate")],
                                               [ObjectSortDescriptor("title", options: .caseInsensitive), ObjectSortDescriptor("priority")],
                                               [ObjectSortDescriptor("done"), ObjectSortDescriptor("estimate", ascending: false)],
                                               [ObjectSortDescriptor("project.name")], []]
        var watched: [(FetchedResultsController, Recorder, FetchRequest)] = []
        for _ in 0..<14 {
            var request = FetchRequest(entityName: "Task", predicate: try ObjectPredicate(format: random.pick(predicates)), sortDescriptors: random.pick(sorts))
            request.fetchLimit = random.pick([0, 1, 2, 3, 5, 8, 20])
            let sectioned = !request.sortDescriptors.isEmpty && random.chance(50)
            let pair = try view.performAndWait {
                let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: view,
                                                          sectionNameKeyPath: sectioned ? request.sortDescriptors.first?.keyPath : nil)
                try controller.performFetch()
                let recorder = Recorder(controller)
                controller.delegate = recorder
                return (controller, recorder)
            }
            watched.append((pair.0, pair.1, request))
        }
        for commit in 0..<Self.commits {
            let seed = random.next()
            // Each save from a fresh state: a batch request leaves a context's objects stale,
            // and two writers take turns, as two clients would.
            let client = commit % 2 == 0 ? writer : otherWriter
            let token = try client.performAndWait {
                defer { client.reset() }
                return try Self.randomSave(client, seed: seed)
            }
            guard let token else { continue }
            for (controller, _, _) in watched { try await Self.waitUntil(view, controller, reaches: token) }
            for (index, (controller, _, request)) in watched.enumerated() {
                // One more than the limit: whether more matches exist past the answer.
                var probe = request
                if probe.fetchLimit > 0 { probe.fetchLimit += 1 }
                let fetched = try checker.performAndWait {
                    defer { checker.reset() }
                    return try checker.fetch(probe).map(\.objectID)
                }
                let expected = request.fetchLimit > 0 ? Array(fetched.prefix(request.fetchLimit)) : fetched
                let expectedMore = fetched.count > expected.count
                let (held, more) = view.performAndWait { (controller.fetchedObjectIDs ?? [], controller.hasMore) }
                let context = "seed \(Self.seed), save \(commit), controller \(index) (\(request.predicate.map { "\($0)" } ?? "-"), limit \(request.fetchLimit))"
                #expect(held == expected, "\(context)")
                #expect(more == expectedMore, "more: \(context)")
                if held != expected || more != expectedMore { return }
            }
        }
        var changeSets = 0, updates = 0
        for (_, recorder, _) in watched {
            view.performAndWait {
                #expect(recorder.problems.isEmpty, "seed \(Self.seed): \(recorder.problems.prefix(3))")
                changeSets += recorder.changeSets
                updates += recorder.updates
            }
        }
        #expect(changeSets > Self.commits / 2, "the controllers heard \(changeSets) change sets in \(Self.commits) saves")
        #expect(updates > 0)
    }

    /// One random save of the writer: inserts, updates across window edges, deletes, batch
    /// updates and deletes, several changes at once, and changes of related objects. Returns
    /// its token (nil when it saved nothing).
    static func randomSave(_ context: ManagedObjectContext, seed: UInt64) throws -> PersistentHistoryToken? {
        var random = PredicateFuzzTests.SplitMix64(seed: seed)
        let tasks = try context.fetch(FetchRequest(entityName: "Task", sortDescriptors: [ObjectSortDescriptor("title")]))
        let projects = try context.fetch(FetchRequest(entityName: "Project"))
        let tags = try context.fetch(FetchRequest(entityName: "Tag"))
        func randomize(_ task: ManagedObject) {
            switch random.below(6) {
            case 0: task["priority"] = Int64(random.below(6))
            case 1: task["estimate"] = random.chance(30) ? nil : Double(random.below(10)) / 2
            case 2: task["title"] = random.pick(["a", "A", "b", "ab", "z", "Zed"]) + String(random.below(3))
            case 3: task["done"] = random.chance(50)
            case 4: task.setObject(random.chance(25) ? nil : random.pick(projects), forKey: "project")
            default:
                let tag = random.pick(tags)
                if (task.objects(forKey: "tags")).contains(where: { $0 === tag }) { task.removeObject(tag, fromKey: "tags") } else { task.addObject(tag, toKey: "tags") }
            }
        }
        switch random.below(10) {
        case 0, 1, 2:
            for _ in 0...random.below(3) {
                let task = context.insertNewObject(forEntityName: "Task")
                task["title"] = random.pick(["a", "b", "c", "Ab"]) + String(random.below(9))
                task["priority"] = Int64(random.below(6))
                if random.chance(60) { task["estimate"] = Double(random.below(10)) / 2 }
                if random.chance(60) { task.setObject(random.pick(projects), forKey: "project") }
                if random.chance(30) { task.addObject(random.pick(tags), toKey: "tags") }
            }
        case 3, 4, 5:
            guard !tasks.isEmpty else { return nil }
            for _ in 0...random.below(3) { randomize(random.pick(tasks)) }
        case 6:
            guard !tasks.isEmpty, tasks.count > 8 else { return nil }
            context.delete(random.pick(tasks))
        case 7:
            let result = try context.execute(BatchUpdateRequest(entityName: "Task", predicate: try ObjectPredicate(format: "priority == \(random.below(6))"),
                                                                propertiesToUpdate: ["priority": .attribute(.integer(Int64(random.below(6))))]))
            return result.changes.token
        case 8:
            guard tasks.count > 12 else { return nil }
            let result = try context.execute(BatchDeleteRequest(entityName: "Task", predicate: try ObjectPredicate(format: "priority == \(random.below(6)) AND done == YES")))
            return result.changes.token
        default:
            // A related object changes: the answers whose key paths reach it may change.
            let project = random.pick(projects)
            project["name"] = random.pick(["p", "q", "r"]) + String(random.below(1000)) + (project.value("name", as: String.self) ?? "").prefix(20)
        }
        guard context.hasChanges else { return nil }
        return try context.save().token
    }

    /// Waits (bounded) until `controller` holds an answer at `token` or later.
    static func waitUntil(_ context: ManagedObjectContext, _ controller: FetchedResultsController, reaches token: PersistentHistoryToken) async throws {
        let deadline = ContinuousClock.now + .seconds(15)
        while context.performAndWait({ controller.token }) < token {
            guard ContinuousClock.now < deadline else {
                Issue.record("the controller did not reach token \(token) within 15 s (it holds \(context.performAndWait { controller.token }))")
                return
            }
            try await Task.sleep(for: .milliseconds(2))
        }
    }
}

/// UITableView's rules for one batch update (`performBatchUpdates`): deletes and reloads name
/// rows and sections as they were before, inserts as they are after, a move from before to after;
/// no row is named twice, no row moves out of a deleted section or into an inserted one, and
/// applying the changes to the sections before gives the sections after.
enum TableViewBatch {
    static func check(before: [FetchedResultsSectionInfo], sectionChanges: [FetchedResultsSectionChange],
                      objectChanges: [FetchedResultsObjectChange], after: [FetchedResultsSectionInfo]) -> String? {
        let deletedSections = Set(sectionChanges.filter { $0.type == .delete }.map(\.index))
        let insertedSections = Set(sectionChanges.filter { $0.type == .insert }.map(\.index))
        guard deletedSections.allSatisfy({ before.indices.contains($0) }), insertedSections.allSatisfy({ after.indices.contains($0) }) else {
            return "a section index out of range"
        }
        var oldPaths: Set<IndexPath> = [], newPaths: Set<IndexPath> = []
        for change in objectChanges {
            switch change.type {
            case .delete, .update, .move:
                guard let path = change.indexPath, before.indices.contains(path.sectionIndex),
                      before[path.sectionIndex].objectIDs.indices.contains(path.itemIndex),
                      before[path.sectionIndex].objectIDs[path.itemIndex] == change.objectID else { return "\(change.type) names a row that was not there: \(change)" }
                guard oldPaths.insert(path).inserted else { return "row \(path) named twice" }
                if change.type != .delete, deletedSections.contains(path.sectionIndex) { return "\(change.type) out of a deleted section: \(change)" }
            case .insert:
                break
            }
            if change.type == .insert || change.type == .move {
                guard let path = change.newIndexPath, after.indices.contains(path.sectionIndex),
                      after[path.sectionIndex].objectIDs.indices.contains(path.itemIndex),
                      after[path.sectionIndex].objectIDs[path.itemIndex] == change.objectID else { return "\(change.type) names a row that is not there after: \(change)" }
                guard newPaths.insert(path).inserted else { return "new row \(path) named twice" }
                if change.type == .move, insertedSections.contains(path.sectionIndex) { return "a move into an inserted section: \(change)" }
            }
        }
        // Apply: rows out (deletes and moves' sources), sections out, sections in, rows in.
        var sections = before.map { (name: $0.name, ids: $0.objectIDs.map(Optional.some)) }
        for change in objectChanges where change.type == .delete || change.type == .move {
            if let path = change.indexPath { sections[path.sectionIndex].ids[path.itemIndex] = nil }
        }
        var result = sections.enumerated().filter { !deletedSections.contains($0.offset) }
            .map { (name: $0.element.name, ids: $0.element.ids.compactMap { $0 }) }
        for index in insertedSections.sorted() {
            guard index <= result.count else { return "inserted section \(index) beyond the end" }
            result.insert((after[index].name, []), at: index)
        }
        let incoming = objectChanges.filter { $0.type == .insert || $0.type == .move }.compactMap { change in change.newIndexPath.map { ($0, change.objectID) } }
            .sorted { ($0.0.sectionIndex, $0.0.itemIndex) < ($1.0.sectionIndex, $1.0.itemIndex) }
        for (path, id) in incoming {
            guard result.indices.contains(path.sectionIndex), path.itemIndex <= result[path.sectionIndex].ids.count else { return "insert at \(path) out of range" }
            result[path.sectionIndex].ids.insert(id, at: path.itemIndex)
        }
        guard result.map(\.name) == after.map(\.name), result.map(\.ids) == after.map(\.objectIDs) else {
            return "the batch does not give the sections after: \(result.map { "\($0.name):\($0.ids.count)" }) vs \(after.map { "\($0.name):\($0.numberOfObjects)" })"
        }
        return nil
    }
}
