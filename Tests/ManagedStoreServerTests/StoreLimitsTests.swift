import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite
@testable import ManagedStoreHTTP
@testable import ManagedStoreOpenAPI
@testable import ManagedStoreServer

/// The store file under load: a full disk in the middle of a group commit, the WAL's size, and
/// the stock sqlite3 CLI reading what the server wrote.
@Suite("Store limits over HTTP", .sqliteWhateverTheRun)
struct StoreLimitsTests {
    /// `count` writer threads POSTing tasks with unique titles until `stopAfter` refusals or
    /// `maxRequests` each; returns every title with its status.
    private func postStorm(_ harness: ServerHarness, threads: Int, maxRequests: Int, titleLength: Int = 16,
                           stopAfterRefusals: Int = .max) -> [(title: String, status: Int)] {
        let results = LockedList<(title: String, status: Int)>()
        let refusals = Counter()
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            guard let client = try? harness.client() else { return }
            for n in 0..<maxRequests where refusals.value < stopAfterRefusals {
                let title = "t\(thread)-\(n)-" + String(repeating: "x", count: titleLength)
                guard let response = try? client.json("POST", "/v1/objects/Task", #"{"title": "\#(title)"}"#) else { return }
                results.add((title, response.status))
                if response.status != 201 { refusals.add() }
            }
        }
        return results.all
    }


    @Test("a store that fills up inside group commits: each request is answered by what really happened to it")
    func diskFullInsideGroups() throws {
        let harness = try ServerHarness(inMemory: false)
        // Room for a few hundred of these tasks, then SQLITE_FULL.
        try harness.coordinator.sqlite.writer.withConnection { connection in
            let pages = try connection.scalarInt("PRAGMA page_count") ?? 0
            _ = try connection.scalarInt("PRAGMA max_page_count = \(pages + 120)")
        }
        let results = postStorm(harness, threads: 12, maxRequests: 400, titleLength: 1_500, stopAfterRefusals: 200)
        let created = Set(results.filter { $0.status == 201 }.map(\.title))
        let refused = results.filter { $0.status != 201 }
        #expect(created.count > 20, "some writes fit")
        #expect(!refused.isEmpty, "the store filled up")
        #expect(refused.allSatisfy { $0.status == 503 }, "\(Set(refused.map(\.status)))")
        #expect(try harness.taskTitles() == created, "stored exactly what was answered 201")
        #expect(try harness.coordinator.checkIntegrity().isEmpty)
        // With room again, writes go on.
        try harness.coordinator.sqlite.writer.withConnection { connection in _ = try connection.scalarInt("PRAGMA max_page_count = 1000000") }
        #expect(try harness.request("POST", "/v1/objects/Task", json: #"{"title": "after"}"#).status == 201)
    }

    @Test("when SQLite rolls a whole group back on its own, every request of it is answered by what really happened")
    func groupRolledBackBySQLite() throws {
        let harness = try ServerHarness(inMemory: false)
        // RAISE(ROLLBACK) ends the whole transaction from inside one statement, as SQLite does by
        // itself after a full disk or an I/O error in some places. A TEMP trigger lives on the
        // writer's connection only, never in the store file.
        try harness.coordinator.sqlite.writer.withConnection { connection in
            try connection.execute(#"CREATE TEMP TRIGGER "boom" BEFORE INSERT ON "Task" WHEN NEW."title" LIKE 'boom%' BEGIN SELECT RAISE(ROLLBACK, 'boom'); END"#)
        }
        var created: Set<String> = []
        var refused: Set<String> = []
        for round in 0..<10 {
            // Hold the writer while 24 requests queue up, so that they form one group; one in
            // the middle of it is the one SQLite rolls back with everything before it.
            let titles = (0..<24).map { $0 == 12 ? "boom \(round)" : "r\(round)-\($0)" }
            let answers = LockedList<(String, Int)>()
            let holding = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            Thread {
                harness.coordinator.sqlite.writer.withConnection { _ in
                    holding.signal()
                    _ = release.wait(timeout: .now() + 5)
                }
            }.start()
            holding.wait()
            let group = DispatchGroup()
            for title in titles {
                group.enter()
                Thread {
                    defer { group.leave() }
                    if let response = try? harness.request("POST", "/v1/objects/Task", json: #"{"title": "\#(title)"}"#) {
                        answers.add((title, response.status))
                    }
                }.start()
                usleep(2_000)  // in order, so that the group's order is the list's
            }
            usleep(100_000)
            release.signal()
            #expect(group.wait(timeout: .now() + 30) == .success)
            for (title, status) in answers.all {
                if status == 201 { created.insert(title) } else { refused.insert(title) }
                #expect(status == 201 || status == 503, "\(title): \(status)")
            }
        }
        #expect(!created.isEmpty && !refused.isEmpty)
        #expect(refused.contains { $0.hasPrefix("boom") })
        #expect(try harness.taskTitles() == created, "stored exactly what was answered 201")
    }

    @Test("the WAL stays under 16 MiB through 6,000 POST+GET pairs")
    func walBounded() throws {
        // One client, a POST then a GET of what it wrote: each GET leaves a reader idle with a
        // snapshot of the latest commit, which kept SQLite's own checkpoint from ever emptying
        // the WAL (over 100 MB after 6,000 pairs: past 16 MiB within the first thousand).
        let harness = try ServerHarness(inMemory: false)
        let largest = Maximum()
        let client = try harness.client()
        var pairs = 0
        for n in 0..<6_000 {
            let created = try client.json("POST", "/v1/objects/Task", #"{"title": "w\#(n)"}"#)
            let id = try #require(created.json?["_id"] as? String)
            guard try client.request("GET", "/v1/objects/\(id)").status == 200 else { break }
            pairs += 1
            if n % 50 == 0 { largest.offer(Int(harness.coordinator.walSize)) }
        }
        largest.offer(Int(harness.coordinator.walSize))
        #expect(pairs == 6_000)
        let limit = 16 << 20
        #expect(largest.value < limit, "the WAL reached \(largest.value) bytes")
        let health = try harness.request("GET", "/v1/healthz")
        #expect((health.json?["walBytes"] as? Int).map { $0 < limit } == true)
    }
}

/// The largest value offered, from any thread.
final class Maximum: @unchecked Sendable {
    // @unchecked Sendable: `largest` is only touched under `lock`.
    private let lock = NSLock()
    private var largest = 0
    func offer(_ value: Int) { lock.lock(); largest = max(largest, value); lock.unlock() }
    var value: Int { lock.lock(); defer { lock.unlock() }; return largest }
}

extension PersistentStoreCoordinator {
    /// The SQLite store under the coordinator, for the tests of SQLite's own limits.
    var sqlite: SQLiteStore { store as! SQLiteStore }
}
