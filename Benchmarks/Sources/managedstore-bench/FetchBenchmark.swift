import Foundation
import ManagedStore

/// Reading back: objects by ID (point reads by primary key) and predicate fetches with a
/// sort and a limit. Each side returns a digest of what it read, which must match.
enum FetchBenchmark {
    struct Result {
        /// Objects read (by ID) or fetches run (predicate).
        var operations: Int
        var seconds: Double
        var digest: Digest
        var perSecond: Double { Double(operations) / seconds }
    }

    // MARK: By ID

    /// A fresh context; `existingObject(with:)` for each ID, then its title is read.
    static func managedStoreByID(_ container: PersistentContainer, keys: [Int64]) throws -> Result {
        let ids = keys.map { container.coordinator.managedObjectID(entityName: "Task", primaryKey: $0)! }
        let context = container.newBackgroundContext(name: "bench-fetch-id")
        var digest = Digest()
        let (_, seconds) = try measure {
            try context.performAndWait {
                for id in ids {
                    let task = try context.existingObject(with: id)
                    digest.add(task.objectID.primaryKey!, task.value("title", as: String.self)!)
                }
            }
        }
        return Result(operations: ids.count, seconds: seconds, digest: digest)
    }

    /// One prepared SELECT of every column by primary key, each read in its own (implicit) transaction.
    static func rawByID(_ db: RawDatabase, keys: [Int64]) throws -> Result {
        let select = try db.prepare(#"SELECT \#(RawTask.columns) FROM "Task" WHERE "_pk" = ?"#)
        var digest = Digest()
        let (_, seconds) = try measure {
            for key in keys {
                select.bind(key, at: 1)
                guard try select.step() else { throw BenchmarkError("raw SQLite: no Task \(key)") }
                let task = RawTask(select)
                select.reset()
                digest.add(task.pk, task.title)
            }
        }
        return Result(operations: keys.count, seconds: seconds, digest: digest)
    }

    // MARK: Predicate

    /// The request of fetch `k`: undone (or done) tasks of at least some priority, ordered by
    /// priority (most important first when `descending`), `fetchLimit` of them.
    static func request(_ k: Int, _ workload: Workload, descending: Bool) -> FetchRequest {
        let (done, minPriority) = workload.predicateConstants(k)
        return FetchRequest(entityName: "Task",
                            predicate: .key("done") == done && .key("priority") >= minPriority,
                            sortDescriptors: [ObjectSortDescriptor("priority", ascending: !descending)],
                            fetchLimit: workload.fetchLimit)
    }

    /// A fresh context; each fetch's objects have their title read.
    static func managedStorePredicate(_ container: PersistentContainer, _ workload: Workload, descending: Bool) throws -> Result {
        let context = container.newBackgroundContext(name: "bench-fetch-predicate")
        var digest = Digest()
        let (_, seconds) = try measure {
            try context.performAndWait {
                for k in 0..<workload.fetches {
                    for task in try context.fetch(request(k, workload, descending: descending)) {
                        digest.add(task.objectID.primaryKey!, task.value("title", as: String.self)!)
                    }
                }
            }
        }
        return Result(operations: workload.fetches, seconds: seconds, digest: digest)
    }

    /// The same query by hand: same columns, same order (the library always ends an order with
    /// the primary key ascending, so this does too), same LIMIT; one prepared statement.
    static func predicateSQL(limit: Int, descending: Bool) -> String {
        #"SELECT \#(RawTask.columns) FROM "Task" WHERE "done" = ? AND "priority" >= ? "#
            + #"ORDER BY "priority" \#(descending ? "DESC" : "ASC"), "_pk" ASC LIMIT \#(limit)"#
    }

    static func rawPredicate(_ db: RawDatabase, _ workload: Workload, descending: Bool) throws -> Result {
        let select = try db.prepare(predicateSQL(limit: workload.fetchLimit, descending: descending))
        var digest = Digest()
        let (_, seconds) = try measure {
            for k in 0..<workload.fetches {
                let (done, minPriority) = workload.predicateConstants(k)
                select.bind(Int64(done ? 1 : 0), at: 1)
                select.bind(minPriority, at: 2)
                while try select.step() {
                    let task = RawTask(select)
                    digest.add(task.pk, task.title)
                }
                select.reset()
            }
        }
        return Result(operations: workload.fetches, seconds: seconds, digest: digest)
    }
}
