import Foundation
import Testing
@testable import ManagedStoreHTTP
@testable import ManagedStoreOpenAPI
@testable import ManagedStoreServer

/// Malformed and hostile requests: each gets its problem (or a timeout), the server keeps
/// serving, and the store is unchanged.
@Suite("Bad input")
struct BadInputTests {
    @Test("malformed JSON, deep nesting, invalid UTF-8, wrong types and content types")
    func malformedBodies() throws {
        let harness = try ServerHarness()
        #expect(try harness.request("POST", "/v1/objects/Task", json: #"{"title": "seed"}"#).status == 201)
        let before = try harness.counts()
        let client = try harness.client()
        let cases: [([UInt8], Int, String)] = [
            (Array(#"{"title": }"#.utf8), 400, "invalid-json"),
            (Array(String(repeating: "[", count: 10_000).utf8), 400, "invalid-json"),
            (Array(#"{"title": ""#.utf8) + [0xC0, 0xAF] + Array(#""}"#.utf8), 400, "invalid-json"),
            (Array(#"{"title": "a"} trailing"#.utf8), 400, "invalid-json"),
            (Array("".utf8), 400, "invalid-json"),
            (Array(#""just a string""#.utf8), 400, "bad-request"),
            (Array(#"{"title": 5}"#.utf8), 422, "validation"),
            (Array(#"{"title": "x", "priority": 99999999999999999999999}"#.utf8), 422, "validation"),
            (Array(#"{"title": "x", "project": "Tag/1"}"#.utf8), 422, "validation"),
            (Array(#"{"title": "x", "project": "Project/999"}"#.utf8), 422, "validation"),
            (Array(#"{"title": "x", "_secret": 1}"#.utf8), 400, "unknown-property"),
        ]
        for (body, status, code) in cases {
            // All on one keep-alive connection: a bad request does not cost the connection.
            let response = try client.request("POST", "/v1/objects/Task", headers: [("Content-Type", "application/json")], body: body)
            #expect(response.status == status && response.json?["code"] as? String == code, "\(String(decoding: body.prefix(40), as: UTF8.self)): \(response.text)")
        }
        let wrongType = try client.request("POST", "/v1/objects/Task", headers: [("Content-Type", "application/xml")], body: Array("<task/>".utf8))
        #expect(wrongType.status == 415)
        let noType = try client.request("POST", "/v1/objects/Task", body: Array("{}".utf8))
        #expect(noType.status == 415)
        #expect(try harness.counts() == before)
        let spelled = try client.request("POST", "/v1/objects/Task", headers: [("content-type", " Application/JSON ; charset=utf-8")],
                                         body: Array(#"{"title": "cased"}"#.utf8))
        #expect(spelled.status == 201, "a media type matches in any case, its parameters and blanks aside: \(spelled.text)")
    }

    @Test("SQL-looking text in every parameter stays text")
    func sqlLookingText() throws {
        let harness = try ServerHarness()
        let nasty = #"x'; DROP TABLE "Task"; --"#
        let created = try harness.request("POST", "/v1/objects/Task", json: #"{"title": "x'; DROP TABLE \"Task\"; --"}"#)
        #expect(created.status == 201)
        let found = try harness.request("GET", "/v1/objects/Task?where=\("title == %@".replacingOccurrences(of: "%@", with: "\"x'; DROP TABLE \\\"Task\\\"; --\"").queryEncoded)")
        #expect((found.json?["objects"] as? [[String: Any]])?.first?["title"] as? String == nasty)
        for (name, value) in [("where", "1; DROP TABLE Task"), ("sort", "title; DROP TABLE Task"), ("fields", "title, \"_pk\""),
                              ("include", "project; --"), ("limit", "1; --"), ("offset", "0 OR 1=1"), ("after", "' OR '1'='1"),
                              ("count", "true; --")] {
            let response = try harness.request("GET", "/v1/objects/Task?\(name)=\(value.queryEncoded)")
            #expect(response.status == 400, "\(name)=\(value): \(response.text)")
        }
        #expect(try harness.request("GET", "/v1/objects/\("Task\"; --".queryEncoded)").status == 404)
        #expect(try harness.counts()["Task"] == 1)
        #expect(try harness.coordinator.checkIntegrity() == [])
    }

    @Test("a client that sends half a body and stops is timed out; the server keeps serving")
    func halfBody() throws {
        let harness = try ServerHarness { _, http in http.connectionTimeout = 1 }
        let stalled = try harness.client()
        try stalled.send(Array("POST /v1/objects/Task HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"title\":".utf8))
        // Meanwhile others are served.
        #expect(try harness.request("POST", "/v1/objects/Task", json: #"{"title": "other"}"#).status == 201)
        let deadline = Date().addingTimeInterval(5)
        var closed = false
        while Date() < deadline && !closed { closed = stalled.isClosedByServer() }
        #expect(closed, "the stalled connection is closed after its timeout")
        #expect(try harness.counts()["Task"] == 1)
    }

    @Test("oversized headers are refused, not crashed on")
    func hugeHeaders() throws {
        let harness = try ServerHarness()
        let client = try harness.client()
        let response = try? client.request("GET", "/v1/healthz", headers: [("X-Padding", String(repeating: "p", count: 200_000))])
        #expect(response == nil || [400, 413, 431].contains(response!.status))
        #expect(try harness.request("GET", "/v1/healthz").status == 200)
    }
}
