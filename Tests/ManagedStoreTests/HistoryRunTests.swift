import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite

/// Since format 7 a save records a run of inserted objects of one entity, keyed one after
/// another, as one history row (`through`). Every reader must answer as it did when each object
/// had a row of its own (format 6): this twin writes random saves, copies the store, spreads the
/// copy's runs into one row an object, and asks both every question the history answers.
@Suite("History runs of inserts")
struct HistoryRunTests {
    typealias SplitMix64 = PredicateFuzzTests.SplitMix64

    /// Random saves: batches of 1 to 20 new tasks (some with a project or tags), new tags and
    /// projects among them, updates, deletes (of objects inside runs too), a project deleted
    /// with its tasks.
    static func randomSaves(_ container: PersistentContainer, seed: UInt64, saves: Int) throws {
        let context = container.newBackgroundContext()
        try context.performAndWait { () throws in try randomSaves(in: context, seed: seed, saves: saves) }
    }

    /// `randomSaves` in `context`, on its queue.
    static func randomSaves(in context: ManagedObjectContext, seed: UInt64, saves: Int) throws {
        var random = SplitMix64(seed: seed)
        do {
            var projects: [ManagedObject] = (0..<2).map { i in
                let project = context.insertNewObject(forEntityName: "Project")
                project.setValue("p\(i)", forKey: "name")
                return project
            }
            var tags: [ManagedObject] = (0..<3).map { i in
                let tag = context.insertNewObject(forEntityName: "Tag")
                tag.setValue("t\(i)", forKey: "label")
                return tag
            }
            var tasks: [ManagedObject] = []
            try context.save()
            for step in 0..<saves {
                func pick<T>(_ items: [T]) -> T { items[Int(random.next() % UInt64(items.count))] }
                let kind = tasks.count < 5 ? 0 : random.next() % 6
                switch kind {
                case 0, 1:
                    for i in 0..<Int(1 + random.next() % 20) {
                        let task = context.insertNewObject(forEntityName: "Task")
                        task.setValue("task \(step).\(i)", forKey: "title")
                        task.setValue(Int64(random.next() % 6), forKey: "priority")
                        if random.next() % 3 == 0 { task.setObject(pick(projects), forKey: "project") }
                        if random.next() % 4 == 0 { task.addObject(pick(tags), toKey: "tags") }
                        tasks.append(task)
                        // Now and then another entity's insert in the middle of the batch.
                        if random.next() % 8 == 0 {
                            let tag = context.insertNewObject(forEntityName: "Tag")
                            tag.setValue("tag \(step).\(i)", forKey: "label")
                            tags.append(tag)
                        }
                    }
                case 2:
                    for _ in 0..<Int(1 + random.next() % 4) { pick(tasks).setValue("edited \(step)", forKey: "title") }
                case 3:
                    let task = pick(tasks)
                    context.delete(task)
                    tasks.removeAll { $0 === task }
                case 4:
                    pick(tasks).addObject(pick(tags), toKey: "tags")
                    pick(tasks).setObject(pick(projects), forKey: "project")
                default:
                    HistoryChainTests.replaceProject(pick(projects), in: context, name: "project \(step)", projects: &projects, tasks: &tasks)
                }
                try context.save()
            }
        }
    }

    /// Every transaction, and for every key of every entity up to the largest and every base
    /// version 1 to 6, the changes after it (nil: not reached).
    struct Answers {
        var transactions: [PersistentHistoryTransaction] = []
        var chains: [String: [PersistentHistoryChange]?] = [:]
    }

    static func answers(_ container: PersistentContainer) throws -> Answers {
        try container.coordinator.sqlite.writer.withConnection { connection -> Answers in
            let reader = HistoryReader(connection: connection, model: container.model, storeIdentifier: container.coordinator.storeIdentifier)
            let transactions = try reader.transactions(after: PersistentHistoryToken(rawValue: 0), limit: 100_000, entities: nil)
            var chains: [String: [PersistentHistoryChange]?] = [:]
            for entity in container.model.schema {
                let largest = try connection.scalarInt("SELECT coalesce(max(coalesce(\"through\", \"pk\")), 0) FROM \"_history_change\" WHERE \"entity\" = ?",
                                                       [.string(entity.name)]) ?? 0
                for pk in Int64(1)...max(1, largest + 1) {
                    for version in Int64(1)...6 {
                        chains["\(entity.name)/\(pk)@\(version)"] = try reader.changes(ofObject: entity, pk: pk, after: version)
                    }
                }
            }
            return Answers(transactions: transactions, chains: chains)
        }
    }

    @Test("random saves: the change list, each transaction and every object's chain read the same from runs of inserts as from one row an object", arguments: [UInt64(7), 8, 9])
    func runsReadAsRows(seed: UInt64) throws {
        let store = TemporaryStore()
        let container = try PersistentContainer(model: Fixtures.tracker, store: .sqlite(store.url))
        try Self.randomSaves(container, seed: seed, saves: 60)
        let runs = try container.coordinator.sqlite.writer.withConnection { connection -> Int64 in
            try connection.scalarInt(#"SELECT count(*) FROM "_history_change" WHERE "through" IS NOT NULL"#) ?? 0
        }
        let rows = try container.coordinator.sqlite.writer.withConnection { connection -> Int64 in
            try connection.scalarInt(#"SELECT count(*) FROM "_history_change""#) ?? 0
        }
        #expect(runs > 10, "the saves made runs of inserts (\(runs) of \(rows) rows)")

        // The twin: the same store with each run spread into one row an object, as format 6 wrote.
        let copy = store.directory.appendingPathComponent("rows.sqlite")
        try container.coordinator.sqlite.writer.withConnection { connection in
            try connection.execute("VACUUM INTO '\(copy.path)'")
        }
        let spread = try SQLiteConnection(path: copy.path)
        try spread.execute(#"""
            INSERT INTO "_history_change" ("token", "entity", "pk", "type", "version")
            WITH RECURSIVE "run"("token", "entity", "pk", "type", "last") AS (
                SELECT "token", "entity", "pk" + 1, "type", "through" FROM "_history_change" WHERE "through" IS NOT NULL
                UNION ALL SELECT "token", "entity", "pk" + 1, "type", "last" FROM "run" WHERE "pk" < "last")
            SELECT "token", "entity", "pk", "type", 1 FROM "run"
            """#)
        try spread.execute(#"UPDATE "_history_change" SET "through" = NULL"#)
        let spreadRows = try spread.scalarInt(#"SELECT count(*) FROM "_history_change""#) ?? 0
        #expect(spreadRows > rows)
        let twin = try PersistentContainer(model: Fixtures.tracker, store: .sqlite(copy))

        let fromRuns = try Self.answers(container)
        let fromRows = try Self.answers(twin)
        Self.expectSameAnswers(fromRuns, fromRows, transactions: 61)
        // What the store's inspection counts: one change an object either way.
        #expect(try Int64(PersistentStoreCoordinator.inspectStore(at: store.url.path, model: Fixtures.tracker).history.changes) == spreadRows)
    }

    /// Every question answered the same from runs as from rows: `transactions` saves, and
    /// chains that reach some versions.
    static func expectSameAnswers(_ fromRuns: Answers, _ fromRows: Answers, transactions: Int) {
        #expect(fromRuns.transactions.count == transactions)
        #expect(fromRuns.transactions.count == fromRows.transactions.count)
        // One transaction at a time: the first that differs, not every one, when they do.
        let differ = zip(fromRuns.transactions, fromRows.transactions).first { $0.0 != $0.1 }
        #expect(differ == nil, "token \(differ.map { "\($0.0.token)" } ?? "-"): runs \(differ.map { "\($0.0.changes.count)" } ?? "-") changes, rows \(differ.map { "\($0.1.changes.count)" } ?? "-")")
        #expect(fromRuns.chains.count == fromRows.chains.count)
        var differing = 0
        for (key, chain) in fromRuns.chains where fromRows.chains[key].map({ $0 != chain }) ?? true {
            differing += 1
            if differing <= 3 { Issue.record("\(key): runs \(String(describing: chain)), rows \(String(describing: fromRows.chains[key] ?? nil))") }
        }
        #expect(differing == 0)
        #expect(fromRuns.chains.values.filter { $0 != nil }.count > 100, "the chains reached some versions")
    }
}
