import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite

/// A limited fetch sorted descending by an indexed attribute walks the index group by group
/// (GroupedOrderFetch) instead of letting SQLite sort each group of equal values. Only the plan
/// may differ: every page, cursor and budget is compared with the plain statement's answer.
@Suite("Descending sorts walked group by group")
struct GroupedOrderFetchTests {
    /// 3,000 tasks: priority 0...5 or none (one in eight), `done` for about a third, in an order
    /// that mixes keys within each group.
    private static func seeded() throws -> (TemporaryStore, PersistentContainer) {
        let store = TemporaryStore()
        let container = try Fixtures.container(.path(store.url.path, readerCount: 2))
        let context = container.newBackgroundContext()
        try context.performAndWait {
            var seed: UInt64 = 0x9E37_79B9
            for n in 1...3000 {
                seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                let task = context.insertNewObject(forEntityName: "Task")
                task.setValue("task \(n)", forKey: "title")
                let p = Int((seed >> 33) % 8)
                task.setValue(p >= 6 ? nil : Int64(p), forKey: "priority")
                task.setValue((seed >> 20) % 3 == 0, forKey: "done")
            }
            try context.save()
        }
        return (store, container)
    }

    static let predicates = ["done == NO", "done == YES AND priority >= 2", "done == NO AND priority <= 4", "done == YES AND priority == nil"]
    static let sorts = [[ObjectSortDescriptor("priority", ascending: false)], [ObjectSortDescriptor("priority", ascending: true)]]

    /// Every page of `request`, following cursors to the end.
    static func pages(_ context: ManagedObjectContext, _ request: FetchRequest) throws -> [[ManagedObjectID]] {
        var result: [[ManagedObjectID]] = []
        var request = request
        while result.count < 400 {
            let objects = try context.fetch(request)
            result.append(objects.map(\.objectID))
            guard objects.count == request.fetchLimit, let last = objects.last else { break }
            request.after = try context.cursor(after: last, for: request)
            context.reset()
        }
        return result
    }

    @Test("every page and every cursor gives what the plain statement gives", arguments: [SQLitePlanOptions.defaultGroupedOrderBudget, 2, 1])
    func pagesMatchThePlainStatement(budget: Int) throws {
        let (store, container) = try Self.seeded()
        defer { withExtendedLifetime(store) {} }
        let walked = container.newBackgroundContext(name: "walked"), plain = container.newBackgroundContext(name: "plain")
        // The budget is the store's: the plain path (0) and the walk take turns, one fetch at a time.
        let options = container.coordinator.sqlite.planOptions
        var plainWalks = 0, walks = 0
        func onPlainPath<T>(_ body: () throws -> T) rethrows -> T {
            options.groupedOrderBudget = 0
            let before = options.groupedOrderWalks
            defer { plainWalks += options.groupedOrderWalks - before }
            return try body()
        }
        func walking<T>(_ body: () throws -> T) rethrows -> T {
            options.groupedOrderBudget = budget
            let before = options.groupedOrderWalks
            defer { walks += options.groupedOrderWalks - before }
            return try body()
        }
        for format in Self.predicates {
            for sort in Self.sorts {
                for limit in [1, 7, 20, 700] {
                    let request = FetchRequest(entityName: "Task", predicate: try ObjectPredicate(format: format), sortDescriptors: sort, fetchLimit: limit)
                    let expected = try onPlainPath { try plain.performAndWait { try Self.pages(plain, request) } }
                    let got = try walking { try walked.performAndWait { try Self.pages(walked, request) } }
                    #expect(got == expected, "\(format) sorted \(sort.map { ($0.ascending ? "+" : "-") + $0.keyPath }) limit \(limit), budget \(budget)")
                    let ids = try walking { try walked.performAndWait { try walked.fetchObjectIDs(request) } }
                    #expect(ids == expected.first, "IDs, \(format) limit \(limit)")
                }
            }
        }
        // The walk ran (a descending sort over the (done, priority) index sorts groups), and the
        // plain path never walked.
        #expect(walks > 0)
        #expect(plainWalks == 0)
    }

    @Test("the plain statement's plan sorts each group descending, and not ascending")
    func planSortsGroupsDescending() throws {
        let (store, container) = try Self.seeded()
        defer { withExtendedLifetime(store) {} }
        let reader = container.newBackgroundContext()
        container.coordinator.sqlite.planOptions.groupedOrderBudget = 0
        let sorts = try reader.performAndWait {
            try Self.sorts.map { sort in
                let request = FetchRequest(entityName: "Task", predicate: try ObjectPredicate(format: "done == NO"), sortDescriptors: sort, fetchLimit: 20)
                let (sql, _) = try reader.compiledSQL(for: request)
                return try container.coordinator.sqlite.readConnection { try $0.sortsRightPartOfOrderBy(sql) }
            }
        }
        #expect(sorts == [true, false])
    }
}
