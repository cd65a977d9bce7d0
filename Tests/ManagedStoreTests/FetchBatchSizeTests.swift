import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite

/// Tasks with repeated priorities, null estimates and mixed-case titles, so order and ties matter.
enum LongResultFixture {
    static func seed(_ context: ManagedObjectContext, count: Int) throws {
        try context.performAndWait {
            let titles = ["delta", "Alpha", "alpha", "Charlie", "bravo", "Echo"]
            for i in 0..<count {
                let task = context.insertNewObject(forEntityName: "Task")
                task.setValue("\(titles[i % titles.count]) \(i / titles.count)", forKey: "title")
                task.setValue(Int64(i % 4), forKey: "priority")
                task.setValue(i % 3 == 0, forKey: "done")
                if i % 5 != 0 { task.setValue(Double(i % 7), forKey: "estimate") }
            }
            try context.save()
        }
    }

    /// Requests covering predicates, orders (ties, nulls, folding, descending), limits, offsets.
    static var requests: [FetchRequest] {
        get throws {
            let predicates: [ObjectPredicate?] = [nil, try ObjectPredicate(format: "priority >= 2"),
                                                  try ObjectPredicate(format: "done == NO AND estimate != nil"),
                                                  try ObjectPredicate(format: "title BEGINSWITH[c] 'a'")]
            let orders: [[ObjectSortDescriptor]] = [[], [ObjectSortDescriptor("priority")],
                                                    [ObjectSortDescriptor("estimate", ascending: false), ObjectSortDescriptor("title")],
                                                    [ObjectSortDescriptor("title", options: .caseInsensitive)]]
            let windows: [(limit: Int, offset: Int)] = [(0, 0), (7, 0), (0, 5), (9, 4)]
            var requests: [FetchRequest] = []
            for (p, predicate) in predicates.enumerated() {
                for (o, order) in orders.enumerated() {
                    let window = windows[(p + o) % windows.count]
                    requests.append(FetchRequest(entityName: "Task", predicate: predicate, sortDescriptors: order,
                                                 fetchLimit: window.limit, fetchOffset: window.offset))
                }
            }
            return requests
        }
    }

    /// Unsaved changes of every kind to the tasks: an insert, an update that moves an object in
    /// the orders and in or out of the predicates, and a delete.
    static func makePendingChanges(_ context: ManagedObjectContext) throws {
        try context.performAndWait {
            let all = try context.fetch(FetchRequest(entityName: "Task", sortDescriptors: [ObjectSortDescriptor("title")]))
            all[3].setValue(Int64(3), forKey: "priority")
            all[3].setValue("aardvark", forKey: "title")
            all[3].setValue(nil as Double?, forKey: "estimate")
            context.delete(all[8])
            let inserted = context.insertNewObject(forEntityName: "Task")
            inserted.setValue("Alpha new", forKey: "title")
            inserted.setValue(Int64(2), forKey: "priority")
            inserted.setValue(4.0, forKey: "estimate")
        }
    }

    /// 60 tasks, and three contexts to compare fetches in: one without changes, one with
    /// unsaved changes, and a child of that one with more changes of its own.
    static func twinContexts(_ container: PersistentContainer) throws -> [ManagedObjectContext] {
        try seed(container.newBackgroundContext(), count: 60)
        let clean = container.newBackgroundContext(name: "clean")
        let changed = container.newBackgroundContext(name: "changed")
        try makePendingChanges(changed)
        let child = ManagedObjectContext(parent: changed)
        try makePendingChanges(child)
        return [clean, changed, child]
    }

    /// What a user sees of a task: its ID and values.
    static func describe(_ objects: [ManagedObject]) -> [String] {
        objects.map { object in
            let title = object.value("title", as: String.self) ?? "-"
            let priority = object.value("priority", as: Int64.self).map(String.init) ?? "-"
            let estimate = object.value("estimate", as: Double.self).map { "\($0)" } ?? "-"
            return "\(object.objectID) \(title) \(priority) \(estimate)"
        }
    }
}

@Suite("Fetch batch size")
struct FetchBatchSizeTests {
    /// The twin of the plain fetch: the same objects in the same order with the same values,
    /// saved or pending, in a root context and in a child, for every request shape.
    @Test("a batched fetch answers what the plain fetch answers, with and without unsaved changes, root and child")
    func twinOfPlainFetch() throws {
        let store = TemporaryStore()
        let container = try Fixtures.container(.path(store.url.path))
        for context in try LongResultFixture.twinContexts(container) {
            for request in try LongResultFixture.requests {
                for batchSize in [1, 4, 25, 1000] {
                    var batched = request
                    batched.fetchBatchSize = batchSize
                    try context.performAndWait {
                        let expected = LongResultFixture.describe(try context.fetch(request))
                        let walked = LongResultFixture.describe(try context.fetch(batched))
                        #expect(walked == expected, "\(context.name) \(request) batch \(batchSize)")
                        let lazy = try context.fetchBatched(batched)
                        #expect(LongResultFixture.describe(Array(lazy)) == expected, "fetchBatched \(context.name) \(request) batch \(batchSize)")
                        #expect(lazy.objectIDs == (try context.fetchObjectIDs(request)))
                    }
                }
            }
        }
    }

    @Test("the objects of a batch are read together when the first of them is used; later batches when they are reached")
    func batchesAreReadTogether() throws {
        let store = TemporaryStore()
        let container = try Fixtures.container(.path(store.url.path))
        try LongResultFixture.seed(container.newBackgroundContext(), count: 30)
        let reader = container.newBackgroundContext(name: "reader")
        let request = FetchRequest(entityName: "Task", sortDescriptors: [ObjectSortDescriptor("title")])
        var batched = request
        batched.fetchBatchSize = 10
        let objects = try reader.performAndWait { try reader.fetch(batched) }
        #expect(objects.count == 30)
        try reader.performAndWait {
            // The first batch comes with the fetch; the second is read when object 10 is used.
            #expect(objects[10].value("title", as: String.self) != nil)
            #expect(objects[20].isFault)
        }
        // Another context deletes every task: rows not read yet are gone.
        let deleter = container.newBackgroundContext(name: "deleter")
        try deleter.performAndWait {
            for task in try deleter.fetch(request) { deleter.delete(task) }
            try deleter.save()
        }
        reader.performAndWait {
            #expect(objects[5].value("title", as: String.self) != nil, "first batch, read with the fetch")
            #expect(objects[19].value("title", as: String.self) != nil, "second batch, read with object 10")
            #expect(objects[19].isInaccessible == false)
            #expect(objects[20].value("title", as: String.self) == nil, "third batch, read after the delete")
            #expect(objects[29].isInaccessible, "its whole batch was read at once, after the delete")
        }
    }

    @Test("without a batch size every row comes with the fetch")
    func plainFetchReadsEveryRow() throws {
        let store = TemporaryStore()
        let container = try Fixtures.container(.path(store.url.path))
        try LongResultFixture.seed(container.newBackgroundContext(), count: 30)
        let reader = container.newBackgroundContext(name: "reader")
        let request = FetchRequest(entityName: "Task", sortDescriptors: [ObjectSortDescriptor("title")])
        let objects = try reader.performAndWait { try reader.fetch(request) }
        let deleter = container.newBackgroundContext(name: "deleter")
        try deleter.performAndWait {
            for task in try deleter.fetch(request) { deleter.delete(task) }
            try deleter.save()
        }
        reader.performAndWait {
            #expect(objects.allSatisfy { $0.value("title", as: String.self) != nil })
        }
    }

    @Test("returnsObjectsAsFaults false fills the first batch; prefetching applies to every batch")
    func firstBatchFilledAndPrefetching() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let (_, taskIDs) = try Fixtures.seedProject(context, name: "Apollo", taskTitles: (0..<12).map { "task \($0)" })
        try context.performAndWait {
            let tag = context.insertNewObject(forEntityName: "Tag")
            tag.setValue("urgent", forKey: "label")
            tag.setObjects(taskIDs.map { context.object(with: $0) }, forKey: "tasks")
            try context.save()
        }
        let reader = container.newBackgroundContext(name: "reader")
        var request = FetchRequest(entityName: "Task", sortDescriptors: [ObjectSortDescriptor("title")], returnsObjectsAsFaults: false)
        request.fetchBatchSize = 5
        request.relationshipKeyPathsForPrefetching = ["tags"]
        try reader.performAndWait {
            let objects = try reader.fetch(request)
            #expect(objects.prefix(5).allSatisfy { !$0.isFault })
            #expect(objects.suffix(7).allSatisfy { $0.isFault })
            #expect(objects.map { $0.value("title", as: String.self) ?? "" } == (0..<12).map { "task \($0)" }.sorted())
            #expect(objects.allSatisfy { $0.objects(forKey: "tags").count == 1 })
        }
    }

    @Test("fetchBatched reads a batch's rows together, and holds only the batch in use")
    func lazyResultHoldsOneBatch() throws {
        let store = TemporaryStore()
        let container = try Fixtures.container(.path(store.url.path))
        try LongResultFixture.seed(container.newBackgroundContext(), count: 100)
        let reader = container.newBackgroundContext(name: "reader")
        var request = FetchRequest(entityName: "Task", sortDescriptors: [ObjectSortDescriptor("title")])
        request.fetchBatchSize = 10
        try reader.performAndWait {
            reader.retainsRegisteredObjects = false
            let result = try reader.fetchBatched(request)
            #expect(result.count == 100)
            #expect(reader.registeredObjects.isEmpty, "only IDs until an element is read")
            var titles: [String] = []
            for i in result.indices {
                titles.append(result[i].value("title", as: String.self) ?? "")
                #expect(reader.registeredObjects.count <= 10, "element \(i): one batch alive")
            }
            #expect(titles == titles.sorted() && Set(titles).count == 100)
        }
        // Objects 0..<10 are read together: deleted behind the reader's back, 5 keeps its values
        // once 0 has been read, while the next batch, not yet read, is gone.
        let fresh = container.newBackgroundContext(name: "fresh")
        let result = try fresh.performAndWait { try fresh.fetchBatched(request) }
        fresh.performAndWait { _ = result[0] }
        let deleter = container.newBackgroundContext(name: "deleter")
        try deleter.performAndWait {
            for task in try deleter.fetch(FetchRequest(entityName: "Task")) { deleter.delete(task) }
            try deleter.save()
        }
        fresh.performAndWait {
            #expect(result[5].value("title", as: String.self) != nil)
            #expect(result[15].isInaccessible)
        }
    }

    @Test("a negative batch size is refused")
    func negativeBatchSize() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        var request = FetchRequest(entityName: "Task")
        request.fetchBatchSize = -1
        context.performAndWait {
            #expect(throws: FetchError.self) { try context.fetch(request) }
            request.fetchBatchSize = 0
            #expect(throws: FetchError.self) { try context.fetchBatched(request) }
        }
    }
}
