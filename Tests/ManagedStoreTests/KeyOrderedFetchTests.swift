import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite

/// A limited fetch ordered by key first scans the table in key order with a step budget, and
/// lets SQLite's plan find the rest when the budget runs out (KeyOrderedFetch). Only the plan may
/// differ: these compare every such page with the prefix of the same fetch without a limit.
@Suite("Fetches in key order with a limit")
struct KeyOrderedFetchTests {
    /// 3,000 tasks. Priority cycles 0...3; `done` is true for every third. Priority 5 marks
    /// tasks 1, 2, 3 and the last one only (3 and 3000 are done): a scan finds the early ones,
    /// runs out of budget long before the end, and the rest must come from the index plan.
    private static func seeded() throws -> (TemporaryStore, PersistentContainer, [ManagedObjectID]) {
        let store = TemporaryStore()
        let container = try Fixtures.container(.path(store.url.path, readerCount: 2))
        let context = container.newBackgroundContext()
        let ids = try context.performAndWait {
            let tasks = (1...3000).map { n -> ManagedObject in
                let task = context.insertNewObject(forEntityName: "Task")
                task.setValue("task \(n)", forKey: "title")
                task.setValue(Int64(n <= 3 || n == 3000 ? 5 : n % 4), forKey: "priority")
                task.setValue(n % 3 == 0, forKey: "done")
                return task
            }
            try context.save()
            return tasks.map(\.objectID)
        }
        return (store, container, ids)
    }

    /// The first four use the (done, priority) index with a range, so SQLite's plan sorts and
    /// the key-order scan runs first; the last two are served in key order by SQLite's plan.
    static let predicates = [
        "priority >= 2 AND done == NO",    // dense: the scan stops early
        "priority >= 5 AND done == YES",   // the third task, then only the last: the scan runs out
        "priority >= 4 AND done == NO",    // the first two, then nothing
        "priority > 5 AND done == YES",    // nothing at all
        "priority == 5 AND done == YES",   // equality on both index columns: rows come in key order
        "title BEGINSWITH 'task 29'",      // no index: SQLite scans in key order itself
    ]

    @Test("every page equals the start of the unlimited fetch, with and without a cursor, objects and IDs",
          arguments: [SQLitePlanOptions.defaultKeyOrderScanBudget, 300, 1])
    func pagesMatchTheUnlimitedFetch(budget: Int32) throws {
        let (store, container, ids) = try Self.seeded()
        defer { withExtendedLifetime(store) {} }
        // Small budgets stop scans early, sooner or later in the pages.
        container.coordinator.sqlite.planOptions.keyOrderScanBudget = budget
        let reader = container.newBackgroundContext(name: "reader")
        try reader.performAndWait {
            for format in Self.predicates {
                let predicate = try ObjectPredicate(format: format)
                let all = try reader.fetchObjectIDs(FetchRequest(entityName: "Task", predicate: predicate))
                #expect(all.map { $0.primaryKey! } == all.map { $0.primaryKey! }.sorted(), "\(format): unlimited fetch in key order")
                for limit in [1, 3, 4, 20, 500] {
                    let request = FetchRequest(entityName: "Task", predicate: predicate, fetchLimit: limit)
                    #expect(try reader.fetchObjectIDs(request) == Array(all.prefix(limit)), "\(format) limit \(limit): IDs")
                    #expect(try reader.fetch(request).map(\.objectID) == Array(all.prefix(limit)), "\(format) limit \(limit): objects")
                    reader.reset()
                }
                // After a cursor: the rest of the order, still in pages.
                if all.count > 2 {
                    let first = try reader.fetch(FetchRequest(entityName: "Task", predicate: predicate, fetchLimit: 2))
                    let cursor = try reader.cursor(after: first[1], for: FetchRequest(entityName: "Task", predicate: predicate, fetchLimit: 2))
                    let next = try reader.fetchObjectIDs(FetchRequest(entityName: "Task", predicate: predicate, fetchLimit: 2, after: cursor))
                    #expect(next == Array(all.dropFirst(2).prefix(2)), "\(format): the page after a cursor")
                    reader.reset()
                }
            }
        }
        #expect(ids.count == 3000)
    }

    @Test("SQLite's plan sorts for the first four predicates and reads in key order for the last two")
    func planSortsWhereExpected() throws {
        let (store, container, _) = try Self.seeded()
        defer { withExtendedLifetime(store) {} }
        let reader = container.newBackgroundContext(name: "reader")
        let sorts = try reader.performAndWait {
            try Self.predicates.map { format in
                let (sql, _) = try reader.compiledSQL(for: FetchRequest(entityName: "Task", predicate: try ObjectPredicate(format: format), fetchLimit: 20))
                return try container.coordinator.sqlite.readConnection { try $0.sortsForOrderBy(sql) }
            }
        }
        #expect(sorts == [true, true, true, true, false, false])
    }

    @Test("a scan stopped by its budget leaves the snapshot usable: later reads in it still work")
    func stoppedScanKeepsTheSnapshot() throws {
        let (store, container, ids) = try Self.seeded()
        defer { withExtendedLifetime(store) {} }
        container.coordinator.sqlite.planOptions.keyOrderScanBudget = 300
        let reader = container.newBackgroundContext(name: "reader")
        try reader.performAndWait {
            try reader.performInSnapshot {
                let rare = FetchRequest(entityName: "Task", predicate: try ObjectPredicate(format: "priority >= 5 AND done == YES"), fetchLimit: 10)
                #expect(try reader.fetchObjectIDs(rare) == [ids[2], ids[2999]])
                #expect(try reader.count(for: FetchRequest(entityName: "Task")) == 3000)
                #expect(try reader.existingObject(with: ids[2999]).value("title", as: String.self) == "task 3000")
            }
        }
    }
}
