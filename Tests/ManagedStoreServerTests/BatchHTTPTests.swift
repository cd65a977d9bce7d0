import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite
@testable import ManagedStoreHTTP
@testable import ManagedStoreOpenAPI
@testable import ManagedStoreServer

/// An NDJSON upload sent with chunked transfer encoding, piece by piece, on one connection.
private final class ChunkedUpload {
    let client: RawHTTPClient

    init(port: UInt16, path: String, headers: [(String, String)] = []) throws {
        client = try RawHTTPClient(port: port, timeout: 20)
        var head = "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        try client.send(Array((head + "\r\n").utf8))
    }

    /// Sends `text` in HTTP chunks of at most `piece` bytes.
    func send(_ text: String, piece: Int = 4096) throws {
        let bytes = Array(text.utf8)
        for start in stride(from: 0, to: bytes.count, by: piece) {
            let part = bytes[start..<min(start + piece, bytes.count)]
            try client.send(Array(String(part.count, radix: 16).utf8) + [13, 10] + part + [13, 10])
        }
    }

    func finish() throws -> RawHTTPClient.Response {
        try client.send(Array("0\r\n\r\n".utf8))
        return try client.readResponse()
    }
}

@Suite("Batch insert, update and delete over HTTP")
struct BatchHTTPTests {
    private func lines(_ range: Range<Int>, bad: [Int: String] = [:]) -> String {
        range.map { bad[$0] ?? #"{"title": "t\#($0)", "priority": \#($0 % 6)}"# }.joined(separator: "\n") + "\n"
    }


    @Test("a JSON array is one transaction: 200 with the IDs in order, or an error naming the item and nothing stored")
    func jsonArray() throws {
        let harness = try ServerHarness()
        let created = try harness.request("POST", "/v1/objects/Task", json: #"[{"title": "a"}, {"title": "b", "priority": 2}, {"title": "c"}]"#)
        #expect(created.status == 200)
        #expect(created.json?["count"] as? Int == 3)
        let ids = try #require(created.json?["ids"] as? [String])
        #expect(ids.count == 3)
        #expect(try harness.request("GET", "/v1/objects/\(ids[1])").json?["title"] as? String == "b")
        let changes = try harness.request("GET", "/v1/changes?since=0")
        #expect((changes.json?["transactions"] as? [Any])?.count == 1, "one transaction in the history")

        let invalid = try harness.request("POST", "/v1/objects/Task", json: #"[{"title": "d"}, {"title": "e"}, {"title": "f", "priority": 9}]"#)
        #expect(invalid.status == 422)
        let errors = invalid.json?["errors"] as? [[String: Any]]
        #expect(errors?.map { $0["object"] as? String } == ["item 2"])
        let unknown = try harness.request("POST", "/v1/objects/Task", json: #"[{"title": "d"}, {"colour": "red"}]"#)
        #expect(unknown.status == 400 && unknown.json?["code"] as? String == "unknown-property" && unknown.json?["item"] as? Int == 1)
        #expect(try harness.taskTitles() == ["a", "b", "c"])
    }

    @Test("an NDJSON stream is stored whole: blank lines and CRLF skipped, IDs in line order")
    func ndjsonStream() throws {
        let harness = try ServerHarness()
        let upload = try ChunkedUpload(port: harness.port, path: "/v1/objects/Task")
        try upload.send("\r\n" + lines(0..<1200).replacingOccurrences(of: "\n", with: "\r\n") + "\n\n", piece: 777)
        try upload.send(lines(1200..<2500).dropLast().description)  // the last line has no newline
        let answer = try upload.finish()
        #expect(answer.status == 200, "\(answer.text.prefix(300))")
        #expect(answer.json?["count"] as? Int == 2500)
        let ids = try #require(answer.json?["ids"] as? [String])
        #expect(ids.count == 2500)
        for index in [0, 999, 1000, 2499] {
            #expect(try harness.request("GET", "/v1/objects/\(ids[index])").json?["title"] as? String == "t\(index)")
        }
        #expect(try harness.taskTitles().count == 2500)
    }

    @Test("a bad line stops the import: its chunk is not stored, the chunks before it are, and the answer says which")
    func ndjsonBadLine() throws {
        let harness = try ServerHarness()
        // Line numbers are 1-based: item 1502 is on line 1503, in the second chunk (lines 1001-2000).
        let broken = try ChunkedUpload(port: harness.port, path: "/v1/objects/Task")
        try broken.send(lines(0..<3000, bad: [1502: #"{"title": "x""#]))
        let notJSON = try broken.finish()
        #expect(notJSON.status == 400 && notJSON.json?["code"] as? String == "invalid-json")
        #expect(notJSON.json?["line"] as? Int == 1503 && notJSON.json?["committed"] as? Int == 1000)
        #expect(try harness.taskTitles() == Set((0..<1000).map { "t\($0)" }))

        // A value the model refuses is found when its chunk is saved: 422, with its line.
        let invalid = try ChunkedUpload(port: harness.port, path: "/v1/objects/Task")
        try invalid.send(lines(5000..<8000, bad: [7199: #"{"title": "bad", "priority": 9}"#]))
        let refused = try invalid.finish()
        #expect(refused.status == 422 && refused.json?["line"] as? Int == 2200 && refused.json?["committed"] as? Int == 2000)
        #expect(((refused.json?["errors"] as? [[String: Any]])?.first?["object"] as? String) == "line 2200")
        #expect(try harness.taskTitles().count == 3000)
    }

    @Test("?atomic=true stores the whole stream or nothing")
    func ndjsonAtomic() throws {
        let harness = try ServerHarness()
        let failing = try ChunkedUpload(port: harness.port, path: "/v1/objects/Task?atomic=true")
        try failing.send(lines(0..<2500, bad: [2400: #"{"title": "bad", "priority": 9}"#]))
        let refused = try failing.finish()
        #expect(refused.status == 422 && refused.json?["committed"] as? Int == 0 && refused.json?["line"] as? Int == 2401)
        #expect(try harness.taskTitles().isEmpty)
        let whole = try ChunkedUpload(port: harness.port, path: "/v1/objects/Task?atomic=true")
        try whole.send(lines(0..<2500))
        #expect(try whole.finish().json?["count"] as? Int == 2500)
        let changes = try harness.request("GET", "/v1/changes?since=0&limit=1000")
        #expect((changes.json?["transactions"] as? [Any])?.count == 1)
    }

    /// Found by schemathesis: `atomic=` (empty) was taken as true, against the document's boolean.
    @Test("atomic takes true or false, nothing else: an empty value or 1 is 400 and writes nothing", arguments: ["", "1", "0", "yes", "TRUE"])
    func atomicIsBoolean(_ value: String) throws {
        let harness = try ServerHarness()
        let array = try harness.request("POST", "/v1/objects/Task?atomic=\(value)", json: #"[{"title": "a"}]"#)
        #expect(array.status == 400, "atomic=\(value): \(array.status)")
        #expect(array.json?["code"] as? String == "bad-request")
        let stream = try harness.client().request("POST", "/v1/objects/Task?atomic=\(value)", headers: [("Content-Type", "application/x-ndjson")],
                                                  body: Array(#"{"title": "b"}"#.utf8))
        #expect(stream.status == 400, "NDJSON atomic=\(value): \(stream.status)")
        #expect(try harness.taskTitles().isEmpty)
    }

    @Test("chunks are committed while the body still arrives, and reads are answered meanwhile")
    func ndjsonInterleaves() throws {
        let harness = try ServerHarness()
        let upload = try ChunkedUpload(port: harness.port, path: "/v1/objects/Task")
        try upload.send(lines(0..<2100))
        // Two full chunks sent, the body not ended: they are visible to readers already.
        let deadline = Date().addingTimeInterval(10)
        var seen = 0
        while seen < 2000 && Date() < deadline {
            seen = try harness.request("GET", "/v1/objects/Task?limit=1&count=true").json?["count"] as? Int ?? 0
            if seen < 2000 { Thread.sleep(forTimeInterval: 0.02) }
        }
        #expect(seen == 2000)
        try upload.send(lines(2100..<3000))
        #expect(try upload.finish().json?["count"] as? Int == 3000)
    }

    @Test("a server stopped in the middle of an import closes it; the chunks committed before stay, whole")
    func stopDuringImport() throws {
        let harness = try ServerHarness(inMemory: false)
        let upload = try ChunkedUpload(port: harness.port, path: "/v1/objects/Task")
        try upload.send(lines(0..<5500))
        harness.server.stop(timeout: 1)
        let stored = try harness.taskTitles().count
        #expect(stored % 1000 == 0 && stored <= 5000, "whole chunks only")
        #expect(try harness.coordinator.checkIntegrity() == [])
    }

    @Test("a line longer than the body limit is 413 with its line; the import is not held to the limit as a whole")
    func ndjsonLongLine() throws {
        let harness = try ServerHarness { _, http in http.maxBodyBytes = 4096 }
        let big = try ChunkedUpload(port: harness.port, path: "/v1/objects/Task")
        try big.send(lines(0..<1500))  // about 60 KB in all: far over 4096
        #expect(try big.finish().json?["count"] as? Int == 1500)
        let long = try ChunkedUpload(port: harness.port, path: "/v1/objects/Task")
        try long.send(lines(0..<10) + #"{"title": ""# + String(repeating: "x", count: 5000) + "\"}\n")
        let refused = try long.finish()
        #expect(refused.status == 413 && refused.json?["line"] as? Int == 11 && refused.json?["committed"] as? Int == 0)
        #expect(try harness.taskTitles().count == 1500)
    }

    @Test("a batch update sets values on every match, in the history; an invalid value changes nothing")
    func batchUpdate() throws {
        let harness = try ServerHarness()
        let seeded = try harness.request("POST", "/v1/objects/Task", json: "[" + (0..<10).map { #"{"title": "t\#($0)", "priority": \#($0 % 6)}"# }.joined(separator: ",") + "]")
        #expect(seeded.status == 200)
        let before = try harness.request("GET", "/v1/changes?since=0").json?["next"] as? String ?? "0"
        let updated = try harness.request("PATCH", "/v1/objects/Task?where=\("priority >= 3".queryEncoded)", json: #"{"done": true, "estimate": 2.5}"#)
        #expect(updated.status == 200 && updated.json?["count"] as? Int == 4)
        let done = try harness.request("GET", "/v1/objects/Task?where=\("done == true".queryEncoded)&count=true")
        #expect(done.json?["count"] as? Int == 4)
        let history = try harness.request("GET", "/v1/changes?since=\(before)")
        let changes = (history.json?["transactions"] as? [[String: Any]])?.flatMap { $0["changes"] as? [[String: Any]] ?? [] }
        #expect(changes?.count == 4)

        let invalid = try harness.request("PATCH", "/v1/objects/Task?where=TRUEPREDICATE", json: #"{"priority": 9}"#)
        #expect(invalid.status == 422 && (invalid.json?["errors"] as? [Any])?.count == 10)
        let wrongKind = try harness.request("PATCH", "/v1/objects/Task?where=TRUEPREDICATE", json: #"{"priority": "high"}"#)
        #expect(wrongKind.status == 422 && ((wrongKind.json?["errors"] as? [[String: Any]])?.first?["object"] as? String) == "Task/*")
        let unknownKey = try harness.request("PATCH", "/v1/objects/Task?where=\("colour == 1".queryEncoded)", json: #"{"done": false}"#)
        #expect(unknownKey.status == 400 && unknownKey.json?["code"] as? String == "unknown-property")
        let stillDone = try harness.request("GET", "/v1/objects/Task?where=\("done == true AND priority < 6".queryEncoded)&count=true")
        #expect(stillDone.json?["count"] as? Int == 4)
    }

    @Test("a batch delete applies cascades; one deny rule reached deletes nothing")
    func batchDelete() throws {
        let harness = try ServerHarness()
        for name in ["A", "B"] {
            #expect(try harness.request("POST", "/v1/objects/Project", json: #"{"name": "\#(name)"}"#).status == 201)
        }
        let tasks = #"[{"title": "a1", "project": "Project/1"}, {"title": "a2", "project": "Project/1"}, {"title": "b1", "project": "Project/2"}]"#
        #expect(try harness.request("POST", "/v1/objects/Task", json: tasks).status == 200)
        #expect(try harness.request("POST", "/v1/objects/Tag", json: #"[{"label": "used"}, {"label": "free"}]"#).status == 200)
        #expect(try harness.request("PATCH", "/v1/objects/Task/3", json: #"{"tags": ["Tag/1"]}"#).status == 200)

        let denied = try harness.request("DELETE", "/v1/objects/Tag?where=TRUEPREDICATE")
        #expect(denied.status == 422 && ((denied.json?["errors"] as? [[String: Any]])?.first?["code"] as? String) == "delete-denied")
        #expect(try harness.counts()["Tag"] == 2)

        let deleted = try harness.request("DELETE", "/v1/objects/Project?where=\(#"name == "A""#.queryEncoded)")
        #expect(deleted.status == 200 && deleted.json?["count"] as? Int == 1)
        #expect(try harness.taskTitles() == ["b1"], "the cascade took a1 and a2")
        #expect(try harness.request("DELETE", "/v1/objects/Tag?where=\(#"label == "free""#.queryEncoded)").json?["count"] as? Int == 1)
        #expect(try harness.coordinator.checkIntegrity() == [])
    }
}
