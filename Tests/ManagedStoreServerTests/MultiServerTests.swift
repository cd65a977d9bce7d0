import Foundation
import ManagedStore
import ManagedStoreTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Three `managedstore serve` processes over one PostgreSQL database: many servers, one truth.
/// Runs when the suites run on PostgreSQL (`make test-postgres-store`). Every loop is bounded
/// in count and time.
@Suite("Many servers over one PostgreSQL database", .enabled(if: PostgresTestDatabase.isActive), .serialized)
struct MultiServerTests {
    /// Three servers on a new schema of the test database.
    static func threeServers() throws -> [ServerProcess] {
        let uri = try PostgresTestDatabase.freshURI()
        return try (0..<3).map { _ in try ServerProcess(store: uri) }
    }

    /// Runs `body(i)` for `i` in `0..<count` on `count` threads at once; returns when all end.
    static func concurrently(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
        let group = DispatchGroup()
        for i in 0..<count {
            group.enter()
            let thread = Thread {
                body(i)
                group.leave()
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
        group.wait()
    }

    static func json(_ response: RawHTTPClient.Response) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any] ?? [:]
    }

    /// The change feed of `server` from the beginning: every token, in its order.
    static func feedTokens(_ server: ServerProcess) throws -> [String] {
        var tokens: [String] = []
        var since = "0"
        for _ in 0..<1000 {
            let page = json(try RawHTTPClient(port: server.port).request("GET", "/v1/changes?since=\(since)&limit=100"))
            let transactions = page["transactions"] as? [[String: Any]] ?? []
            if transactions.isEmpty { break }
            tokens += transactions.compactMap { $0["token"] as? String }
            since = tokens.last!
        }
        return tokens
    }

    @Test("48 clients over three servers doing If-Match increments with retry end at the exact total")
    func increments() throws {
        let servers = try Self.threeServers()
        let created = try RawHTTPClient(port: servers[0].port).json("POST", "/v1/objects/Task", #"{"title": "counter", "estimate": 0}"#)
        #expect(created.status == 201)
        let id = try #require(Self.json(created)["_id"] as? String)
        let perClient = 3
        let failures = Counter()
        let deadline = Date().addingTimeInterval(90)
        Self.concurrently(48) { client in
            let port = servers[client % 3].port
            for _ in 0..<perClient {
                var done = false
                for _ in 0..<500 where !done && Date() < deadline {
                    guard let read = try? RawHTTPClient(port: port).request("GET", "/v1/objects/\(id)"), read.status == 200,
                          let etag = read.header("ETag"), let value = Self.json(read)["estimate"] as? Double else { continue }
                    let write = try? RawHTTPClient(port: port).json("PATCH", "/v1/objects/\(id)", #"{"estimate": \#(value + 1)}"#,
                                                                    headers: [("If-Match", etag)])
                    if write?.status == 200 { done = true } else if let status = write?.status, status != 409 && status != 412 { failures.add() }
                }
                if !done { failures.add() }
            }
        }
        #expect(failures.value == 0)
        let final = try RawHTTPClient(port: servers[2].port).request("GET", "/v1/objects/\(id)")
        #expect(Self.json(final)["estimate"] as? Double == Double(48 * perClient))
        #expect(Self.json(final)["_version"] as? Int == 1 + 48 * perClient)
    }

    @Test("the same unique value inserted through three servers at once is stored once; the others are 409")
    func uniqueAcrossServers() throws {
        let servers = try Self.threeServers()
        let statuses = LockedList<Int>()
        Self.concurrently(9) { i in
            let status = (try? RawHTTPClient(port: servers[i % 3].port).json("POST", "/v1/objects/Tag", #"{"label": "release"}"#))?.status ?? -1
            statuses.add(status)
        }
        #expect(statuses.all.filter { $0 == 201 }.count == 1, "\(statuses.all)")
        #expect(statuses.all.filter { $0 == 409 }.count == 8, "\(statuses.all)")
        for server in servers {
            let page = Self.json(try RawHTTPClient(port: server.port).request("GET", "/v1/objects/Tag?where=label%20%3D%3D%20'release'&count=true"))
            #expect(page["count"] as? Int == 1)
        }
    }

    @Test("the change feed read from each server lists every transaction once, in one order, also while all three write")
    func oneFeed() throws {
        let servers = try Self.threeServers()
        let seen = Feeds()
        let writing = Counter()
        Self.concurrently(6) { i in
            if i < 3 {
                // Writers: 20 inserts through each server.
                for n in 0..<20 {
                    if (try? RawHTTPClient(port: servers[i].port).json("POST", "/v1/objects/Task", #"{"title": "s\#(i)-\#(n)"}"#))?.status == 201 { writing.add() }
                }
            } else {
                // Readers: follow the feed of one server while the writes run.
                var since = "0"
                var tokens: [String] = []
                let until = Date().addingTimeInterval(60)
                while tokens.count < 60 && Date() < until {
                    let page = Self.json((try? RawHTTPClient(port: servers[i - 3].port).request("GET", "/v1/changes?since=\(since)&limit=7&wait=2"))
                        ?? RawHTTPClient.Response(status: 0, headers: [:], body: []))
                    let found = (page["transactions"] as? [[String: Any]] ?? []).compactMap { $0["token"] as? String }
                    tokens += found
                    if let last = found.last { since = last }
                }
                seen.set(i - 3, tokens)
            }
        }
        #expect(writing.value == 60)
        let complete = try Self.feedTokens(servers[0])
        #expect(complete.count == 60)
        #expect(complete == complete.sorted { Int($0)! < Int($1)! })
        for server in servers { #expect(try Self.feedTokens(server) == complete) }
        for i in 0..<3 { #expect(seen.get(i) == complete, "followed on server \(i) while writes ran") }
    }

    @Test("a server started with a changed model waits for the opening lock (readyz 503), then migrates the store and serves it")
    func migrationAtStartUp() throws {
        let uri = try PostgresTestDatabase.freshURI()
        let first = try ServerProcess(store: uri)
        #expect(try RawHTTPClient(port: first.port).json("POST", "/v1/objects/Task", #"{"title": "Land"}"#).status == 201)
        // Version 2 of the demo model: Task.title renamed `name`.
        let tracker = ManagedObjectModel.taskTracker()
        let v2 = try ManagedObjectModel(name: tracker.name, version: 2, entities: tracker.entities.map { entity in
            guard entity.name == "Task" else { return entity }
            var task = entity
            task.attributes[0].name = "name"
            task.attributes[0].renamingIdentifier = "title"
            return task
        })
        let folder = TemporaryFolder()
        let modelFile = folder.url.appendingPathComponent("v2.json")
        try Data(v2.jsonValue.serialized().utf8).write(to: modelFile)
        // Another server holds the lock (it is migrating, say): this one's opening waits.
        let lock = try PostgresTestDatabase.holdOpeningLock(uri)
        let second = try ServerProcess(waitUntilReady: false, model: modelFile.path, store: uri)
        for _ in 0..<5 {
            #expect(try RawHTTPClient(port: second.port).request("GET", "/v1/readyz").status == 503)
            #expect(try RawHTTPClient(port: second.port).request("GET", "/v1/healthz").status == 200)
            usleep(100_000)
        }
        try lock.release()
        try second.waitUntilReady(seconds: 30)
        let tasks = Self.json(try RawHTTPClient(port: second.port).request("GET", "/v1/objects/Task"))
        let names = (tasks["objects"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
        #expect(names == ["Land"], "\(tasks)")
    }

    @Test("a long-poll on server A is answered by a write on server C")
    func longPollAcrossServers() throws {
        let servers = try Self.threeServers()
        _ = try RawHTTPClient(port: servers[0].port).json("POST", "/v1/objects/Project", #"{"name": "first"}"#)
        let since = try Self.feedTokens(servers[0]).last ?? "0"
        let answer = Box()
        let started = Date()
        let poll = Thread {
            let response = try? RawHTTPClient(port: servers[0].port, timeout: 30).request("GET", "/v1/changes?since=\(since)&wait=20")
            answer.set(response.map(Self.json), Date().timeIntervalSince(started))
        }
        poll.start()
        usleep(500_000)
        let written = try RawHTTPClient(port: servers[2].port).json("POST", "/v1/objects/Project", #"{"name": "from C"}"#)
        #expect(written.status == 201)
        let deadline = Date().addingTimeInterval(25)
        while answer.get() == nil && Date() < deadline { usleep(20_000) }
        let (page, seconds) = try #require(answer.get())
        let transactions = page?["transactions"] as? [[String: Any]] ?? []
        #expect(transactions.count == 1)
        #expect(seconds < 10, "the long-poll waited \(seconds) s: it was not woken by the other server's commit")
    }

    @Test("one of three servers killed during a write storm: acknowledged writes stay, the others answer, keyed retries write once")
    func killDuringStorm() throws {
        let servers = try Self.threeServers()
        let ports = servers.map(\.port)
        let acknowledged = LockedList<String>()
        let clients = 12, perClient = 40
        let killed = servers[1]
        let deadline = Date().addingTimeInterval(90)
        let retried = Counter()
        // Killed once a quarter of the writes are acknowledged: in the middle of the storm.
        let killer = Thread {
            while acknowledged.all.count < clients * perClient / 4 && Date() < deadline { usleep(1_000) }
            killed.signal(SIGKILL)
        }
        killer.start()
        Self.concurrently(clients) { client in
            for n in 0..<perClient {
                let title = "c\(client)-\(n)"
                var attempt = 0
                // Retries go to the next server with the same key, until one answers 201.
                while Date() < deadline && attempt < 30 {
                    let port = ports[(client + n + attempt) % 3]
                    attempt += 1
                    guard let response = try? RawHTTPClient(port: port, timeout: 10).json("POST", "/v1/objects/Task", #"{"title": "\#(title)"}"#,
                                                                                           headers: [("Idempotency-Key", "storm-\(title)")]) else {
                        retried.add()
                        continue
                    }
                    if response.status == 201 { acknowledged.add(title); break }
                    if response.status != 503 { usleep(10_000) }
                }
            }
        }
        #expect(killed.waitForExit(seconds: 10) != nil)
        #expect(retried.value > 0, "no request met the killed server: the storm ended before the kill")
        #expect(Set(acknowledged.all).count == clients * perClient, "every write was acknowledged by a surviving server in the end")
        let survivors = [servers[0], servers[2]]
        for server in survivors {
            #expect(try RawHTTPClient(port: server.port).request("GET", "/v1/readyz").status == 200)
        }
        // Every acknowledged title is stored exactly once.
        var stored: [String: Int] = [:]
        var cursor: String?
        for _ in 0..<100 {
            let path = "/v1/objects/Task?limit=100" + (cursor.map { "&after=\($0.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? $0)" } ?? "")
            let page = Self.json(try RawHTTPClient(port: survivors[0].port).request("GET", path))
            for object in page["objects"] as? [[String: Any]] ?? [] { stored[object["title"] as? String ?? "", default: 0] += 1 }
            guard let next = page["next"] as? String else { break }
            cursor = next
        }
        #expect(stored.count == clients * perClient)
        #expect(stored.values.allSatisfy { $0 == 1 }, "\(stored.filter { $0.value != 1 })")
    }
}

/// What the readers' threads found (`Counter` and `LockedList` are in ConcurrencyTests.swift).
final class Feeds: @unchecked Sendable {
    // @unchecked Sendable: `feeds` is only touched under `lock`.
    private let lock = NSLock()
    private var feeds: [Int: [String]] = [:]
    func set(_ i: Int, _ tokens: [String]) { lock.withLock { feeds[i] = tokens } }
    func get(_ i: Int) -> [String] { lock.withLock { feeds[i] ?? [] } }
}

final class Box: @unchecked Sendable {
    // @unchecked Sendable: `value` is only touched under `lock`.
    private let lock = NSLock()
    private var value: ([String: Any]?, Double)?
    func set(_ page: [String: Any]?, _ seconds: Double) { lock.withLock { value = (page, seconds) } }
    func get() -> ([String: Any]?, Double)? { lock.withLock { value } }
}
