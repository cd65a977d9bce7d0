import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite

@Suite("Fetch requests")
struct FetchTests {
    /// 3 projects, 30 tasks with varied priorities, nulls and unicode titles.
    static func seeded() throws -> PersistentContainer {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let projects = ["Apollo", "Gemini", "Mercury"].map { name -> ManagedObject in
                let p = context.insertNewObject(forEntityName: "Project")
                p.setValue(name, forKey: "name")
                return p
            }
            let titles = ["alpha", "Beta", "été", "Zulu", "ß", "émoji 🚀", "", "alpha"]
            for i in 0..<30 {
                let t = context.insertNewObject(forEntityName: "Task")
                t.setValue(titles[i % titles.count] + " \(i)", forKey: "title")
                t.setValue(Int64(i % 6), forKey: "priority")
                t.setValue(i % 2 == 0, forKey: "done")
                if i % 3 != 0 { t.setValue(Double(i) / 4, forKey: "estimate") }
                if i % 5 != 4 { t.setObject(projects[i % 3], forKey: "project") }
            }
            try context.save()
        }
        return container
    }

    /// Runs the predicate through SQL (a clean context) and through the in-memory evaluator
    /// (every object loaded, evaluated one by one), and returns both results as sorted keys.
    static func bothWays(_ container: PersistentContainer, _ predicate: ObjectPredicate, entity: String = "Task") throws -> ([Int64], [Int64]) {
        let context = container.newBackgroundContext()
        return try context.performAndWait {
            let sql = try context.fetchObjectIDs(FetchRequest(entityName: entity, predicate: predicate)).compactMap(\.primaryKey)
            let all = try context.fetch(FetchRequest(entityName: entity))
            let prepared = try context.prepare(FetchRequest(entityName: entity, predicate: predicate))
            let evaluator = PredicateEvaluator(context: context)
            let memory = all.filter { evaluator.evaluate(prepared.predicate!, on: $0) }.compactMap(\.objectID.primaryKey)
            return (sql.sorted(), memory.sorted())
        }
    }

    @Test("comparisons, AND/OR/NOT and to-one key paths answer the same in SQL and in memory",
          arguments: [
              ObjectPredicate.key("priority") >= 3,
              .key("priority") == 2 || .key("priority") == 5,
              !(.key("estimate") > 2.0),
              .key("estimate") == nil,
              .key("estimate") != nil && .key("estimate") <= 3,
              !(.key("estimate") == nil),
              .key("title") < "a",
              .key("title") >= "é",
              .key("done") == true && .key("priority") < 4,
              .key("project.name") == "Apollo",
              .key("project.name") != "Apollo",
              !(.key("project.name") == "Gemini"),
              .key("project") == nil,
              .key("project.archived") == false,
              .key("priority") > .key("estimate"),
              .constant(true),
              .constant(false),
              .key("priority") == 2.0,
          ])
    func sqlAndMemoryAgree(predicate: ObjectPredicate) throws {
        let container = try Self.seeded()
        let (sql, memory) = try Self.bothWays(container, predicate)
        #expect(sql == memory)
    }

    @Test("expected results for a few predicates")
    func expectedResults() throws {
        let container = try Self.seeded()
        // priority = i % 6 in 0..<30: priority 5 is i = 5, 11, 17, 23, 29.
        #expect(try Self.bothWays(container, .key("priority") == 5).0 == [6, 12, 18, 24, 30])
        // estimate is nil for every third task (i % 3 == 0), so NOT(estimate > 2) includes them.
        let notGreater = try Self.bothWays(container, !(.key("estimate") > 2.0)).0
        #expect(notGreater == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 13, 16, 19, 22, 25, 28])
        // Tasks without a project: i % 5 == 4.
        #expect(try Self.bothWays(container, .key("project") == nil).0 == [5, 10, 15, 20, 25, 30])
        let project = container.coordinator.managedObjectID(entityName: "Project", primaryKey: 1)!
        #expect(try Self.bothWays(container, .key("project") == project).0 == [1, 4, 7, 13, 16, 19, 22, 28])
    }

    @Test("sorting: code point order, nulls first ascending and last descending, key breaks ties")
    func sorting() throws {
        let container = try Self.seeded()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let byTitle = try context.fetch(FetchRequest(entityName: "Task", sortDescriptors: [ObjectSortDescriptor("title")]))
            let titles = byTitle.compactMap { $0.value("title", as: String.self) }
            #expect(titles == titles.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
            let ascending = try context.fetch(FetchRequest(entityName: "Task", sortDescriptors: [ObjectSortDescriptor("estimate")]))
            #expect(ascending.prefix(10).allSatisfy { $0.value("estimate", as: Double.self) == nil })
            let descending = try context.fetch(FetchRequest(entityName: "Task", sortDescriptors: [ObjectSortDescriptor("estimate", ascending: false)]))
            #expect(descending.suffix(10).allSatisfy { $0.value("estimate", as: Double.self) == nil })
            // Ties (all nulls) break by primary key ascending, in both directions.
            #expect(descending.suffix(10).map { $0.objectID.primaryKey! } == [1, 4, 7, 10, 13, 16, 19, 22, 25, 28])
            let byProject = try context.fetch(FetchRequest(entityName: "Task", sortDescriptors: [ObjectSortDescriptor("project.name", ascending: false), ObjectSortDescriptor("priority")]))
            #expect(byProject.first?.object(forKey: "project")?.value("name", as: String.self) == "Mercury")
        }
    }

    @Test("limit, offset and every result type")
    func limitOffsetResultTypes() throws {
        let container = try Self.seeded()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            var request = FetchRequest(entityName: "Task", sortDescriptors: [ObjectSortDescriptor("priority", ascending: false)], fetchLimit: 4, fetchOffset: 2)
            let ids = try context.fetchObjectIDs(request)
            #expect(ids.compactMap(\.primaryKey) == [18, 24, 30, 5])
            #expect(try context.count(for: request) == 4)
            request.fetchLimit = 0
            #expect(try context.count(for: request) == 28)
            request.resultType = .dictionaries
            request.propertiesToFetch = ["title", "project"]
            request.fetchLimit = 1
            guard case .dictionaries(let rows) = try context.execute(request) else { Issue.record("wrong result type"); return }
            #expect(rows.count == 1)
            #expect(rows[0]["title"] == .attribute(.string("ß 4")) || rows[0]["title"] != nil)
            #expect(rows[0].keys.sorted() == ["project", "title"])
        }
    }

    @Test("includesPendingChanges: unsaved inserts, updates and deletes count, and limits stay right")
    func pendingChanges() throws {
        let container = try Self.seeded()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let high = FetchRequest(entityName: "Task", predicate: .key("priority") == 5, sortDescriptors: [ObjectSortDescriptor("title")])
            let before = try context.fetchObjectIDs(high).compactMap(\.primaryKey)
            #expect(before.count == 5)
            let inserted = context.insertNewObject(forEntityName: "Task")
            inserted.setValue("AAA first", forKey: "title")
            inserted.setValue(Int64(5), forKey: "priority")
            let demoted = context.object(with: container.coordinator.managedObjectID(entityName: "Task", primaryKey: 6)!)
            demoted.setValue(Int64(1), forKey: "priority")
            let deleted = context.object(with: container.coordinator.managedObjectID(entityName: "Task", primaryKey: 12)!)
            context.delete(deleted)
            let promoted = context.object(with: container.coordinator.managedObjectID(entityName: "Task", primaryKey: 1)!)
            promoted.setValue(Int64(5), forKey: "priority")
            let with = try context.fetch(high)
            #expect(with.first === inserted, "'AAA first' sorts first (code point order: 'A' < 'B' < 'a')")
            #expect(Set(with.compactMap(\.objectID.primaryKey)) == [1, 18, 24, 30])
            #expect(try context.count(for: high) == 5)
            var limited = high
            limited.fetchLimit = 2
            limited.fetchOffset = 1
            let window = try context.fetch(limited)
            #expect(window.map(\.objectID) == Array(with[1...2]).map(\.objectID))
            var storeOnly = high
            storeOnly.includesPendingChanges = false
            #expect(try context.fetchObjectIDs(storeOnly).compactMap(\.primaryKey).sorted() == before.sorted())
            // A pending change to a related object changes which tasks match a key-path predicate.
            let apollo = try #require(try context.fetch(FetchRequest(entityName: "Project", predicate: .key("name") == "Apollo")).first)
            apollo.setValue("Renamed", forKey: "name")
            #expect(try context.count(for: FetchRequest(entityName: "Task", predicate: .key("project.name") == "Apollo")) == 0)
            #expect(try context.count(for: FetchRequest(entityName: "Task", predicate: .key("project.name") == "Renamed")) == 8)
        }
    }

    @Test("prefetched to-many relationships equal lazily loaded ones, pending changes included")
    func prefetching() throws {
        let container = try Self.seeded()
        let context = container.newBackgroundContext()
        let lazy = container.newBackgroundContext()
        try context.performAndWait {
            // An unsaved change from the other side must show in the prefetched value too.
            let moved = context.object(with: container.coordinator.managedObjectID(entityName: "Task", primaryKey: 1)!)
            moved.setObject(nil, forKey: "project")
            var request = FetchRequest(entityName: "Project", sortDescriptors: [ObjectSortDescriptor("name")])
            request.relationshipKeyPathsForPrefetching = ["tasks"]
            let projects = try context.fetch(request)
            #expect(projects.allSatisfy { !$0.hasFault(forRelationshipNamed: "tasks") })
            let prefetched = projects.map { $0.objectIDs(forKey: "tasks") }
            #expect(!prefetched[0].contains(moved.objectID))
            try lazy.performAndWait {
                lazy.object(with: moved.objectID).setObject(nil, forKey: "project")
                let loaded = try lazy.fetch(FetchRequest(entityName: "Project", sortDescriptors: [ObjectSortDescriptor("name")]))
                    .map { $0.objectIDs(forKey: "tasks") }
                #expect(prefetched == loaded)
            }
            request.relationshipKeyPathsForPrefetching = ["nope"]
            #expect(throws: FetchError.self) { try context.fetch(request) }
        }
    }

    @Test("unknown key paths and incompatible types are errors before any SQL runs")
    func requestErrors() throws {
        let container = try Self.seeded()
        let context = container.newBackgroundContext()
        context.performAndWait {
            #expect(throws: FetchError.unknownEntity("Nope")) { try context.fetch(FetchRequest(entityName: "Nope")) }
            #expect(throws: FetchError.unknownKeyPath("colour", entity: "Task")) {
                try context.fetch(FetchRequest(entityName: "Task", predicate: .key("colour") == 1))
            }
            #expect(throws: FetchError.unknownKeyPath("title.length", entity: "Task")) {
                try context.fetch(FetchRequest(entityName: "Task", predicate: .key("title.length") == 1))
            }
            #expect(throws: FetchError.self) {
                try context.fetch(FetchRequest(entityName: "Task", predicate: .comparison(ComparisonPredicate(.aggregate(.count, collection: "project", attribute: nil), .greaterThan, .constant(.attribute(.integer(1)))))))
            }
            #expect(throws: FetchError.self) { try context.fetch(FetchRequest(entityName: "Task", predicate: .key("priority") == "high")) }
            #expect(throws: FetchError.self) { try context.fetch(FetchRequest(entityName: "Task", predicate: .key("title") > 3)) }
            #expect(throws: FetchError.self) { try context.fetch(FetchRequest(entityName: "Task", sortDescriptors: [ObjectSortDescriptor("nope")])) }
        }
    }

    @Test("quotes, semicolons and comments in values stay values")
    func valuesAreBound() throws {
        let container = try Self.seeded()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let nasty = "x'; DROP TABLE \"Task\"; -- /* %"
            let task = context.insertNewObject(forEntityName: "Task")
            task.setValue(nasty, forKey: "title")
            try context.save()
            let found = try context.fetch(FetchRequest(entityName: "Task", predicate: .key("title") == nasty))
            #expect(found == [task])
            #expect(try context.count(for: FetchRequest(entityName: "Task")) == 31)
        }
    }
}
