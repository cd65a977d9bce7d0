import Foundation
import Synchronization
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStorePostgreSQL

/// What only the PostgreSQL store has: its values in PostgreSQL's columns, its password kept
/// out of every message, and two coordinators (two servers) over one database keeping each
/// other's writes honest. Runs when the suites run on PostgreSQL (`make test-postgres-store`);
/// the redaction test runs always.
@Suite("PostgreSQL store")
struct PostgreSQLStoreTests {
    static let valuesModel: ManagedObjectModel = {
        let json = #"""
        { "name": "Values", "version": 1, "entities": [ { "name": "Item", "attributes": [
            {"name": "i16", "type": "integer16"}, {"name": "i64", "type": "integer64"}, {"name": "dec", "type": "decimal"},
            {"name": "dbl", "type": "double"}, {"name": "flt", "type": "float"}, {"name": "str", "type": "string"},
            {"name": "flag", "type": "boolean"}, {"name": "when", "type": "date"}, {"name": "data", "type": "binary"},
            {"name": "uid", "type": "uuid"}, {"name": "link", "type": "uri"} ] } ] }
        """#
        return try! ManagedObjectModel(jsonData: Array(json.utf8))
    }()

    /// Two containers over one store: two servers sharing a database.
    static func twoServers(model: ManagedObjectModel = Fixtures.tracker) throws -> (PersistentContainer, PersistentContainer) {
        let description = try TestStore.freshPostgresStore(base: .inMemory)
        return (try PersistentContainer(model: model, store: description), try PersistentContainer(model: model, store: description))
    }

    @Test("a password in the URI is masked wherever the location is shown")
    func redaction() {
        #expect(StoreDescription.redacted("postgres://app:s3cret@db.example:5432/shop") == "postgres://app:***@db.example:5432/shop")
        #expect(StoreDescription.redacted("postgresql://app@db/shop?password=s3cret&sslmode=require")
            == "postgresql://app@db/shop?password=***&sslmode=require")
        #expect(StoreDescription.redacted("postgres://db/shop") == "postgres://db/shop")
        #expect(StoreDescription.redacted("postgres://a:b:c@h/d") == "postgres://a:***@h/d")
    }

    @Test("an unreachable server is a cannotOpen error without the password", .enabled(if: TestStore.isPostgres))
    func unreachable() throws {
        let description = StoreDescription(location: .postgres("postgres://someone:s3cret@127.0.0.1:1/none?connect_timeout=2"))
        do {
            _ = try PersistentContainer(model: Fixtures.tracker, store: description)
            Issue.record("opened a store on port 1")
        } catch {
            guard case let .cannotOpen(path, _) = error else { Issue.record("expected cannotOpen, got \(error)"); return }
            #expect(path == "postgres://someone:***@127.0.0.1:1/none?connect_timeout=2")
            #expect(!"\(error)".contains("s3cret"))
        }
    }

    @Test("every attribute type comes back exactly as it was saved", .enabled(if: TestStore.isPostgres))
    func valuesRoundTrip() throws {
        let container = try PersistentContainer(model: Self.valuesModel, store: TestStore.freshPostgresStore(base: .inMemory))
        let values: [String: AttributeValue] = [
            "i16": .integer(-32768), "i64": .integer(Int64.max), "dec": .decimal(Decimal(string: "12345678901234567890.123456789")!),
            "dbl": .double(0.1 + 0.2), "flt": .float(Float.leastNonzeroMagnitude), "str": .string("é e\u{301} 𝄞 \"quoted\" \\ 'x'"),
            "flag": .boolean(true), "when": .date(Date(timeIntervalSinceReferenceDate: 123_456_789.123_456_7)),
            "data": .binary(Data([0, 1, 0xfe, 0xff, 0x5c, 0x78])), "uid": .uuid(UUID()), "link": .uri(URL(string: "https://example.com/a?b=c#d")!),
        ]
        let context = container.newBackgroundContext()
        let id = try context.performAndWait {
            let item = context.insertNewObject(forEntityName: "Item")
            for (name, value) in values { item.setAttributeValue(value, forKey: name) }
            try context.save()
            return item.objectID
        }
        let reader = container.newBackgroundContext()
        try reader.performAndWait {
            let item = try reader.existingObject(with: id)
            for (name, value) in values { #expect(item.attributeValue(forKey: name) == value, "\(name)") }
        }
    }

    @Test("a string PostgreSQL cannot hold is a validation error naming the attribute, and nothing is stored", .enabled(if: TestStore.isPostgres))
    func nulCharacterRefused() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let project = context.insertNewObject(forEntityName: "Project")
            project.setValue("before\u{0}after", forKey: "name")
            do {
                try context.save()
                Issue.record("saved a string with U+0000")
            } catch SaveError.validation(let errors) {
                #expect(errors.map(\.property) == ["name"])
                #expect(errors.map(\.code) == [.invalidType])
            }
        }
        let fresh = container.newBackgroundContext()
        let stored = try fresh.performAndWait { try fresh.count(for: FetchRequest(entityName: "Project")) }
        #expect(stored == 0)
    }

    @Test("one object's row with its destinations in one statement is the row and each relationship read apart (twin of the plain path)",
          .enabled(if: TestStore.isPostgres))
    func rowWithDestinationsTwin() throws {
        // Ordered one-to-many (position beside the key) and ordered many-to-many (the link table),
        // and in the tracker a plain many-to-many and a one-to-many.
        let ordered = try Fixtures.container(model: OrderedRelationshipTests.model)
        let (folder, items) = try OrderedRelationshipTests.seed(ordered, ["a", "b", "c", "d", "e"])
        let context = ordered.newBackgroundContext()
        try context.performAndWait {
            let f = try context.existingObject(with: folder)
            let order = [items[3], items[0], items[4], items[1], items[2]].map { context.object(with: $0) }
            f.setObjects(order, forKey: "items")
            f.setObjects([order[2], order[0]], forKey: "favorites")
            let empty = context.insertNewObject(forEntityName: "Folder")
            empty.setValue("empty", forKey: "name")
            try context.save()
        }
        let tracker = try Fixtures.container()
        let writer = tracker.newBackgroundContext()
        try writer.performAndWait {
            let project = writer.insertNewObject(forEntityName: "Project")
            project.setValue("p", forKey: "name")
            let tags = (0..<3).map { n in
                let tag = writer.insertNewObject(forEntityName: "Tag")
                tag.setValue("t\(n)", forKey: "label")
                return tag
            }
            for n in 0..<4 {
                let task = writer.insertNewObject(forEntityName: "Task")
                task.setValue("task \(n)", forKey: "title")
                if n > 0 { task.setObject(project, forKey: "project") }
                task.setObjects(Array(tags.prefix(n)), forKey: "tags")
            }
            try writer.save()
        }
        var compared = 0
        for container in [ordered, tracker] {
            let model = container.coordinator.model
            try container.coordinator.store.read(throughWriter: false) { anySession in
                let session = try #require(anySession as? PGSession)
                for entity in model.schema where !entity.isAbstract {
                    for key in try session.allRows(of: entity).map(\.0) {
                        let plain = try #require(try session.row(of: entity, key: key))
                        var visited = false
                        try session.visitRow(of: entity, key: key) { source in
                            visited = true
                            #expect(source.version == plain.version)
                            for a in entity.attributes.indices { #expect(source.value(ofAttributeAt: a) == plain.attributes[a]) }
                            for r in entity.relationships.indices where entity.relationships[r].storage != .foreignKey {
                                var keys: [Int64] = []
                                try source.forEachDestinationKey(ofRelationship: r) { keys.append($0) }
                                let apart = try session.destinationKeys(of: entity, relationship: r, owners: [key])[key] ?? []
                                #expect(keys == apart, "\(entity.name)/\(key).\(entity.relationships[r].name)")
                                compared += keys.isEmpty ? 0 : 1
                            }
                        }
                        #expect(visited)
                    }
                }
            }
        }
        #expect(compared >= 8, "relationships with destinations compared: \(compared)")
    }

    @Test("opening the store again finds it; a model it cannot be migrated to is refused, and so is any other with migration off", .enabled(if: TestStore.isPostgres))
    func reopen() throws {
        let description = try TestStore.freshPostgresStore(base: .inMemory)
        let first = try PersistentContainer(model: Fixtures.tracker, store: description)
        let (projectID, _) = try Fixtures.seedProject(first.viewContext, name: "Kept", taskTitles: ["a"])
        let again = try PersistentContainer(model: Fixtures.tracker, store: description)
        #expect(again.coordinator.store.identifier == first.coordinator.store.identifier)
        let name = try again.viewContext.performAndWait { try again.viewContext.existingObject(with: projectID).value("name", as: String.self) }
        #expect(name == "Kept")
        let retyped = try ManagedObjectModel(name: "Tracker", version: 2, entities: ManagedObjectModel.taskTracker().entities.map { entity in
            guard entity.name == "Task" else { return entity }
            var task = entity
            task.attributes[0].type = .integer64  // title, a string
            return task
        })
        #expect(throws: StoreError.migrationNotInferable(["Task.title: type changed from string to integer64, which cannot be inferred"])) {
            _ = try PersistentContainer(model: retyped, store: description)
        }
        var noMigration = description
        noMigration.shouldInferMappingModelAutomatically = false
        #expect {
            _ = try PersistentContainer(model: Self.valuesModel, store: noMigration)
        } throws: { error in
            guard case .modelMismatch(_, _, _, .migrationOff)? = error as? StoreError else { return false }
            return true
        }
        #expect(try first.coordinator.store.checkIntegrity().isEmpty)
    }

    @Test("servers opening a store with a new model at once: one migrates it, the others wait and find it migrated", .enabled(if: TestStore.isPostgres))
    func oneServerMigrates() async throws {
        let description = try TestStore.freshPostgresStore(base: .inMemory)
        let first = try PersistentContainer(model: Fixtures.tracker, store: description)
        let (projectID, _) = try Fixtures.seedProject(first.viewContext, name: "Kept", taskTitles: ["a", "b"])
        let v2 = try ManagedObjectModel(name: "Tracker", version: 2, entities: ManagedObjectModel.taskTracker().entities.map { entity in
            guard entity.name == "Project" else { return entity }
            var project = entity
            project.attributes.append(AttributeDescription(name: "budget", type: .decimal, defaultValue: .decimal(Decimal(string: "100.25")!)))
            return project
        })
        let steps = try await withThrowingTaskGroup(of: [String].self) { group in
            for _ in 0..<3 {
                group.addTask { try PersistentStoreCoordinator(model: v2, store: description).appliedMigration.steps.map(\.description) }
            }
            return try await group.reduce(into: [[String]]()) { $0.append($1) }
        }
        #expect(steps.filter { !$0.isEmpty } == [[#"add attribute Project.budget (decimal, optional, default "100.25")"#]])
        let after = try PersistentContainer(model: v2, store: description)
        let budget = try after.viewContext.performAndWait {
            // The store keeps its identifier through a migration: its object IDs stay valid.
            try after.viewContext.existingObject(with: projectID).value("budget", as: Decimal.self)
        }
        #expect(budget == Decimal(string: "100.25"))
        #expect(try after.coordinator.store.checkIntegrity().isEmpty)
    }

    @Test("a save based on a version another server changed is a conflict, and the store keeps the other's write", .enabled(if: TestStore.isPostgres))
    func optimisticLockingAcrossServers() throws {
        let (a, b) = try Self.twoServers()
        let (_, taskIDs) = try Fixtures.seedProject(a.viewContext, name: "P", taskTitles: ["original"])
        let onA = a.newBackgroundContext()
        let onB = b.newBackgroundContext()
        try onB.performAndWait { _ = try onB.existingObject(with: taskIDs[0]).value("title", as: String.self) }
        try onA.performAndWait {
            try onA.existingObject(with: taskIDs[0]).setValue("from A", forKey: "title")
            try onA.save()
        }
        let error = onB.performAndWait { () -> SaveError? in
            onB.object(with: taskIDs[0]).setValue("from B", forKey: "title")
            do throws(SaveError) { try onB.save(); return nil } catch { return error }
        }
        guard case let .conflict(mergeConflicts, _)? = error else { Issue.record("expected a conflict, got \(String(describing: error))"); return }
        #expect(mergeConflicts.map(\.objectID) == [taskIDs[0]])
        #expect(mergeConflicts.first?.persistedSnapshot?["title"] == .attribute(.string("from A")))
        let check = b.newBackgroundContext()
        let title = try check.performAndWait { try check.existingObject(with: taskIDs[0]).value("title", as: String.self) }
        #expect(title == "from A")
    }

    @Test("two servers' group commits in a lock cycle: the unit PostgreSQL ends runs again once its group has committed, and every write lands",
          .enabled(if: TestStore.isPostgres))
    func lockCycleUnitRunsAgain() throws {
        let (a, b) = try Self.twoServers()
        let (_, tasks) = try Fixtures.seedProject(a.viewContext, name: "Cycle", taskTitles: ["x", "y"])
        let (x, y) = (tasks[0], tasks[1])
        let queues = [WriteQueue(coordinator: a.coordinator), WriteQueue(coordinator: b.coordinator)]
        // Each queue is held by a first unit, so that the next two arrive as one batch.
        let holds = [DispatchSemaphore(value: 0), DispatchSemaphore(value: 0)]
        // Each batch's first unit locks its object; the second asks for the other batch's. The
        // batch that takes the history counter first (held to its COMMIT, so that tokens commit
        // in order) makes the other's first unit wait for it, holding its row: when the second
        // unit asks for that row, the two transactions wait for each other, and PostgreSQL
        // ends one of the statements (40P01).
        let firstUnits = DispatchGroup()
        let outcomes = OutcomeLog()
        for queue in queues { queue.start() }
        for (q, queue) in queues.enumerated() {
            let hold = holds[q]
            queue.submit({ _ in hold.wait() }, completion: { _ in })
            firstUnits.enter()
        }
        func unit(_ id: ManagedObjectID, _ key: String, _ value: AttributeValue, afterFirstUnits: Bool) -> @Sendable (ManagedObjectContext) -> String? {
            // Either batch's first unit may be the statement PostgreSQL ends, and run again:
            // it says it has run once only.
            let once = Mutex(afterFirstUnits)
            @Sendable func ran() { if !once.withLock({ done in defer { done = true }; return done }) { firstUnits.leave() } }
            return { context in
                do {
                    let object = try context.existingObject(with: id)
                    object.setAttributeValue(value, forKey: key)
                    // Each unit changes its own property: a conflict on the other's is merged.
                    _ = try context.save(mergePolicy: .objectTrump)
                    ran()
                    return nil
                } catch {
                    ran()
                    context.rollback()
                    return "\(error)"
                }
            }
        }
        let plans: [(ManagedObjectID, String, AttributeValue, ManagedObjectID, String, AttributeValue)] = [
            (x, "title", .string("A"), y, "estimate", .double(1)),
            (y, "title", .string("B"), x, "estimate", .double(2)),
        ]
        for (q, plan) in plans.enumerated() {
            queues[q].submit(unit(plan.0, plan.1, plan.2, afterFirstUnits: false)) { outcomes.add("\(q) first", $0) }
            let second = unit(plan.3, plan.4, plan.5, afterFirstUnits: true)
            queues[q].submit({ context in
                // The other batch's first unit may be waiting for this transaction: go on after 2 s.
                _ = firstUnits.wait(timeout: .now() + 2)
                return second(context)
            }) { outcomes.add("\(q) second", $0) }
        }
        for hold in holds { hold.signal() }
        #expect(outcomes.wait(count: 4, seconds: 60), "the four units did not all finish")
        #expect(outcomes.failures == [], "units that did not write: \(outcomes.failures)")
        for queue in queues { _ = queue.stop(deadline: .now() + 10) }
        let check = a.newBackgroundContext()
        let stored = try check.performAndWait { () throws -> [String] in
            try [x, y].map { id in
                let object = try check.existingObject(with: id)
                return "\(object.value("title", as: String.self) ?? "-") \(object.value("estimate", as: Double.self) ?? 0)"
            }
        }
        #expect(stored == ["A 2.0", "B 1.0"])
    }

    /// What the write queues' units said, from their completions' threads.
    final class OutcomeLog: @unchecked Sendable {
        // @unchecked Sendable: `entries` only under `condition`'s lock.
        private let condition = NSCondition()
        private var entries: [(String, WriteOutcome<String?>)] = []

        func add(_ name: String, _ outcome: WriteOutcome<String?>) {
            condition.lock()
            entries.append((name, outcome))
            condition.broadcast()
            condition.unlock()
        }

        func wait(count: Int, seconds: Double) -> Bool {
            condition.lock()
            defer { condition.unlock() }
            let deadline = Date(timeIntervalSinceNow: seconds)
            while entries.count < count { if !condition.wait(until: deadline) { return entries.count >= count } }
            return true
        }

        /// Every unit that did not complete with a write, and why.
        var failures: [String] {
            condition.lock()
            defer { condition.unlock() }
            return entries.compactMap { name, outcome in
                switch outcome {
                case .completed(nil): return nil
                case .completed(let error?): return "\(name): \(error)"
                case .undone: return "\(name): undone"
                case .notRun: return "\(name): not run"
                }
            }.sorted()
        }
    }

    @Test("increments with retry from two servers at once end at the exact total", .enabled(if: TestStore.isPostgres))
    func concurrentIncrements() async throws {
        let (a, b) = try Self.twoServers()
        let (_, taskIDs) = try Fixtures.seedProject(a.viewContext, name: "Counter", taskTitles: ["count"])
        let id = taskIDs[0]
        let perWorker = 5
        try await withThrowingTaskGroup(of: Int.self) { group in
            for worker in 0..<4 {
                let container = worker % 2 == 0 ? a : b
                group.addTask {
                    var conflicts = 0
                    for _ in 0..<perWorker {
                        // Bounded: a worker gives up after 200 conflicts (it never should).
                        while conflicts < 200 {
                            let context = container.newBackgroundContext()
                            let saved = try context.performAndWait { () throws -> Bool in
                                let task = try context.existingObject(with: id)
                                task.setValue(String((Int(task.value("title", as: String.self) ?? "") ?? 0) + 1), forKey: "title")
                                do throws(SaveError) { try context.save(); return true } catch {
                                    guard case .conflict = error else { throw error }
                                    return false
                                }
                            }
                            if saved { break }
                            conflicts += 1
                        }
                    }
                    return conflicts
                }
            }
            for try await _ in group {}
        }
        let check = a.newBackgroundContext()
        let total = try check.performAndWait { try check.existingObject(with: id).value("title", as: String.self) }
        #expect(total == String(4 * perWorker))
    }

    @Test("the same unique value inserted through two servers at once is stored once", .enabled(if: TestStore.isPostgres))
    func uniquenessAcrossServers() async throws {
        let (a, b) = try Self.twoServers()
        let outcomes = try await withThrowingTaskGroup(of: Bool.self) { group in
            for container in [a, b, a, b] {
                group.addTask {
                    let context = container.newBackgroundContext()
                    return context.performAndWait {
                        let tag = context.insertNewObject(forEntityName: "Tag")
                        tag.setValue("urgent", forKey: "label")
                        do throws(SaveError) { try context.save(); return true } catch { return false }
                    }
                }
            }
            return try await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(outcomes.filter { $0 }.count == 1)
        let check = b.newBackgroundContext()
        let stored = try check.performAndWait { try check.count(for: FetchRequest(entityName: "Tag", predicate: ObjectPredicate(format: "label == 'urgent'"))) }
        #expect(stored == 1)
    }

    @Test("a fetched results controller on one server sees the other server's saves and batch requests", .enabled(if: TestStore.isPostgres))
    func controllerSeesTheOtherServer() async throws {
        let (a, b) = try Self.twoServers()
        let view = a.newBackgroundContext()
        let request = FetchRequest(entityName: "Task", predicate: try ObjectPredicate(format: "priority >= 2"),
                                   sortDescriptors: [ObjectSortDescriptor("priority", ascending: false)])
        let controller = try view.performAndWait {
            let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: view)
            try controller.performFetch()
            return controller
        }
        let writer = b.newBackgroundContext()
        let saved = try writer.performAndWait {
            for (title, priority) in [("low", 1), ("high", 4), ("mid", 2)] {
                let task = writer.insertNewObject(forEntityName: "Task")
                task["title"] = title
                task["priority"] = Int64(priority)
            }
            return try #require(try writer.save().token)
        }
        try await FetchedResultsControllerTests.waitUntil(view, controller, reaches: saved)
        let titles = { try view.performAndWait { try controller.fetchedObjects?.map { try #require($0.value("title", as: String.self)) } } }
        #expect(try titles() == ["high", "mid"])
        let batch = try writer.performAndWait {
            try #require(try writer.execute(BatchUpdateRequest(entityName: "Task", predicate: try ObjectPredicate(format: "title == \"low\""),
                                                               propertiesToUpdate: ["priority": .attribute(.integer(5))])).changes.token)
        }
        try await FetchedResultsControllerTests.waitUntil(view, controller, reaches: batch)
        #expect(try titles() == ["low", "high", "mid"])
    }

    @Test("saves from two servers are one history, in one order, read the same from each", .enabled(if: TestStore.isPostgres))
    func oneHistoryAcrossServers() async throws {
        let (a, b) = try Self.twoServers()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (n, container) in [a, b].enumerated() {
                group.addTask {
                    for i in 0..<10 {
                        let context = container.newBackgroundContext()
                        try context.performAndWait {
                            context.insertNewObject(forEntityName: "Project").setValue("server \(n) project \(i)", forKey: "name")
                            try context.save()
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        let fromA = try a.coordinator.history(after: PersistentHistoryToken(rawValue: 0), limit: 100)
        let fromB = try b.coordinator.history(after: PersistentHistoryToken(rawValue: 0), limit: 100)
        #expect(fromA.count == 20)
        #expect(fromA.map(\.token) == fromB.map(\.token))
        #expect(fromA.map(\.token.rawValue) == Array(1...20))
        #expect(fromA.map { $0.changes.map(\.objectID) } == fromB.map { $0.changes.map(\.objectID) })
    }

    /// Tasks with every kind of value the compiled comparisons meet: nulls, ties, extremes.
    static func seededTasks() throws -> PersistentContainer {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let projects = (0..<3).map { i -> ManagedObject in
                let project = context.insertNewObject(forEntityName: "Project")
                project.setValue("p\(i)", forKey: "name")
                project.setValue(i == 1, forKey: "archived")
                return project
            }
            let tags = ["red", "Blue", "b", ""].map { label -> ManagedObject in
                let tag = context.insertNewObject(forEntityName: "Tag")
                tag.setValue(label, forKey: "label")
                return tag
            }
            // With what folds in ways ILIKE does not: the Kelvin sign (K), the long s (s), ß (ss).
            let titles = ["a", "B", "b", "é", "e\u{301}", "", "zz", "a b", "A", "ß", "50%", "a_b", #"back\slash"#, "日本", "\u{212A}m", "\u{17F}s", "SS"]
            for i in 0..<60 {
                let task = context.insertNewObject(forEntityName: "Task")
                task.setValue(titles[i % titles.count] + (i % 7 == 0 ? "" : String(i % 4)), forKey: "title")
                task.setValue(Int64(i % 6), forKey: "priority")
                task.setValue(i % 3 == 0, forKey: "done")
                if i % 5 != 0 { task.setValue(Double(i % 9) * 0.5 - 1, forKey: "estimate") }
                if i % 4 != 0 { task.setValue(Date(timeIntervalSinceReferenceDate: Double(i % 8) * 86_400), forKey: "due") }
                if i % 3 != 1 { task.setObject(projects[i % 3], forKey: "project") }
                // Tags on most tasks, none on every fifth.
                for (t, tag) in tags.enumerated() where i % 5 != 0 && (i + t) % 3 == 0 { task.addObject(tag, toKey: "tags") }
            }
            try context.save()
        }
        return container
    }

    static let twinPredicates = [
        "priority > 2", "priority >= 2 AND done == YES", "NOT (estimate < 0)", "estimate == nil", "estimate != nil OR priority == 5",
        "title == 'a'", "title < 'b'", "title >= 'a' AND title < 'e'", "priority IN {1, 3, 5}", "estimate IN {0.5, nil}",
        "priority BETWEEN {2, 4}", "NOT (priority BETWEEN {2, 4}) OR done == NO", "due > CAST(172800, 'NSDate')", "due == nil AND priority < 3",
        "project == nil", "project != nil AND priority != 2", "title BEGINSWITH[c] 'a' AND priority > 1", "title ==[cd] 'e' OR priority == 0",
        "project.name == 'p1' AND estimate > 0", "NOT (title != 'zz')", "TRUEPREDICATE", "FALSEPREDICATE",
        "title BEGINSWITH 'a'", "title BEGINSWITH ''", "NOT (title BEGINSWITH 'B') AND priority < 4", "title ENDSWITH '1'",
        "title ENDSWITH 'e\u{301}' OR title ENDSWITH '本'", "title CONTAINS ' '", "title CONTAINS '%'", "NOT (title CONTAINS 'a')",
        "title LIKE 'a*'", "title LIKE '?1'", "title LIKE '*%*'", "title LIKE 'a_*'", #"title LIKE '*\\*'"#, "title LIKE ''",
        "title LIKE '*'", "title MATCHES 'a.*' OR title CONTAINS '_'", "estimate == nil AND NOT (title ENDSWITH '2')",
        "project.name != 'p1'", "project.name == nil", "project.name != nil AND priority > 3", "NOT (project.name < 'p2')",
        "project.name IN {'p0', nil}", "project.name BETWEEN {'p1', 'p2'}", "project.name BEGINSWITH 'p' AND NOT (project.name ENDSWITH '0')",
        "project.archived == NO OR project.name == 'p2'", "project.archived == nil",
        // [c] and [d] with ASCII constants: an ILIKE in SQL leaves rows out, the evaluator decides.
        "title CONTAINS[c] 'b'", "title ==[c] 'ss'", "title ==[cd] 'E'", "title BEGINSWITH[c] 'k'", "title ENDSWITH[d] 'e'",
        "title LIKE[c] 'a?*'", "title CONTAINS[c] '%'", "title CONTAINS[cd] 's' AND priority < 3", "NOT (title CONTAINS[c] 'A')",
        "title BEGINSWITH[c] 'S' OR priority == 1", "title ==[c] 'é'",
        // A to-many's destinations: EXISTS over the links.
        "ANY tags.label == 'red'", "ANY tags.label BEGINSWITH 'b' AND priority > 1", "NOT (ANY tags.label == 'red')", "ANY tags.label != 'red'",
        "ALL tags.label > 'a'", "NONE tags.label IN {'red', 'b'}", "ANY tags.label ==[c] 'BLUE'", "ANY tags.label < 'c' OR done == YES",
    ]
    static let twinSorts: [[ObjectSortDescriptor]] = [
        [], [ObjectSortDescriptor("priority", ascending: false)], [ObjectSortDescriptor("estimate"), ObjectSortDescriptor("title", ascending: false)],
        [ObjectSortDescriptor("due", ascending: false), ObjectSortDescriptor("done")], [ObjectSortDescriptor("title", options: [.caseInsensitive])],
        [ObjectSortDescriptor("project.name")],
    ]

    /// Two contexts over `container`: one whose fetches PostgreSQL answers where it can, with
    /// rows streamed 3 at a time where the evaluator checks them, and the plain path, every row
    /// read and the evaluator over all of them (`storeCompilesPredicates` off).
    static func twinContexts(_ container: PersistentContainer) -> (compiled: ManagedObjectContext, plain: ManagedObjectContext) {
        let compiled = container.newBackgroundContext()
        let plain = container.newBackgroundContext()
        plain.performAndWait { plain.storeCompilesPredicates = false }
        compiled.performAndWait { compiled.fetchTuning.streamBatchRows = 3 }
        return (compiled, plain)
    }

    @Test("predicates and sorts answered in SQL give what the evaluator over every row gives (twin of the plain path)",
          .enabled(if: TestStore.isPostgres))
    func compiledFetchesAgreeWithTheEvaluator() throws {
        // Where the evaluator checks a part of the predicate over rows streamed in SQL's order,
        // batches of 3 rows: the seeded tasks span many, and a window ends inside one.
        let (compiled, plain) = Self.twinContexts(try Self.seededTasks())
        var compared = 0
        for format in Self.twinPredicates {
            for sorts in Self.twinSorts {
                for (limit, offset) in [(0, 0), (7, 3), (2, 0)] {
                    let request = FetchRequest(entityName: "Task", predicate: try ObjectPredicate(format: format), sortDescriptors: sorts,
                                               fetchLimit: limit, fetchOffset: offset)
                    let fast = try compiled.performAndWait { (try compiled.fetch(request).map(\.objectID), try compiled.count(for: request)) }
                    let slow = try plain.performAndWait { (try plain.fetch(request).map(\.objectID), try plain.count(for: request)) }
                    #expect(fast.0 == slow.0, "\(format) sorted by \(sorts.map(\.keyPath)) limit \(limit) offset \(offset)")
                    #expect(fast.1 == slow.1, "count of \(format)")
                    compared += 1
                }
            }
        }
        #expect(compared == Self.twinPredicates.count * Self.twinSorts.count * 3)
        // A to-many whose destinations hold the key (Project.tasks): EXISTS over their rows.
        for format in ["ANY tasks.priority > 3", "ALL tasks.done == YES", "NONE tasks.estimate < 0.5", "ANY tasks.title CONTAINS 'a'",
                       "NOT (ANY tasks.due == nil) OR name == 'p2'", "ALL tasks.estimate != nil", "ALL tasks.estimate > -2.5"] {
            let request = FetchRequest(entityName: "Project", predicate: try ObjectPredicate(format: format), sortDescriptors: [ObjectSortDescriptor("name")])
            let fast = try compiled.performAndWait { try compiled.fetch(request).map(\.objectID) }
            let slow = try plain.performAndWait { try plain.fetch(request).map(\.objectID) }
            #expect(fast == slow, "\(format)")
        }
    }

    @Test("pages by cursor answered in SQL are the evaluator's pages (twin of the plain path)", .enabled(if: TestStore.isPostgres))
    func compiledCursorsAgreeWithTheEvaluator() throws {
        let container = try Self.seededTasks()
        let compiled = container.newBackgroundContext()
        let plain = container.newBackgroundContext()
        plain.performAndWait { plain.storeCompilesPredicates = false }
        for format in ["TRUEPREDICATE", "priority >= 1", "estimate != nil OR done == YES", "title BEGINSWITH 'a'"] {
            for sorts in Self.twinSorts.dropLast(2) {
                let request = FetchRequest(entityName: "Task", predicate: try ObjectPredicate(format: format), sortDescriptors: sorts)
                let fast = try compiled.performAndWait { try PaginationTests.pages(compiled, request, size: 7) }
                let slow = try plain.performAndWait { try PaginationTests.pages(plain, request, size: 7) }
                #expect(fast == slow, "\(format) sorted by \(sorts.map(\.keyPath))")
                #expect(!fast.isEmpty)
            }
        }
        let store = try #require(container.coordinator.store as? PostgreSQLStore)
        let context = container.newBackgroundContext()
        let cursorPlan = try context.performAndWait { () throws -> PGFetchSQL in
            var request = FetchRequest(entityName: "Task", predicate: try ObjectPredicate(format: "priority >= 1"),
                                       sortDescriptors: [ObjectSortDescriptor("estimate", ascending: false)], fetchLimit: 5)
            let first = try context.fetch(request)
            request.after = try context.cursor(after: first.last!, for: request)
            let prepared = try context.prepare(request)
            return PGFetchSQL(prepared, schema: store.schema)
        }
        #expect(cursorPlan.cursorCompiled && cursorPlan.residual == nil, "the second page is one statement")
    }

    @Test("what compiles to SQL and what is left to the evaluator", .enabled(if: TestStore.isPostgres))
    func compiledParts() throws {
        let container = try Fixtures.container()
        let store = try #require(container.coordinator.store as? PostgreSQLStore)
        let context = container.newBackgroundContext()
        func plan(_ format: String, _ sorts: [ObjectSortDescriptor] = []) throws -> PGFetchSQL {
            let prepared = try context.performAndWait { try context.prepare(FetchRequest(entityName: "Task", predicate: try ObjectPredicate(format: format),
                                                                                         sortDescriptors: sorts)) }
            return PGFetchSQL(prepared, schema: store.schema)
        }
        let whole = try plan("priority > 2 AND (done == YES OR estimate == nil) AND NOT (title == 'x')", [ObjectSortDescriptor("priority")])
        #expect(whole.residual == nil && whole.orderBy != nil)
        #expect(whole.parameters == ["2", "t", "x"], "every value a bound parameter")
        let strings = try plan("title BEGINSWITH 'a' AND title ENDSWITH 'b' AND title CONTAINS 'c' AND title LIKE '*50%?'")
        #expect(strings.residual == nil, "string operators without [c] or [d] are SQL")
        #expect(strings.parameters == ["a", "b", "c", #"%50\%_"#])
        let part = try plan("priority > 2 AND title BEGINSWITH[c] 'a'", [ObjectSortDescriptor("title", options: [.caseInsensitive])])
        #expect(part.condition.contains("priority") && part.residual != nil && part.orderBy == nil)
        #expect(try plan("priority > 2", [ObjectSortDescriptor("project.name", ascending: false)]).orderBy?.contains("SELECT") == true,
                "a to-one's attribute sorts in SQL, by a subquery")
        let hop = try plan("project.name == 'p' OR priority == 1")
        #expect(hop.residual == nil && hop.condition.contains("EXISTS"), "a to-one's attribute is a subquery")
        let caseless = try plan("title CONTAINS[c] '5_'")
        #expect(caseless.residual != nil && caseless.condition.contains("ILIKE") && caseless.parameters == [#"%5\_%"#],
                "a necessary condition in SQL; the evaluator decides")
        #expect(try plan("title CONTAINS[c] 'é'").condition == "true", "no ILIKE for a constant beyond ASCII")
        let toMany = try plan("ANY tags.label == 'p' OR priority == 1")
        #expect(toMany.residual == nil && toMany.condition.contains("EXISTS"), "a to-many's destinations are a subquery")
        let none = try plan("ANY tags.label MATCHES 'p.*' OR priority == 1")
        #expect(none.condition == "true" && none.residual != nil)
    }
}
