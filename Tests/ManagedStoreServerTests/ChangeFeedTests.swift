import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite
@testable import ManagedStoreHTTP
@testable import ManagedStoreOpenAPI
@testable import ManagedStoreServer

/// `GET /v1/changes`: the persistent history as a client reads it, page by page, long-polling,
/// or as server-sent events; what pruning does to it; and that only committed saves show.
@Suite("Change feed")
struct ChangeFeedTests {
    // MARK: Pages

    @Test("transactions come in token order; since and next page through them; the last next asks for what comes after")
    func orderingAndPaging() throws {
        let harness = try ServerHarness()
        #expect(try harness.request("POST", "/v1/objects/Project", json: #"{"name": "Apollo"}"#).status == 201)
        #expect(try harness.request("POST", "/v1/objects/Task", json: #"{"title": "Launch", "project": "Project/1"}"#).status == 201)
        #expect(try harness.request("PATCH", "/v1/objects/Task/1", json: #"{"done": true}"#).status == 200)
        #expect(try harness.request("DELETE", "/v1/objects/Task/1").status == 204)

        let all = try Page(harness.request("GET", "/v1/changes?since=0"))
        #expect(all.tokens.count == 4)
        #expect(all.tokens == all.tokens.sorted { Int($0)! < Int($1)! }, "tokens only grow")
        #expect(all.next == all.tokens.last)
        #expect(all.changes(0) == [Change("Project/1", "insert", ["archived", "name", "tasks"])])
        #expect(all.changes(1) == [Change("Project/1", "update", ["tasks"]), Change("Task/1", "insert", ["done", "due", "estimate", "priority", "project", "tags", "title"])])
        #expect(all.changes(2) == [Change("Task/1", "update", ["done"])])
        #expect(all.changes(3).map(\.type).sorted() == ["delete", "update"], "the task goes, and the project's tasks lose it")

        let first = try Page(harness.request("GET", "/v1/changes?since=0&limit=3"))
        #expect(first.tokens == Array(all.tokens.prefix(3)))
        #expect(first.next == all.tokens[2])
        let second = try Page(harness.request("GET", "/v1/changes?since=\(first.next)&limit=3"))
        #expect(second.tokens == [all.tokens[3]])
        let after = try Page(harness.request("GET", "/v1/changes?since=\(second.next)"))
        #expect(after.tokens.isEmpty && after.next == second.next, "nothing newer: next stays where the client is")

        // A transaction is one entry, however many objects it touched.
        let tx = try harness.request("POST", "/v1/transactions", json: #"""
            {"operations": [{"op": "insert", "entity": "Tag", "values": {"label": "a"}},
                            {"op": "insert", "entity": "Tag", "values": {"label": "b"}}]}
            """#)
        let token = try #require(tx.json?["token"] as? String)
        let page = try Page(harness.request("GET", "/v1/changes?since=\(after.next)"))
        #expect(page.tokens == [token], "the transaction answered the token the feed shows")
        #expect(page.changes(0).map(\.object) == ["Tag/1", "Tag/2"])
    }

    @Test("the Author header is recorded with the transaction; without it the author is null")
    func author() throws {
        let harness = try ServerHarness()
        #expect(try harness.request("POST", "/v1/objects/Tag", json: #"{"label": "a"}"#, headers: [("Author", "alice")]).status == 201)
        #expect(try harness.request("POST", "/v1/objects/Tag", json: #"{"label": "b"}"#).status == 201)
        #expect(try harness.request("POST", "/v1/transactions", json: #"{"operations": [{"op": "insert", "entity": "Tag", "values": {"label": "c"}}]}"#,
                                    headers: [("Author", "importer 2.1")]).status == 200)
        let page = try Page(harness.request("GET", "/v1/changes?since=0"))
        #expect(page.authors == ["alice", nil, "importer 2.1"])
    }

    @Test("entity= keeps the changes of those entities and leaves out transactions with none; objects=true adds each object as a GET answers it now")
    func entityFilterAndObjects() throws {
        let harness = try ServerHarness()
        #expect(try harness.request("POST", "/v1/objects/Tag", json: #"{"label": "a"}"#).status == 201)
        #expect(try harness.request("POST", "/v1/objects/Project", json: #"{"name": "Apollo"}"#).status == 201)
        #expect(try harness.request("POST", "/v1/objects/Project", json: #"{"name": "Gemini"}"#).status == 201)
        #expect(try harness.request("PATCH", "/v1/objects/Project/1", json: #"{"name": "Apollo 11"}"#).status == 200)
        #expect(try harness.request("DELETE", "/v1/objects/Project/2").status == 204)

        let projects = try Page(harness.request("GET", "/v1/changes?since=0&entity=Project&objects=true"))
        #expect(projects.tokens.count == 4, "the Tag's transaction is left out")
        let values = projects.transactions.flatMap { ($0["changes"] as? [[String: Any]]) ?? [] }
        #expect(values.allSatisfy { ($0["object"] as? String)?.hasPrefix("Project/") == true })
        let apollo = values.filter { $0["object"] as? String == "Project/1" }
        #expect(apollo.count == 2)
        for change in apollo {
            let value = try #require(change["value"] as? [String: Any], "the current state, also on the insert's change")
            #expect(value["name"] as? String == "Apollo 11" && value["_version"] as? Int == 2)
        }
        let gone = values.filter { $0["object"] as? String == "Project/2" }
        #expect(gone.count == 2 && gone.allSatisfy { $0["value"] is NSNull }, "an object that no longer exists is null")

        let both = try Page(harness.request("GET", "/v1/changes?since=0&entity=Tag,Project"))
        #expect(both.tokens.count == 5)
        #expect(!both.transactions.flatMap { ($0["changes"] as? [[String: Any]]) ?? [] }.contains { $0["value"] != nil },
                "no value without objects=true")
    }

    @Test("bad parameters are 400 problems naming the parameter")
    func badParameters() throws {
        let harness = try ServerHarness()
        for query in ["since=-1", "since=x", "since=99999999999999999999", "limit=0", "limit=1001", "wait=61", "wait=-1",
                      "objects=maybe", "entity=Nope", "cursor=3"] {
            let answer = try harness.request("GET", "/v1/changes?\(query)")
            #expect(answer.status == 400, "\(query)")
            #expect(answer.json?["code"] as? String == "bad-request", "\(query)")
        }
        #expect(try harness.request("POST", "/v1/changes").status == 405)
        // A Last-Event-ID that is no token is refused, with or without a stream, instead of
        // silently falling back to since.
        for (value, accept) in [("", "application/json"), ("x", "application/json"), ("-2", "text/event-stream"), ("", "text/event-stream")] {
            let answer = try harness.request("GET", "/v1/changes", headers: [("Accept", accept), ("Last-Event-ID", value)])
            #expect(answer.status == 400, "Last-Event-ID '\(value)' with \(accept)")
            #expect(answer.json?["code"] as? String == "bad-request")
        }
    }

    // MARK: Only what committed

    @Test("a refused write (409, 422, a transaction failing midway, a bad ref) leaves no history")
    func refusedWritesLeaveNoHistory() throws {
        let harness = try ServerHarness()
        #expect(try harness.request("POST", "/v1/objects/Tag", json: #"{"label": "a"}"#).status == 201)
        #expect(try harness.request("PATCH", "/v1/objects/Tag/1", json: #"{"label": "b"}"#).status == 200)
        let before = try Page(harness.request("GET", "/v1/changes?since=0"))

        #expect(try harness.request("PATCH", "/v1/objects/Tag/1", json: #"{"label": "c"}"#, headers: [("If-Match", "\"1\"")]).status == 409)
        #expect(try harness.request("POST", "/v1/objects/Tag", json: #"{"label": "b"}"#).status == 409, "label is unique")
        #expect(try harness.request("POST", "/v1/objects/Task", json: #"{"priority": 3}"#).status == 422)
        #expect(try harness.request("POST", "/v1/transactions", json: #"""
            {"operations": [{"op": "insert", "entity": "Tag", "values": {"label": "new"}},
                            {"op": "update", "object": "Tag/1", "version": 1, "values": {"label": "d"}}]}
            """#).status == 409)
        #expect(try harness.request("POST", "/v1/transactions", json: #"""
            {"operations": [{"op": "insert", "entity": "Tag", "values": {"label": "new"}},
                            {"op": "delete", "object": "Tag/99"}]}
            """#).status == 404)

        let after = try Page(harness.request("GET", "/v1/changes?since=0"))
        #expect(after.tokens == before.tokens)
        #expect(try harness.coordinator.historyTransactionCount() == 2)
        // And the next committed save continues the sequence.
        #expect(try harness.request("POST", "/v1/objects/Tag", json: #"{"label": "z"}"#).status == 201)
        #expect(try Page(harness.request("GET", "/v1/changes?since=\(before.next)")).tokens.count == 1)
    }

    // MARK: Long-poll

    @Test("wait= holds the request until another client writes, then answers that write")
    func longPollWakesOnWrite() throws {
        let harness = try ServerHarness()
        #expect(try harness.request("POST", "/v1/objects/Tag", json: #"{"label": "a"}"#).status == 201)
        let since = try Page(harness.request("GET", "/v1/changes?since=0")).next

        let poll = Background { try Page(harness.request("GET", "/v1/changes?since=\(since)&wait=30")) }
        try waitUntil("the long-poll is parked") { harness.service.changes.waitingCount == 1 }
        #expect(poll.result == nil, "nothing newer yet: still waiting")
        #expect(try harness.request("POST", "/v1/objects/Tag", json: #"{"label": "b"}"#, headers: [("Author", "bob")]).status == 201)

        let page = try #require(try poll.wait(seconds: 20))
        #expect(page.tokens.count == 1, "the write another client made")
        #expect(page.authors == ["bob"])
        #expect(page.changes(0).map(\.object) == ["Tag/2"])
        #expect(harness.service.changes.waitingCount == 0)
    }

    @Test("a long-poll with nothing newer ends after wait seconds with an empty page; one with something newer answers at once")
    func longPollTimesOut() throws {
        let harness = try ServerHarness()
        let empty = try Page(harness.request("GET", "/v1/changes?since=0&wait=1"))
        #expect(empty.tokens.isEmpty && empty.next == "0")
        #expect(try harness.request("POST", "/v1/objects/Tag", json: #"{"label": "a"}"#).status == 201)
        let ready = try Page(harness.request("GET", "/v1/changes?since=0&wait=60"))
        #expect(ready.tokens.count == 1)
    }

    @Test("a long-poll filtered by entity is not woken by writes to other entities")
    func longPollFilteredByEntity() throws {
        let harness = try ServerHarness()
        let poll = Background { try Page(harness.request("GET", "/v1/changes?since=0&wait=30&entity=Project")) }
        try waitUntil("the long-poll is parked") { harness.service.changes.waitingCount == 1 }
        #expect(try harness.request("POST", "/v1/objects/Tag", json: #"{"label": "a"}"#).status == 201)
        #expect(try harness.request("POST", "/v1/objects/Tag", json: #"{"label": "b"}"#).status == 201)
        // The Tag writes are committed and read by the feed before the Project write is made.
        try waitUntil("the feed has looked at the Tag writes") { (try? harness.coordinator.historyTransactionCount()) == 2 }
        #expect(harness.service.changes.waitingCount == 1, "still waiting")
        #expect(try harness.request("POST", "/v1/objects/Project", json: #"{"name": "Apollo"}"#).status == 201)
        let page = try #require(try poll.wait(seconds: 20))
        #expect(page.changes(0).map(\.object) == ["Project/1"])
        #expect(page.tokens == ["3"])
    }

    @Test("stopping the server answers waiting long-polls at once")
    func stopAnswersLongPolls() throws {
        let harness = try ServerHarness()
        let polls = (0..<3).map { _ in Background { try Page(harness.request("GET", "/v1/changes?since=0&wait=60")) } }
        try waitUntil("the long-polls are parked") { harness.service.changes.waitingCount == 3 }
        let stopped = Background { harness.server.stop(timeout: 30) }
        for poll in polls {
            let page = try #require(try poll.wait(seconds: 20), "answered, not left hanging until wait runs out")
            #expect(page.tokens.isEmpty)
        }
        _ = try stopped.wait(seconds: 20)
    }

    // MARK: Server-sent events

    @Test("Accept: text/event-stream sends every transaction as an event whose id is its token, then each new one as it commits; Last-Event-ID resumes after it")
    func serverSentEvents() throws {
        let harness = try ServerHarness()
        #expect(try harness.request("POST", "/v1/objects/Tag", json: #"{"label": "a"}"#).status == 201)
        #expect(try harness.request("POST", "/v1/objects/Tag", json: #"{"label": "b"}"#).status == 201)

        let client = try RawHTTPClient(port: harness.port, timeout: 20)
        try client.send(Array("GET /v1/changes?since=0 HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n".utf8))
        let (status, headers) = try client.readHead()
        #expect(status == 200)
        #expect(headers["content-type"] == "text/event-stream")
        #expect(headers["oldest-token"] == "0")
        var seen = Events()
        seen.add(try client.readChunks { Events($0).count >= 2 }.body)
        #expect(seen.ids == ["1", "2"])
        #expect(seen.data.map { ($0["changes"] as? [[String: Any]])?.first?["object"] as? String } == ["Tag/1", "Tag/2"])

        // A write by another client arrives on the open stream.
        #expect(try harness.request("PATCH", "/v1/objects/Tag/1", json: #"{"label": "a2"}"#, headers: [("Author", "carol")]).status == 200)
        seen.add(try client.readChunks { Events($0).count >= 1 }.body)
        #expect(seen.ids == ["1", "2", "3"])
        #expect(seen.data.last?["author"] as? String == "carol")

        // A client that reconnects with the last id it saw gets only what came after.
        #expect(try harness.request("POST", "/v1/objects/Tag", json: #"{"label": "c"}"#).status == 201)
        let again = try RawHTTPClient(port: harness.port, timeout: 20)
        try again.send(Array("GET /v1/changes HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\nLast-Event-ID: 3\r\n\r\n".utf8))
        #expect(try again.readHead().status == 200)
        let resumed = Events(try again.readChunks { Events($0).count >= 1 }.body)
        #expect(resumed.ids == ["4"])
    }

    @Test("a stream ends cleanly when the server stops; an event stream from a pruned token is 410 before it starts")
    func streamEndsAndPruned() throws {
        let harness = try ServerHarness()
        for label in ["a", "b", "c"] {
            #expect(try harness.request("POST", "/v1/objects/Tag", json: #"{"label": "\#(label)"}"#).status == 201)
        }
        #expect(try harness.coordinator.deleteHistory(before: PersistentHistoryToken(rawValue: 3)) == 2)
        let refused = try harness.request("GET", "/v1/changes?since=1", headers: [("Accept", "text/event-stream")])
        #expect(refused.status == 410)
        #expect(refused.header("Oldest-Token") == "2")

        let client = try RawHTTPClient(port: harness.port, timeout: 20)
        try client.send(Array("GET /v1/changes?since=2 HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n".utf8))
        #expect(try client.readHead().status == 200)
        #expect(Events(try client.readChunks { Events($0).count >= 1 }.body).ids == ["3"])
        let stopped = Background { harness.server.stop(timeout: 30) }
        let rest = try client.readChunks { _ in false }
        #expect(rest.ended, "the stream's last chunk came: the client knows it ended and reconnects")
        _ = try stopped.wait(seconds: 20)
    }

    // MARK: Pruning

    @Test("after pruning, a since before the oldest kept token is 410 gone with Oldest-Token; from it on the feed goes on")
    func prunedToken() throws {
        let harness = try ServerHarness()
        for label in ["a", "b", "c", "d"] {
            #expect(try harness.request("POST", "/v1/objects/Tag", json: #"{"label": "\#(label)"}"#).status == 201)
        }
        #expect(try harness.request("GET", "/v1/changes?since=0").header("Oldest-Token") == "0")
        #expect(try harness.coordinator.deleteHistory(before: PersistentHistoryToken(rawValue: 3)) == 2)

        for since in ["0", "1"] {
            let gone = try harness.request("GET", "/v1/changes?since=\(since)")
            #expect(gone.status == 410)
            #expect(gone.json?["code"] as? String == "gone")
            #expect(gone.json?["oldestToken"] as? String == "2")
            #expect(gone.header("Oldest-Token") == "2")
            #expect(gone.header("Content-Type") == "application/problem+json")
        }
        let kept = try harness.request("GET", "/v1/changes?since=2")
        #expect(kept.status == 200 && kept.header("Oldest-Token") == "2")
        #expect(try Page(kept).tokens == ["3", "4"])
        // The store works on: writes, and merge policies that need pruned versions.
        #expect(try harness.request("PATCH", "/v1/objects/Tag/1?merge=store-trump", json: #"{"label": "a2"}"#,
                                    headers: [("If-Match", "\"1\"")]).status == 200)
        #expect(try Page(harness.request("GET", "/v1/changes?since=4")).tokens == ["5"])
    }

    @Test("--history-retention prunes saves older than the period on its own")
    func retentionPrunes() throws {
        let harness = try ServerHarness(inMemory: false) { service, _ in service.historyRetention = .period(.seconds(1)) }
        #expect(try harness.request("POST", "/v1/objects/Tag", json: #"{"label": "a"}"#).status == 201)
        try waitUntil("the retention pruned the first save", seconds: 15) {
            (try? harness.request("GET", "/v1/changes?since=0").status) == 410
        }
        #expect(try harness.coordinator.historyTransactionCount() == 0)
        #expect(try harness.request("POST", "/v1/objects/Tag", json: #"{"label": "b"}"#).status == 201)
        let page = try Page(harness.request("GET", "/v1/changes?since=1"))
        #expect(page.tokens == ["2"], "tokens go on after pruning; a since at the oldest kept token is answered")
    }

    @Test("--history-retention values")
    func retentionValues() {
        #expect(HistoryRetention.Setting("7d") == .period(.seconds(7 * 86_400)))
        #expect(HistoryRetention.Setting("90m") == .period(.seconds(5_400)))
        #expect(HistoryRetention.Setting("12h") == .period(.seconds(43_200)))
        #expect(HistoryRetention.Setting("30") == .period(.seconds(30)))
        #expect(HistoryRetention.Setting("forever") == .forever)
        for bad in ["", "d", "0s", "-1d", "1.5h", "7w", "36501d", "99999999999999999999d", "٣d", "7 d"] {
            #expect(HistoryRetention.Setting(bad) == nil, "\(bad)")
        }
    }
}

// MARK: Helpers

/// One page of the change feed, read from its JSON.
private struct Page {
    let transactions: [[String: Any]]
    let next: String

    init(_ response: RawHTTPClient.Response) throws {
        guard response.status == 200 else { throw PageError.status(response.status, response.text) }
        guard let json = response.json, let transactions = json["transactions"] as? [[String: Any]], let next = json["next"] as? String else {
            throw PageError.shape(response.text)
        }
        #expect(response.header("Oldest-Token") != nil, "every answer carries Oldest-Token")
        self.transactions = transactions
        self.next = next
    }

    var tokens: [String] { transactions.compactMap { $0["token"] as? String } }
    var authors: [String?] { transactions.map { $0["author"] as? String } }

    func changes(_ index: Int) -> [Change] {
        ((transactions[index]["changes"] as? [[String: Any]]) ?? []).map {
            Change($0["object"] as? String ?? "", $0["type"] as? String ?? "", (($0["properties"] as? [String]) ?? []).sorted())
        }
    }

    enum PageError: Error { case status(Int, String), shape(String) }
}

private struct Change: Equatable {
    let object: String
    let type: String
    let properties: [String]
    init(_ object: String, _ type: String, _ properties: [String]) {
        self.object = object
        self.type = type
        self.properties = properties.sorted()
    }
}

/// Server-sent events parsed from a stream's bytes: each `id` and `data` (comments skipped).
private struct Events {
    var ids: [String] = []
    var data: [[String: Any]] = []
    var count: Int { ids.count }

    init() {}

    init(_ bytes: [UInt8]) {
        add(bytes)
    }

    mutating func add(_ bytes: [UInt8]) {
        for block in String(decoding: bytes, as: UTF8.self).components(separatedBy: "\n\n") {
            var id: String?
            var payload: [String: Any]?
            for line in block.split(separator: "\n") {
                if line.hasPrefix("id: ") { id = String(line.dropFirst(4)) }
                if line.hasPrefix("data: ") {
                    payload = (try? JSONSerialization.jsonObject(with: Data(line.dropFirst(6).utf8))) as? [String: Any]
                }
            }
            if let id, let payload {
                ids.append(id)
                data.append(payload)
            }
        }
    }
}

/// Work on another thread whose result the test collects later.
private final class Background<T>: @unchecked Sendable {
    // @unchecked Sendable: `outcome` is written once under `lock` before `done` is signalled.
    private let lock = NSLock()
    private var outcome: Result<T, Error>?
    private let done = DispatchSemaphore(value: 0)

    init(_ work: @escaping () throws -> T) {
        let box = UncheckedBox(work)
        Thread.detachNewThread { [self] in
            let result = Result { try box.value() }
            lock.lock()
            outcome = result
            lock.unlock()
            done.signal()
        }
    }

    /// The result if the work has finished.
    var result: T? {
        lock.lock()
        defer { lock.unlock() }
        return try? outcome?.get()
    }

    /// Waits up to `seconds` for the work; nil if it has not finished by then.
    func wait(seconds: Double) throws -> T? {
        guard done.wait(timeout: .now() + seconds) == .success else { return nil }
        lock.lock()
        defer { lock.unlock() }
        return try outcome?.get()
    }
}

private struct UncheckedBox<T>: @unchecked Sendable {
    // @unchecked Sendable: handed to one thread and used only there.
    let value: T
    init(_ value: T) { self.value = value }
}
