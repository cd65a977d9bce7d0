import Foundation
import ManagedStore

/// The NSPredicate language's costs: parsing and compiling a predicate on its own, and a fetch
/// with a 3-clause predicate over the million rows that the (done, priority) index serves,
/// beside the same hand-written SQL.
enum PredicateBenchmark {
    /// The 5-clause predicate whose parse and compile is timed; `%d` varies per iteration.
    static let fiveClauses = #"priority >= %d AND done == NO AND title BEGINSWITH[c] "task" AND estimate < 3.5 AND project.name != "x""#

    /// Microseconds per parse, and per parse + check + SQL compile, over `iterations`.
    static func parseAndCompile(_ container: PersistentContainer, iterations: Int = 20_000) throws -> (parse: Double, compile: Double) {
        let (_, parseSeconds) = try measure {
            for i in 0..<iterations { _ = try ObjectPredicate(format: fiveClauses, i % 6) }
        }
        let context = container.newBackgroundContext(name: "bench-compile")
        let (_, compileSeconds) = try measure {
            try context.performAndWait {
                for i in 0..<iterations {
                    let predicate = try ObjectPredicate(format: fiveClauses, i % 6)
                    _ = try context.compiledSQL(for: FetchRequest(entityName: "Task", predicate: predicate, fetchLimit: 20))
                }
            }
        }
        return (parseSeconds / Double(iterations) * 1e6, compileSeconds / Double(iterations) * 1e6)
    }

    /// The constants of 3-clause fetch `k`: done, an exact priority, an estimate bound (about 10%).
    static func constants(_ k: Int) -> (done: Bool, priority: Int64, below: Double) {
        (k % 2 == 0, Int64(k % 6), Double(5 + k % 7))
    }

    static let fetches = 200
    static let limit = 100

    /// Objects (title read), `limit` per fetch, in primary-key order.
    static func managedStoreObjects(_ container: PersistentContainer) throws -> FetchBenchmark.Result {
        let context = container.newBackgroundContext(name: "bench-3-clauses")
        var digest = Digest()
        let (_, seconds) = try measure {
            try context.performAndWait {
                for k in 0..<fetches {
                    let (done, priority, below) = constants(k)
                    let request = FetchRequest(entityName: "Task",
                                               predicate: .key("done") == done && .key("priority") == priority && .key("estimate") < below,
                                               fetchLimit: limit)
                    for task in try context.fetch(request) { digest.add(task.objectID.primaryKey!, task.value("title", as: String.self)!) }
                    context.reset()
                }
            }
        }
        return FetchBenchmark.Result(operations: fetches, seconds: seconds, digest: digest)
    }

    static func rawObjects(_ db: RawDatabase) throws -> FetchBenchmark.Result {
        let select = try db.prepare(#"SELECT \#(RawTask.columns) FROM "Task" WHERE "done" = ? AND "priority" = ? AND "estimate" < ? ORDER BY "_pk" LIMIT \#(limit)"#)
        var digest = Digest()
        let (_, seconds) = try measure {
            for k in 0..<fetches {
                let (done, priority, below) = constants(k)
                select.bind(Int64(done ? 1 : 0), at: 1)
                select.bind(priority, at: 2)
                select.bind(below, at: 3)
                while try select.step() {
                    let task = RawTask(select)
                    digest.add(task.pk, task.title)
                }
                select.reset()
            }
        }
        return FetchBenchmark.Result(operations: fetches, seconds: seconds, digest: digest)
    }

    /// The same page as object IDs (NSManagedObjectIDResultType): the query without object creation.
    static func managedStoreIDs(_ container: PersistentContainer) throws -> FetchBenchmark.Result {
        let context = container.newBackgroundContext(name: "bench-3-clauses-ids")
        var digest = Digest()
        let (_, seconds) = try measure {
            try context.performAndWait {
                for k in 0..<fetches {
                    let (done, priority, below) = constants(k)
                    let request = FetchRequest(entityName: "Task",
                                               predicate: .key("done") == done && .key("priority") == priority && .key("estimate") < below,
                                               fetchLimit: limit)
                    for id in try context.fetchObjectIDs(request) { digest.add(id.primaryKey!, "") }
                }
            }
        }
        return FetchBenchmark.Result(operations: fetches, seconds: seconds, digest: digest)
    }

    static func rawIDs(_ db: RawDatabase) throws -> FetchBenchmark.Result {
        let select = try db.prepare(#"SELECT "_pk" FROM "Task" WHERE "done" = ? AND "priority" = ? AND "estimate" < ? ORDER BY "_pk" LIMIT \#(limit)"#)
        var digest = Digest()
        let (_, seconds) = try measure {
            for k in 0..<fetches {
                let (done, priority, below) = constants(k)
                select.bind(Int64(done ? 1 : 0), at: 1)
                select.bind(priority, at: 2)
                select.bind(below, at: 3)
                while try select.step() { digest.add(select.int64(0), "") }
                select.reset()
            }
        }
        return FetchBenchmark.Result(operations: fetches, seconds: seconds, digest: digest)
    }

    /// The number of matches (every match counted, not just a page).
    static func managedStoreCount(_ container: PersistentContainer) throws -> FetchBenchmark.Result {
        let context = container.newBackgroundContext(name: "bench-3-clauses-count")
        var digest = Digest()
        let (_, seconds) = try measure {
            try context.performAndWait {
                for k in 0..<fetches {
                    let (done, priority, below) = constants(k)
                    let request = FetchRequest(entityName: "Task",
                                               predicate: .key("done") == done && .key("priority") == priority && .key("estimate") < below)
                    digest.add(Int64(k), String(try context.count(for: request)))
                }
            }
        }
        return FetchBenchmark.Result(operations: fetches, seconds: seconds, digest: digest)
    }

    static func rawCount(_ db: RawDatabase) throws -> FetchBenchmark.Result {
        let select = try db.prepare(#"SELECT count(*) FROM "Task" WHERE "done" = ? AND "priority" = ? AND "estimate" < ?"#)
        var digest = Digest()
        let (_, seconds) = try measure {
            for k in 0..<fetches {
                let (done, priority, below) = constants(k)
                select.bind(Int64(done ? 1 : 0), at: 1)
                select.bind(priority, at: 2)
                select.bind(below, at: 3)
                guard try select.step() else { throw BenchmarkError("raw SQLite: no count") }
                digest.add(Int64(k), String(select.int64(0)))
                select.reset()
            }
        }
        return FetchBenchmark.Result(operations: fetches, seconds: seconds, digest: digest)
    }
}
