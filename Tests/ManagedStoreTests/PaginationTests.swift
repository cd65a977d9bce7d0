import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite

@Suite("Sorting and keyset pagination")
struct PaginationTests {
    /// Tasks with repeated priorities, mixed-case titles and null estimates, so ties and nulls matter.
    static func seeded(count: Int = 40) throws -> PersistentContainer {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let titles = ["beta", "Alpha", "alpha", "Beta", "éclair", "Eclair", "zulu", "Zulu"]
            for i in 0..<count {
                let task = context.insertNewObject(forEntityName: "Task")
                task.setValue(titles[i % titles.count], forKey: "title")
                task.setValue(Int64(i % 3), forKey: "priority")
                if i % 4 != 0 { task.setValue(Double(i % 5), forKey: "estimate") }
            }
            try context.save()
        }
        return container
    }

    @Test("[c] ordering folds case; plain ordering is by code point")
    func caseInsensitiveOrder() throws {
        let container = try Self.seeded(count: 8)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let plain = try context.fetch(FetchRequest(entityName: "Task", sortDescriptors: [ObjectSortDescriptor("title")]))
            #expect(plain.compactMap { $0.value("title", as: String.self) } == ["Alpha", "Beta", "Eclair", "Zulu", "alpha", "beta", "zulu", "éclair"])
            let folded = try context.fetch(FetchRequest(entityName: "Task", sortDescriptors: [ObjectSortDescriptor("title", options: .caseInsensitive)]))
            // Equal folded titles keep primary-key order: "beta"(1) before "Beta"(4), "Alpha"(2) before "alpha"(3).
            #expect(folded.compactMap { $0.value("title", as: String.self) } == ["Alpha", "alpha", "beta", "Beta", "Eclair", "zulu", "Zulu", "éclair"])
            let accents = try context.fetch(FetchRequest(entityName: "Task", sortDescriptors: [ObjectSortDescriptor("title", options: [.caseInsensitive, .diacriticInsensitive])]))
            #expect(accents.compactMap { $0.value("title", as: String.self) }.suffix(4) == ["éclair", "Eclair", "zulu", "Zulu"])
        }
    }

    /// Pages of `size` through `request` by cursor, with `between` run after each page.
    static func pages(_ context: ManagedObjectContext, _ request: FetchRequest, size: Int,
                      between: (Int) throws -> Void = { _ in }) throws -> [[Int64]] {
        var pages: [[Int64]] = []
        var request = request
        request.fetchLimit = size
        while pages.count < 100 {
            let page = try context.fetch(request)
            if page.isEmpty { break }
            pages.append(page.compactMap(\.objectID.primaryKey))
            request.after = try context.cursor(after: page.last!, for: request)
            try between(pages.count)
        }
        return pages
    }

    @Test("walking pages by cursor gives the same order as one fetch, with nulls and ties",
          arguments: [
              [ObjectSortDescriptor("priority"), ObjectSortDescriptor("estimate", ascending: false)],
              [ObjectSortDescriptor("estimate")],
              [ObjectSortDescriptor("estimate", ascending: false)],
              [ObjectSortDescriptor("title", options: .caseInsensitive), ObjectSortDescriptor("priority", ascending: false)],
              [],
          ])
    func cursorWalk(sorts: [ObjectSortDescriptor]) throws {
        let container = try Self.seeded()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let request = FetchRequest(entityName: "Task", predicate: .key("priority") != 7, sortDescriptors: sorts)
            let all = try context.fetchObjectIDs(request).compactMap(\.primaryKey)
            let pages = try Self.pages(context, request, size: 7)
            #expect(pages.flatMap { $0 } == all)
            #expect(pages.dropLast().allSatisfy { $0.count == 7 })
        }
    }

    @Test("a cursor stays right when objects are inserted and deleted between pages")
    func cursorUnderChanges() throws {
        let container = try Self.seeded()
        let context = container.newBackgroundContext()
        let writer = container.newBackgroundContext()
        try context.performAndWait {
            let request = FetchRequest(entityName: "Task", sortDescriptors: [ObjectSortDescriptor("priority"), ObjectSortDescriptor("title")])
            var deleted: Set<Int64> = []
            var inserted: [Int64] = []
            let pages = try Self.pages(context, request, size: 5) { page in
                guard page == 2 else { return }
                try writer.performAndWait {
                    // Delete two objects not yet seen and one already seen; insert one before and one after the cursor.
                    let all = try writer.fetch(request)
                    for object in [all[12], all[20], all[1]] {
                        deleted.insert(object.objectID.primaryKey!)
                        writer.delete(object)
                    }
                    for (priority, title) in [(Int64(0), "AAA early"), (Int64(2), "zzz late")] {
                        let task = writer.insertNewObject(forEntityName: "Task")
                        task.setValue(title, forKey: "title")
                        task.setValue(priority, forKey: "priority")
                    }
                    try writer.save()
                    inserted = try writer.fetchObjectIDs(FetchRequest(entityName: "Task", predicate: .key("title") == "AAA early" || .key("title") == "zzz late")).compactMap(\.primaryKey)
                }
            }
            let seen = pages.flatMap { $0 }
            #expect(Set(seen).count == seen.count, "no object appears twice")
            let first10 = Set(pages.prefix(2).flatMap { $0 })
            // Every object that existed throughout is seen exactly once; the late insert (after the cursor) is seen, the early one is not.
            let final = try context.fetchObjectIDs(FetchRequest(entityName: "Task", sortDescriptors: request.sortDescriptors)).compactMap(\.primaryKey)
            #expect(Set(seen).subtracting(first10) == Set(final).subtracting(first10).subtracting([try #require(inserted.min())]))
            #expect(!seen.contains(try #require(inserted.min())), "inserted before the cursor: not seen")
            #expect(seen.contains(try #require(inserted.max())), "inserted after the cursor: seen")
            #expect(deleted.isDisjoint(with: Set(seen).subtracting(first10)))
        }
    }

    @Test("a cursor from another order is refused; a garbled token is not a cursor")
    func cursorMismatch() throws {
        let container = try Self.seeded(count: 5)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let byTitle = FetchRequest(entityName: "Task", sortDescriptors: [ObjectSortDescriptor("title")], fetchLimit: 2)
            let page = try context.fetch(byTitle)
            let cursor = try context.cursor(after: page.last!, for: byTitle)
            #expect(FetchCursor(token: cursor.token) == cursor, "the token round-trips")
            var byPriority = FetchRequest(entityName: "Task", sortDescriptors: [ObjectSortDescriptor("priority")])
            byPriority.after = cursor
            #expect(throws: FetchError.self) { try context.fetch(byPriority) }
            #expect(FetchCursor(token: "not a cursor") == nil)
            #expect(FetchCursor(token: "") == nil)
        }
    }

    @Test("sort keys through to-one relationships order by the related value")
    func sortThroughToOne() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            for (name, titles) in [("b", ["x", "y"]), ("a", ["z"])] {
                let project = context.insertNewObject(forEntityName: "Project")
                project.setValue(name, forKey: "name")
                for title in titles {
                    let task = context.insertNewObject(forEntityName: "Task")
                    task.setValue(title, forKey: "title")
                    task.setObject(project, forKey: "project")
                }
            }
            let orphan = context.insertNewObject(forEntityName: "Task")
            orphan.setValue("orphan", forKey: "title")
            try context.save()
            let request = FetchRequest(entityName: "Task", sortDescriptors: [ObjectSortDescriptor("project.name"), ObjectSortDescriptor("title", ascending: false)])
            #expect(try context.fetch(request).compactMap { $0.value("title", as: String.self) } == ["orphan", "z", "y", "x"])
        }
    }
}
