import Foundation
import ManagedStore

/// Inserting `workload.count` Task objects (rows), committing every `workload.batchSize`.
enum InsertBenchmark {
    struct Result {
        var count: Int
        var seconds: Double
        /// ManagedStore only: the time inside `save()` and inside `reset()`; the rest is
        /// `insertNewObject` and the five setters.
        var saveSeconds = 0.0
        var resetSeconds = 0.0
        var perSecond: Double { Double(count) / seconds }
    }

    /// One background context, `insertNewObject` + five setters per object, `save()` and
    /// `reset()` every batch. With `recordsHistory` false, the store records no persistent
    /// history (what history costs is the difference).
    static func managedStore(at url: URL, _ workload: Workload, recordsHistory: Bool = true) throws -> Result {
        var store = StoreDescription.sqlite(url, durability: .normal)
        store.recordsHistory = recordsHistory
        let container = try PersistentContainer(model: .taskTracker(), store: store)
        let context = container.newBackgroundContext(name: "bench-insert")
        var saveSeconds = 0.0, resetSeconds = 0.0
        let (_, seconds) = try measure {
            try context.performAndWait {
                for i in 0..<workload.count {
                    insertTask(i, workload, into: context)
                    if (i + 1) % workload.batchSize == 0 || i + 1 == workload.count {
                        saveSeconds += try measure { try context.save() }.seconds
                        resetSeconds += measure { context.reset() }.seconds
                    }
                }
            }
        }
        return Result(count: workload.count, seconds: seconds, saveSeconds: saveSeconds, resetSeconds: resetSeconds)
    }

    /// Inserts Task number `i` of the workload: `insertNewObject` and five setters.
    @inline(__always)
    static func insertTask(_ i: Int, _ workload: Workload, into context: ManagedObjectContext) {
        let row = workload.row(i)
        let task = context.insertNewObject(forEntityName: "Task")
        task.setValue(row.title, forKey: "title")
        task.setValue(row.priority, forKey: "priority")
        task.setValue(row.done, forKey: "done")
        task.setValue(row.estimate, forKey: "estimate")
        task.setValue(Date(timeIntervalSinceReferenceDate: row.due), forKey: "due")
    }

    /// Creates the store file at `url` with ManagedStore's own schema (tables and indexes, made
    /// by opening the model through a coordinator), then closes it.
    static func createSchema(at url: URL) throws {
        _ = try PersistentStoreCoordinator(model: .taskTracker(), store: .sqlite(url, durability: .normal))
    }

    /// One prepared INSERT of every column, a transaction per batch, WAL + synchronous=NORMAL.
    static func rawSQLite(at path: String, _ workload: Workload) throws -> Result {
        let db = try RawDatabase(path: path)
        guard try db.scalarText("PRAGMA journal_mode = WAL").lowercased() == "wal" else { throw BenchmarkError("no WAL") }
        try db.execute("PRAGMA synchronous = NORMAL")
        let insert = try db.prepare(#"INSERT INTO "Task" (\#(RawTask.columns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"#)
        let (_, seconds) = try measure {
            try db.execute("BEGIN IMMEDIATE")
            for i in 0..<workload.count {
                let row = workload.row(i)
                insert.bind(Int64(i + 1), at: 1)
                insert.bind(Int64(1), at: 2)
                insert.bind(row.title, at: 3)
                insert.bind(row.priority, at: 4)
                insert.bind(Int64(row.done ? 1 : 0), at: 5)
                insert.bind(row.estimate, at: 6)
                insert.bind(row.due, at: 7)
                insert.bindNull(at: 8)
                _ = try insert.step()
                insert.reset()
                if (i + 1) % workload.batchSize == 0 || i + 1 == workload.count {
                    try db.execute("COMMIT")
                    if i + 1 < workload.count { try db.execute("BEGIN IMMEDIATE") }
                }
            }
        }
        return Result(count: workload.count, seconds: seconds)
    }

    /// What both stores must agree on after the inserts: the Task schema and a digest of the rows.
    static func fingerprint(of path: String) throws -> (schema: [String], rows: String) {
        let db = try RawDatabase(path: path, readOnly: true)
        let schema = try db.rows(#"SELECT type, name, sql FROM sqlite_master WHERE tbl_name = 'Task' ORDER BY name"#)
        let rows = try db.rows(#"SELECT count(*), min("_pk"), max("_pk"), sum(priority), sum(done), total(estimate), total(due), sum(length(title)) FROM "Task""#)
        return (schema, rows.first ?? "")
    }
}
