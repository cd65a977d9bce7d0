import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite
@testable import ManagedStoreHTTP
@testable import ManagedStoreOpenAPI
@testable import ManagedStoreServer

/// `DELETE /v1/changes` (admin): prunes the history now, by token or by age.
@Suite("History pruning over HTTP")
struct HistoryPruningTests {
    static func body(_ response: RawHTTPClient.Response) -> JSONValue? { try? JSONParser().parse(response.body) }

    @Test("before=T deletes the saves before T; the feed from before them is 410, from the oldest kept 200")
    func pruneBeforeToken() throws {
        let server = try ServerHarness { service, _ in service.accessTokens = AuthTests.tokens }
        let admin = AuthTests.bearer("admin-secret")
        for i in 1...5 {
            #expect(try server.request("POST", "/v1/objects/Task", json: #"{"title": "t\#(i)"}"#, headers: admin).status == 201)
        }
        let tokens = try #require(Self.body(try server.request("GET", "/v1/changes?since=0", headers: admin))?["transactions"]?.arrayValue)
            .compactMap { $0["token"]?.stringValue }
        #expect(tokens.count == 5)
        let pruned = try server.request("DELETE", "/v1/changes?before=\(tokens[2])", headers: admin)
        #expect(pruned.status == 200)
        #expect(Self.body(pruned)?["deleted"] == .number("2"))
        #expect(Self.body(pruned)?["oldestToken"]?.stringValue != nil)
        #expect(try server.request("GET", "/v1/changes?since=\(tokens[0])", headers: admin).status == 410)
        let rest = try server.request("GET", "/v1/changes?since=\(tokens[1])", headers: admin)
        #expect(rest.status == 200)
        #expect(Self.body(rest)?["transactions"]?.arrayValue?.count == 3)
        // Again: nothing more to delete.
        #expect(Self.body(try server.request("DELETE", "/v1/changes?before=\(tokens[2])", headers: admin))?["deleted"] == .number("0"))
    }

    @Test("olderThan= a period or an RFC 3339 date")
    func pruneOlderThan() throws {
        let server = try ServerHarness()
        for i in 1...3 { #expect(try server.request("POST", "/v1/objects/Task", json: #"{"title": "t\#(i)"}"#).status == 201) }
        #expect(Self.body(try server.request("DELETE", "/v1/changes?olderThan=1d"))?["deleted"] == .number("0"), "nothing is a day old")
        let future = RFC3339.string(from: Date(timeIntervalSinceNow: 60))
        let all = try server.request("DELETE", "/v1/changes?olderThan=\(future.queryEncoded)")
        #expect(all.status == 200)
        #expect(Self.body(all)?["deleted"] == .number("3"))
        #expect(try server.request("GET", "/v1/changes?since=0").status == 410)
        #expect(try server.taskTitles() == ["t1", "t2", "t3"], "pruning the history leaves the objects")
    }

    @Test("admin only; an unknown or malformed parameter is 400 and prunes nothing")
    func refusals() throws {
        let server = try ServerHarness { service, _ in service.accessTokens = AuthTests.tokens }
        let admin = AuthTests.bearer("admin-secret")
        #expect(try server.request("POST", "/v1/objects/Task", json: #"{"title": "kept"}"#, headers: admin).status == 201)
        #expect(try server.request("DELETE", "/v1/changes?before=99").status == 401)
        for token in ["read-secret", "write-secret", "tasks-secret"] {
            #expect(try server.request("DELETE", "/v1/changes?before=99", headers: AuthTests.bearer(token)).status == 403, "\(token)")
        }
        for query in ["?before=99&olderThan=yesterday", "?since=3", "?before=-1", "?before=x", "?olderThan=yesterday", "?olderThan=0s"] {
            let response = try server.request("DELETE", "/v1/changes\(query)", headers: admin)
            #expect(response.status == 400, "\(query)")
            #expect(AuthTests.code(response) == "bad-request")
        }
        #expect(try server.request("GET", "/v1/changes?since=0", headers: admin).status == 200, "nothing was pruned")
        #expect(try server.request("PUT", "/v1/changes", headers: admin).status == 405)
    }

    @Test("with neither parameter, what --history-retention keeps no longer; with both, what either names")
    func defaultsAndBoth() throws {
        let server = try ServerHarness { service, _ in service.historyRetention = .period(.seconds(86_400)) }
        for i in 1...4 { #expect(try server.request("POST", "/v1/objects/Task", json: #"{"title": "t\#(i)"}"#).status == 201) }
        let none = try server.request("DELETE", "/v1/changes")
        #expect(none.status == 200 && Self.body(none)?["deleted"] == .number("0"), "nothing is older than the day the server keeps: \(none.text)")
        // before=3 names tokens 1 and 2; a day ago names none: both together delete the two.
        let both = try server.request("DELETE", "/v1/changes?before=3&olderThan=1d")
        #expect(both.status == 200 && Self.body(both)?["deleted"] == .number("2"), "\(both.text)")
        let future = RFC3339.string(from: Date(timeIntervalSinceNow: 60))
        let rest = try server.request("DELETE", "/v1/changes?before=1&olderThan=\(future.queryEncoded)")
        #expect(Self.body(rest)?["deleted"] == .number("2"), "the date names the last two: \(rest.text)")

        let forever = try ServerHarness { service, _ in service.historyRetention = .forever }
        #expect(try forever.request("POST", "/v1/objects/Task", json: #"{"title": "kept"}"#).status == 201)
        #expect(Self.body(try forever.request("DELETE", "/v1/changes"))?["deleted"] == .number("0"), "forever keeps everything")
        #expect(try forever.request("GET", "/v1/changes?since=0").status == 200)
    }
}
