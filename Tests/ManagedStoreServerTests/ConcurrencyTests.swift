import Foundation
import Testing
@testable import ManagedStoreHTTP
@testable import ManagedStoreOpenAPI
@testable import ManagedStoreServer

@Suite("Keep-alive, concurrency, lost updates and group commit")
struct ConcurrencyTests {
    @Test("many requests on one keep-alive connection")
    func keepAlive() throws {
        let harness = try ServerHarness()
        let client = try harness.client()
        for i in 0..<50 {
            let response = i % 2 == 0
                ? try client.json("POST", "/v1/objects/Tag", #"{"label": "tag \#(i)"}"#)
                : try client.request("GET", "/v1/objects/Tag?limit=1")
            #expect([200, 201].contains(response.status))
            #expect(response.header("Connection")?.lowercased() != "close")
        }
        #expect(try harness.counts()["Tag"] == 25)
    }

    /// Runs `body(i)` for i in 0..<count on `count` threads at once.
    static func concurrently(_ count: Int, _ body: @escaping @Sendable (Int) throws -> Void) throws {
        let group = DispatchGroup()
        let failures = LockedList<String>()
        for i in 0..<count {
            group.enter()
            Thread {
                defer { group.leave() }
                do { try body(i) } catch { failures.add("\(i): \(error)") }
            }.start()
        }
        guard group.wait(timeout: .now() + 60) == .success else { throw ConcurrencyFailure.timeout }
        #expect(failures.all.isEmpty, "\(failures.all)")
    }

    @Test("16 clients doing read-modify-write increments with If-Match end at the exact total")
    func lostUpdate() throws {
        let harness = try ServerHarness(inMemory: false)
        #expect(try harness.request("POST", "/v1/objects/Task", json: #"{"title": "counter", "estimate": 0}"#).status == 201)
        let increments = 10
        let conflicts = Counter()
        try Self.concurrently(16) { _ in
            let client = try harness.client()
            for _ in 0..<increments {
                for attempt in 0..<500 {
                    let current = try client.request("GET", "/v1/objects/Task/1")
                    let value = current.json?["estimate"] as? Double ?? -1
                    let etag = current.header("ETag") ?? ""
                    let response = try client.json("PATCH", "/v1/objects/Task/1", #"{"estimate": \#(value + 1)}"#, headers: [("If-Match", etag)])
                    if response.status == 200 { break }
                    guard response.status == 409 else { throw ConcurrencyFailure.unexpected(response.text) }
                    conflicts.add()
                    precondition(attempt < 499, "no progress after 500 attempts")
                }
            }
        }
        let final = try harness.request("GET", "/v1/objects/Task/1")
        #expect(final.json?["estimate"] as? Double == Double(16 * increments))
        #expect(final.json?["_version"] as? Int == 16 * increments + 1)
        #expect(conflicts.value > 0, "16 clients on one object do conflict; the retries are what keep the total exact")
    }

    @Test("64 concurrent inserts take fewer commits than requests, and all are stored")
    func groupCommit() throws {
        let harness = try ServerHarness(inMemory: false) { _, http in http.threads = 4 }
        let commitsBefore = harness.coordinator.commitCount
        let ids = LockedList<String>()
        try Self.concurrently(64) { i in
            let response = try harness.request("POST", "/v1/objects/Task", json: #"{"title": "insert \#(i)"}"#)
            guard response.status == 201, let id = response.json?["_id"] as? String else { throw ConcurrencyFailure.unexpected(response.text) }
            ids.add(id)
        }
        let commits = harness.coordinator.commitCount - commitsBefore
        #expect(ids.all.count == 64 && Set(ids.all).count == 64)
        #expect(commits < 64, "group commit: \(commits) commits for 64 inserts")
        let health = try harness.request("GET", "/v1/healthz").json
        #expect(health?["writeRequests"] as? Int == 64)
        #expect((health?["writeTransactions"] as? Int ?? 64) < 64)
        #expect(try harness.counts()["Task"] == 64)
        // Every acknowledged insert is readable right after its response.
        for id in ids.all.prefix(10) {
            #expect(try harness.request("GET", "/v1/objects/\(id)").status == 200)
        }
    }

    @Test("concurrent readers and writers on many connections all get answers")
    func mixedLoad() throws {
        let harness = try ServerHarness(inMemory: false)
        try Self.concurrently(32) { i in
            let client = try harness.client()
            for j in 0..<10 {
                let response = i % 4 == 0
                    ? try client.json("POST", "/v1/objects/Task", #"{"title": "w\#(i)-\#(j)", "priority": \#(j % 6)}"#)
                    : try client.request("GET", "/v1/objects/Task?where=\("priority >= 3".queryEncoded)&limit=5")
                guard [200, 201].contains(response.status) else { throw ConcurrencyFailure.unexpected(response.text) }
            }
        }
        #expect(try harness.counts()["Task"] == 80)
        #expect(try harness.coordinator.checkIntegrity() == [])
    }
}

/// A list appended to from many threads.
final class LockedList<Element>: @unchecked Sendable {
    // @unchecked Sendable: `items` is only touched under `lock`.
    private let lock = NSLock()
    private var items: [Element] = []
    func add(_ item: Element) { lock.lock(); items.append(item); lock.unlock() }
    var all: [Element] { lock.lock(); defer { lock.unlock() }; return items }
}

/// Why a concurrent test body gave up.
enum ConcurrencyFailure: Error {
    case timeout
    case unexpected(String)
}

final class Counter: @unchecked Sendable {
    // @unchecked Sendable: `count` is only touched under `lock`.
    private let lock = NSLock()
    private var count = 0
    func add() { lock.lock(); count += 1; lock.unlock() }
    var value: Int { lock.lock(); defer { lock.unlock() }; return count }
}
