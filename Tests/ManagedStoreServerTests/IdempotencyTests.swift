import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite
@testable import ManagedStoreHTTP
@testable import ManagedStoreOpenAPI
@testable import ManagedStoreServer

/// The contract's "Idempotent writes": a retried request with its `Idempotency-Key` gets the
/// first answer again and writes nothing; another request under the key is 422; an answer that
/// wrote nothing is not kept.
@Suite("Idempotent writes")
struct IdempotencyTests {
    /// Sends the same request twice under `key`: the second answer is the first, replayed.
    static func sendTwice(_ harness: ServerHarness, _ method: String, _ path: String, _ body: String?, key: String,
                          headers: [(String, String)] = []) throws -> (first: RawHTTPClient.Response, again: RawHTTPClient.Response) {
        let all = [("Idempotency-Key", key)] + headers
        let first = try harness.request(method, path, json: body, headers: all)
        let again = try harness.request(method, path, json: body, headers: all)
        #expect(first.header("Idempotent-Replayed") == nil, "a first answer is not a replay")
        #expect(again.header("Idempotent-Replayed") == "true", "\(method) \(path): \(again.status) \(again.text)")
        #expect(again.status == first.status)
        #expect(again.body == first.body, "the replay's body is the first answer's, byte for byte")
        for header in ["Content-Type", "ETag", "Location", "Merge-Policy-Applied", "Merge-Conflicts"] {
            #expect(again.header(header) == first.header(header), "\(header)")
        }
        return (first, again)
    }

    static func version(_ harness: ServerHarness, _ path: String) throws -> Int? {
        try harness.request("GET", path).json?["_version"] as? Int
    }

    @Test("a retried POST gets the same 201, _id, Location and body, and the object is stored once")
    func insertReplayed() throws {
        let harness = try ServerHarness()
        let (first, _) = try Self.sendTwice(harness, "POST", "/v1/objects/Task", #"{"title": "once", "priority": 2}"#, key: "insert-1")
        #expect(first.status == 201)
        #expect(first.json?["_id"] as? String == "Task/1")
        #expect(try harness.counts()["Task"] == 1)
        // A new key is a new write.
        let other = try harness.request("POST", "/v1/objects/Task", json: #"{"title": "once", "priority": 2}"#, headers: [("Idempotency-Key", "insert-2")])
        #expect(other.json?["_id"] as? String == "Task/2")
        #expect(try harness.counts()["Task"] == 2)
    }

    @Test("PATCH, PUT and DELETE retried under their keys change the object once: one version step, one delete")
    func updatesReplayed() throws {
        let harness = try ServerHarness()
        #expect(try harness.request("POST", "/v1/objects/Task", json: #"{"title": "t"}"#).status == 201)
        let patch = try Self.sendTwice(harness, "PATCH", "/v1/objects/Task/1", #"{"priority": 3}"#, key: "patch-1", headers: [("If-Match", "\"1\"")])
        #expect(patch.first.status == 200)
        #expect(patch.first.json?["_version"] as? Int == 2)
        #expect(try Self.version(harness, "/v1/objects/Task/1") == 2, "the retry did not write again (a stale If-Match would have been 409)")
        let put = try Self.sendTwice(harness, "PUT", "/v1/objects/Task/1", #"{"title": "replaced"}"#, key: "put-1")
        #expect(put.first.status == 200)
        #expect(try Self.version(harness, "/v1/objects/Task/1") == 3)
        let delete = try Self.sendTwice(harness, "DELETE", "/v1/objects/Task/1", nil, key: "delete-1")
        #expect(delete.first.status == 204, "a second DELETE without its key would be 404; with it, the 204 again")
        #expect(try harness.counts()["Task"] == 0)
    }

    @Test("a retried transaction gets the same ids, objects and token, and its inserts are stored once")
    func transactionReplayed() throws {
        let harness = try ServerHarness()
        let body = #"""
            {"operations": [{"op": "insert", "entity": "Project", "ref": "p", "values": {"name": "Apollo"}},
                            {"op": "insert", "entity": "Task", "ref": "t", "values": {"title": "launch", "project": "p"}}]}
            """#
        let (first, _) = try Self.sendTwice(harness, "POST", "/v1/transactions", body, key: "tx-1")
        #expect(first.status == 200)
        #expect((first.json?["ids"] as? [String: String]) == ["p": "Project/1", "t": "Task/1"])
        #expect(try harness.counts() == ["Project": 1, "Task": 1, "Tag": 0])
        let history = try harness.request("GET", "/v1/changes?since=0").json?["transactions"] as? [Any]
        #expect(history?.count == 1, "one transaction in the history")
    }

    @Test("batch insert, batch update and batch delete retried: rows written once, the same counts and IDs")
    func batchesReplayed() throws {
        let harness = try ServerHarness()
        let insert = try Self.sendTwice(harness, "POST", "/v1/objects/Task", #"[{"title": "a"}, {"title": "b"}, {"title": "c"}]"#, key: "batch-insert")
        #expect(insert.first.json?["ids"] as? [String] == ["Task/1", "Task/2", "Task/3"])
        #expect(try harness.counts()["Task"] == 3)
        let update = try Self.sendTwice(harness, "PATCH", "/v1/objects/Task?where=" + "title != \"c\"".queryEncoded, #"{"priority": 4}"#, key: "batch-update")
        #expect(update.first.json?["count"] as? Int == 2)
        #expect(try Self.version(harness, "/v1/objects/Task/1") == 2, "updated once")
        let delete = try Self.sendTwice(harness, "DELETE", "/v1/objects/Task?where=" + "priority == 4".queryEncoded, nil, key: "batch-delete")
        #expect(delete.first.json?["count"] as? Int == 2)
        #expect(try harness.counts()["Task"] == 1)
    }

    @Test("a keyed NDJSON import is one transaction: retried, the same count and ids, rows stored once")
    func ndjsonReplayed() throws {
        let harness = try ServerHarness()
        let lines = (1...2_500).map { #"{"title": "row \#($0)"}"# }.joined(separator: "\n")
        func send(_ key: String, _ body: String) throws -> RawHTTPClient.Response {
            try harness.client().request("POST", "/v1/objects/Task", headers: [("Content-Type", "application/x-ndjson"), ("Idempotency-Key", key)],
                                         body: Array(body.utf8))
        }
        let first = try send("ndjson-1", lines)
        #expect(first.status == 200, "\(first.text.prefix(300))")
        #expect(first.json?["count"] as? Int == 2_500)
        let again = try send("ndjson-1", lines)
        #expect(again.header("Idempotent-Replayed") == "true")
        #expect(again.body == first.body)
        #expect(try harness.counts()["Task"] == 2_500)
        // Another body under the key (one line more): refused, nothing written.
        let other = try send("ndjson-1", lines + "\n{\"title\": \"row 2501\"}")
        #expect(other.status == 422)
        #expect(other.json?["code"] as? String == "idempotency-key-reused")
        #expect(try harness.counts()["Task"] == 2_500)
        // A keyed stream with a bad line stores nothing (it is atomic), and is not kept.
        let bad = try send("ndjson-2", #"{"title": "ok"}"# + "\n" + #"{"title": 5}"#)
        #expect(bad.status == 422)
        #expect(bad.json?["committed"] as? Int == 0)
        #expect(try harness.counts()["Task"] == 2_500)
        #expect(try send("ndjson-2", #"{"title": "ok"}"#).status == 200, "the failed first try was not kept: the key is free")
    }

    @Test("the same key with another body, path, method or token is 422 idempotency-key-reused, and writes nothing")
    func reusedKeyRefused() throws {
        let tokens = [AccessToken(name: "one", token: "one-secret", scopes: [AccessScope(.write)]),
                      AccessToken(name: "two", token: "two-secret", scopes: [AccessScope(.write)])]
        let harness = try ServerHarness { service, _ in service.accessTokens = tokens }
        let one = ("Authorization", "Bearer one-secret")
        let key = ("Idempotency-Key", "shared")
        #expect(try harness.request("POST", "/v1/objects/Tag", json: #"{"label": "x"}"#, headers: [one, key]).status == 201)
        let before = try harness.counts()
        let attempts: [(String, String, String?, (String, String))] = [
            ("POST", "/v1/objects/Tag", #"{"label": "y"}"#, one),         // another body
            ("POST", "/v1/objects/Tag", #"{"label":"x"}"#, one),          // the same JSON, other bytes
            ("POST", "/v1/objects/Project", #"{"name": "x"}"#, one),      // another path
            ("PATCH", "/v1/objects/Tag/1", #"{"label": "x"}"#, one),      // another method and path
            ("POST", "/v1/objects/Tag", #"{"label": "x"}"#, ("Authorization", "Bearer two-secret")),  // another client
        ]
        for (method, path, body, token) in attempts {
            let response = try harness.request(method, path, json: body, headers: [token, key])
            #expect(response.status == 422, "\(method) \(path) \(body ?? ""): \(response.status)")
            #expect(response.json?["code"] as? String == "idempotency-key-reused")
            #expect(response.header("Content-Type") == "application/problem+json")
        }
        #expect(try harness.counts() == before)
        #expect(try harness.request("GET", "/v1/objects/Tag/1", headers: [one]).json?["_version"] as? Int == 1)
        // The first request itself is still answered from its record.
        let again = try harness.request("POST", "/v1/objects/Tag", json: #"{"label": "x"}"#, headers: [one, key])
        #expect(again.status == 201)
        #expect(again.header("Idempotent-Replayed") == "true")
    }

    @Test("an answer that wrote nothing (422, 409, 404) is not kept: the retry is carried out afresh")
    func failuresNotStored() throws {
        let harness = try ServerHarness()
        let invalid = try harness.request("POST", "/v1/objects/Task", json: #"{"priority": 2}"#, headers: [("Idempotency-Key", "k1")])
        #expect(invalid.status == 422)
        let again = try harness.request("POST", "/v1/objects/Task", json: #"{"priority": 2}"#, headers: [("Idempotency-Key", "k1")])
        #expect(again.status == 422)
        #expect(again.header("Idempotent-Replayed") == nil, "carried out again, not replayed")
        // The key is still free: a corrected request under it is written.
        let fixed = try harness.request("POST", "/v1/objects/Task", json: #"{"title": "t", "priority": 2}"#, headers: [("Idempotency-Key", "k1")])
        #expect(fixed.status == 201)
        #expect(fixed.header("Idempotent-Replayed") == nil)
        // A stale version: 409, not kept; once the client knows the version, the same key writes.
        let stale = try harness.request("PATCH", "/v1/objects/Task/1", json: #"{"priority": 5}"#, headers: [("Idempotency-Key", "k2"), ("If-Match", "\"7\"")])
        #expect(stale.status == 409)
        #expect(try harness.request("PATCH", "/v1/objects/Task/1", json: #"{"priority": 5}"#, headers: [("Idempotency-Key", "k3"), ("If-Match", "\"1\"")]).status == 200)
        let missing = try harness.request("DELETE", "/v1/objects/Task/99", headers: [("Idempotency-Key", "k4")])
        #expect(missing.status == 404)
        #expect(try harness.request("POST", "/v1/objects/Tag", json: #"{"label": "other"}"#, headers: [("Idempotency-Key", "k4")]).status == 201,
                "a 404 under a key leaves the key free for another request")
    }

    @Test("a malformed Idempotency-Key is 400 and writes nothing", arguments: ["", "has space", String(repeating: "k", count: 256), "caf\u{e9}", "tab\there"])
    func malformedKey(_ key: String) throws {
        let harness = try ServerHarness()
        let response = try harness.request("POST", "/v1/objects/Tag", json: #"{"label": "x"}"#, headers: [("Idempotency-Key", key)])
        #expect(response.status == 400, "\(key.debugDescription): \(response.status) \(response.text)")
        #expect(response.json?["code"] as? String == "bad-request")
        #expect(try harness.counts()["Tag"] == 0)
        let longest = String(repeating: "k", count: 255)
        #expect(try harness.request("POST", "/v1/objects/Tag", json: #"{"label": "x"}"#, headers: [("Idempotency-Key", longest)]).status == 201)
    }

    @Test("16 concurrent duplicates under one key: one write, 16 identical answers, all but one replays")
    func concurrentDuplicates() throws {
        let harness = try ServerHarness(inMemory: false)
        // Other writes keep the queue busy, so that duplicates wait in it behind one another.
        let answers = LockedList<RawHTTPClient.Response>()
        let group = DispatchGroup()
        let start = DispatchSemaphore(value: 0)
        for _ in 0..<16 {
            group.enter()
            Thread {
                defer { group.leave() }
                guard let client = try? harness.client() else { return }
                start.wait()
                if let response = try? client.json("POST", "/v1/objects/Task", #"{"title": "duplicate"}"#, headers: [("Idempotency-Key", "same-key")]) {
                    answers.add(response)
                }
            }.start()
        }
        for _ in 0..<16 { start.signal() }
        #expect(group.wait(timeout: .now() + 30) == .success)
        let all = answers.all
        #expect(all.count == 16)
        #expect(Set(all.map(\.status)) == [201])
        #expect(Set(all.map(\.body)).count == 1, "every answer is the one write's")
        #expect(all.filter { $0.header("Idempotent-Replayed") == "true" }.count == 15)
        #expect(try harness.counts()["Task"] == 1)
    }

    @Test("a key expires after the store's key lifetime: the retry writes afresh, and expired records are deleted in the background")
    func expiry() throws {
        let harness = try ServerHarness(keyLifetime: .seconds(1))
        let first = try harness.request("POST", "/v1/objects/Task", json: #"{"title": "x"}"#, headers: [("Idempotency-Key", "short")])
        #expect(first.json?["_id"] as? String == "Task/1")
        #expect(try harness.coordinator.idempotencyRecordCount() == 1)
        Thread.sleep(forTimeInterval: 1.2)
        let later = try harness.request("POST", "/v1/objects/Task", json: #"{"title": "x"}"#, headers: [("Idempotency-Key", "short")])
        #expect(later.status == 201)
        #expect(later.header("Idempotent-Replayed") == nil)
        #expect(later.json?["_id"] as? String == "Task/2", "a new write: the first one's key had expired")
        try waitUntil("the expired record is deleted", seconds: 10) { (try? harness.coordinator.idempotencyRecordCount()) == 0 }
        // And the metrics say so.
        let metrics = try harness.request("GET", "/v1/metrics").text
        #expect(metrics.contains("managedstore_idempotency_keys 0"), "\(metrics.split(separator: "\n").filter { $0.contains("idempotency") })")
    }

    @Test("the keys survive a restart: the retry after it is a replay of the answer before it")
    func keysSurviveRestart() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("managedstore-idempotency-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let first: RawHTTPClient.Response
        do {
            let harness = try ServerHarness(directory: directory)
            first = try harness.request("POST", "/v1/objects/Task", json: #"{"title": "before"}"#, headers: [("Idempotency-Key", "restart")])
            #expect(first.status == 201)
            let metrics = try harness.request("GET", "/v1/metrics").text
            #expect(metrics.contains("managedstore_idempotency_keys 1"))
        }
        let harness = try ServerHarness(directory: directory)
        let again = try harness.request("POST", "/v1/objects/Task", json: #"{"title": "before"}"#, headers: [("Idempotency-Key", "restart")])
        #expect(again.header("Idempotent-Replayed") == "true")
        #expect(again.body == first.body)
        #expect(try harness.counts()["Task"] == 1)
    }

    @Test("the stored answer reads back as it was written: status, every header in order, the body's bytes")
    func storedAnswerRoundTrip() throws {
        let body = Array(#"{"a":"line\nbreak"}"#.utf8) + [0x0A, 0x0A]
        let response = HTTPResponse(status: 201, headers: [("Content-Type", "application/json"), ("ETag", "\"1\""), ("Location", "/v1/objects/Task/1")], body: body)
        let read = try #require(StoredAnswer.decode(StoredAnswer.encode(response)))
        #expect(read.status == 201)
        #expect(read.headers.map(\.name) == response.headers.map(\.name))
        #expect(read.headers.map(\.value) == response.headers.map(\.value))
        #expect(read.body == body)
        #expect(StoredAnswer.decode(Array("not an answer".utf8)) == nil)
    }

    @Test("SHA-256 taken in pieces equals the digest of the whole, whatever the cuts")
    func incrementalDigest() {
        let message = (0..<1_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let whole = SHA256.digest(message)
        for cut in [1, 3, 63, 64, 65, 127, 500] {
            var hash = SHA256()
            var offset = 0
            while offset < message.count {
                let end = min(message.count, offset + cut)
                hash.update(message[offset..<end])
                offset = end
            }
            #expect(hash.finish() == whole, "pieces of \(cut)")
        }
    }
}
