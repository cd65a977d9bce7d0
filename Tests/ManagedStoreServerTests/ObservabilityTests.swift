import Foundation
import Logging
import ManagedStoreTestSupport
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite
@testable import ManagedStoreHTTP
@testable import ManagedStoreOpenAPI
@testable import ManagedStoreServer

/// The contract's "Logs, request IDs, metrics": a Request-Id on every answer, one log line per
/// request with the contract's fields, and /v1/metrics after a known workload.
@Suite("Logs, request IDs and metrics")
struct ObservabilityTests {
    /// Log lines as the server writes them.
    typealias Lines = LockedList<String>

    static func server(format: LineLogHandler.Format = .text, tokens: [AccessToken] = [], inMemory: Bool = true) throws -> (ServerHarness, Lines) {
        let lines = Lines()
        let harness = try ServerHarness(inMemory: inMemory) { service, _ in
            service.accessTokens = tokens
            service.logger = Logger(label: "test") { _ in LineLogHandler(format: format, write: { lines.add($0) }) }
            service.requestLog = RequestLog(format: format, sink: Self.sink(into: lines))
        }
        return (harness, lines)
    }

    /// A log sink that keeps each line it is given (batches are whole lines).
    static func sink(into lines: Lines) -> LogSink {
        LogSink { batch in
            for line in String(decoding: batch, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).dropLast() {
                lines.add(line + "\n")
            }
        }
    }

    /// The fields of one logfmt line (values unquoted).
    static func logfmt(_ line: String) -> [String: String] {
        var fields: [String: String] = [:]
        var rest = Substring(line.trimmingCharacters(in: .newlines))
        while !rest.isEmpty {
            guard let equals = rest.firstIndex(of: "=") else { break }
            let key = String(rest[..<equals])
            rest = rest[rest.index(after: equals)...]
            var value = ""
            if rest.first == "\"" {
                rest = rest.dropFirst()
                while let c = rest.first, c != "\"" {
                    if c == "\\", let next = rest.dropFirst().first { value.append(next == "n" ? "\n" : next); rest = rest.dropFirst(2) } else { value.append(c); rest = rest.dropFirst() }
                }
                rest = rest.dropFirst()
            } else {
                let end = rest.firstIndex(of: " ") ?? rest.endIndex
                value = String(rest[..<end])
                rest = rest[end...]
            }
            fields[key] = value
            rest = rest.drop { $0 == " " }
        }
        return fields
    }

    /// The request lines logged so far, once `count` of them are in (a line is written when
    /// its request has ended, which can be a moment after the client read the answer).
    static func requestLines(_ lines: Lines, count: Int) throws -> [[String: String]] {
        try waitUntil("\(count) request lines are logged") { lines.all.filter { logfmt($0)["msg"] == "request" }.count >= count }
        return lines.all.map(logfmt).filter { $0["msg"] == "request" }
    }

    // MARK: Request IDs

    @Test("every answer carries Request-Id: the client's own when usable, a new one otherwise")
    func requestIDs() throws {
        let (server, _) = try Self.server(tokens: [AccessToken(name: "ci", token: "secret", scopes: [AccessScope(.read)])])
        let own = try server.request("GET", "/v1/healthz", headers: [("Request-Id", "abc.DEF_123-x")])
        #expect(own.header("Request-Id") == "abc.DEF_123-x")
        let legacy = try server.request("GET", "/v1/healthz", headers: [("X-Request-Id", "from-proxy")])
        #expect(legacy.header("Request-Id") == "from-proxy")
        var seen: Set<String> = []
        for bad in ["", "has space", "quote\"d", String(repeating: "a", count: 65), "ünïcode", "semi;colon"] {
            let response = try server.request("GET", "/v1/healthz", headers: [("Request-Id", bad)])
            let id = try #require(response.header("Request-Id"), "\(bad)")
            #expect(id != bad && RequestID.isUsable(id), "\(bad)")
            seen.insert(id)
        }
        #expect(seen.count == 6, "each new ID is new")
        #expect(RequestID.isUsable(String(repeating: "a", count: 64)))
        // Answers of every kind: 401, 404, 405, 413 refused before the body, 201, a problem.
        let client = try server.client()
        for (method, path, headers, body) in [("GET", "/v1/objects/Task", [("Request-Id", "r401")], nil as [UInt8]?),
                                              ("GET", "/nowhere", [("Request-Id", "r404"), ("Authorization", "Bearer secret")], nil),
                                              ("PUT", "/v1/model", [("Request-Id", "r405"), ("Authorization", "Bearer secret")], nil)] {
            let response = try client.request(method, path, headers: headers, body: body)
            #expect(response.status >= 400)
            #expect(response.header("Request-Id") == headers[0].1)
        }
        let tooLarge = try server.request("POST", "/v1/objects/Task", headers: [("Request-Id", "r413"), ("Content-Length", "999999999"), ("Content-Type", "application/json")])
        #expect(tooLarge.status == 413)
        #expect(tooLarge.header("Request-Id") == "r413")
    }

    // MARK: Logs

    @Test("one logfmt line per request: request_id, method, route template, status, bytes, duration_ms, token name (never its value)")
    func requestLinesText() throws {
        let tokens = [AccessToken(name: "ci-bot", token: "s3cret-value", scopes: [AccessScope(.write)])]
        let (server, lines) = try Self.server(tokens: tokens)
        let auth = [("Authorization", "Bearer s3cret-value")]
        let created = try server.request("POST", "/v1/objects/Task", json: #"{"title": "log me"}"#, headers: auth + [("Request-Id", "create-1")])
        #expect(created.status == 201)
        let read = try server.request("GET", "/v1/objects/Task/1", headers: auth + [("Request-Id", "read-1")])
        let missing = try server.request("GET", "/v1/objects/Task/777", headers: auth + [("Request-Id", "missing-1")])
        let refused = try server.request("GET", "/v1/objects/Task?where=title%20%3D%3D%20%22x%22", headers: [("Request-Id", "anonymous-1")])
        #expect(refused.status == 401)

        let logged = try Self.requestLines(lines, count: 4)
        func line(_ id: String) throws -> [String: String] { try #require(logged.first { $0["request_id"] == id }, "a line for \(id)") }
        let create = try line("create-1")
        #expect(create["method"] == "POST")
        #expect(create["route"] == "/v1/objects/{entity}")
        #expect(create["status"] == "201")
        #expect(create["bytes"] == String(created.body.count))
        #expect(create["token"] == "ci-bot")
        let duration = try #require(create["duration_ms"])
        #expect((Double(duration) ?? -1) >= 0)
        #expect(create["level"] == "info" && create["time"] != nil)
        let get = try line("read-1")
        #expect(get["route"] == "/v1/objects/{entity}/{pk}" && get["status"] == "200" && get["bytes"] == String(read.body.count))
        #expect(try line("missing-1")["status"] == "404")
        #expect(try line("missing-1")["bytes"] == String(missing.body.count))
        let anonymous = try line("anonymous-1")
        #expect(anonymous["status"] == "401" && anonymous["token"] == "-")
        #expect(anonymous["route"] == "/v1/objects/{entity}", "the route is the template, never the path or its query")
        for text in lines.all {
            #expect(!text.contains("s3cret-value"), "a token's value is never logged")
            #expect(!text.contains("/777") && !text.contains("title"), "keys and predicates stay out of the line")
            #expect(text.hasSuffix("\n") && text.dropLast().contains("\n") == false, "one line per entry")
        }
    }

    @Test("--log-format json: one JSON object a line, numbers as numbers")
    func requestLinesJSON() throws {
        let (server, lines) = try Self.server(format: .json)
        let response = try server.request("GET", "/v1/objects/Project", headers: [("Request-Id", "json-1")])
        try waitUntil("the request is logged") { lines.all.contains { $0.contains("json-1") } }
        let text = try #require(lines.all.first { $0.contains("json-1") })
        let object = try JSONParser().parse(Array(text.utf8))
        #expect(object["msg"]?.stringValue == "request")
        #expect(object["request_id"]?.stringValue == "json-1")
        #expect(object["route"]?.stringValue == "/v1/objects/{entity}")
        #expect(object["status"] == .number("200"))
        #expect(object["bytes"] == .number(String(response.body.count)))
        guard case .number = object["duration_ms"] else { Issue.record("duration_ms is not a number: \(text)"); return }
    }

    // MARK: Metrics

    @Test("/v1/metrics is admin only: 401 without a token, 403 for read or write, 200 text format for admin")
    func metricsNeedAdmin() throws {
        let (server, _) = try Self.server(tokens: AuthTests.tokens)
        #expect(try server.request("GET", "/v1/metrics").status == 401)
        #expect(try server.request("GET", "/v1/metrics", headers: AuthTests.bearer("read-secret")).status == 403)
        #expect(try server.request("GET", "/v1/metrics", headers: AuthTests.bearer("write-secret")).status == 403)
        #expect(try server.request("GET", "/v1/metrics", headers: AuthTests.bearer("tasks-secret")).status == 403)
        let admin = try server.request("GET", "/v1/metrics", headers: AuthTests.bearer("admin-secret"))
        #expect(admin.status == 200)
        #expect(admin.header("Content-Type") == "text/plain; version=0.0.4; charset=utf-8")
        #expect(try server.request("POST", "/v1/metrics", headers: AuthTests.bearer("admin-secret")).status == 405)
    }

    /// The value of the sample `name{labels}` in a metrics text.
    static func sample(_ text: String, _ series: String) -> Double? {
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), line[..<space] == series else { continue }
            return Double(line[line.index(after: space)...])
        }
        return nil
    }

    @Test("metrics after a known workload: requests by route and status, latencies, commits and group sizes, conflicts, store sizes, history")
    func metricsAfterWorkload() throws {
        let (server, lines) = try Self.server(inMemory: false)
        for i in 1...5 {
            #expect(try server.request("POST", "/v1/objects/Task", json: #"{"title": "t\#(i)"}"#).status == 201)
        }
        for key in 1...3 { #expect(try server.request("GET", "/v1/objects/Task/\(key)").status == 200) }
        #expect(try server.request("GET", "/v1/objects/Task/918273645").status == 404)
        #expect(try server.request("PATCH", "/v1/objects/Task/1", json: #"{"done": true}"#, headers: [("If-Match", "\"1\"")]).status == 200)
        let stale = try server.request("PATCH", "/v1/objects/Task/1", json: #"{"done": false}"#, headers: [("If-Match", "\"1\"")])
        #expect(stale.status == 409)
        let resolved = try server.request("PATCH", "/v1/objects/Task/1?merge=store-trump", json: #"{"priority": 2}"#, headers: [("If-Match", "\"1\"")])
        #expect(resolved.status == 200)
        // 12 requests before the scrape; each is counted once it has ended.
        _ = try Self.requestLines(lines, count: 12)
        try waitUntil("the metrics count all 12 requests") { server.server.front.metrics.snapshot().requests.values.reduce(0, +) >= 12 }
        let response = try server.request("GET", "/v1/metrics")
        let text = String(decoding: response.body, as: UTF8.self)
        func value(_ series: String) -> Double? { Self.sample(text, series) }

        #expect(value(#"managedstore_http_requests_total{route="/v1/objects/{entity}",method="POST",status="201"}"#) == 5)
        #expect(value(#"managedstore_http_requests_total{route="/v1/objects/{entity}/{pk}",method="GET",status="200"}"#) == 3)
        #expect(value(#"managedstore_http_requests_total{route="/v1/objects/{entity}/{pk}",method="GET",status="404"}"#) == 1)
        #expect(value(#"managedstore_http_requests_total{route="/v1/objects/{entity}/{pk}",method="PATCH",status="200"}"#) == 2)
        #expect(value(#"managedstore_http_requests_total{route="/v1/objects/{entity}/{pk}",method="PATCH",status="409"}"#) == 1)
        #expect(value(#"managedstore_http_request_duration_seconds_count{route="/v1/objects/{entity}/{pk}"}"#) == 7)
        #expect(value(#"managedstore_http_request_duration_seconds_bucket{route="/v1/objects/{entity}/{pk}",le="+Inf"}"#) == 7)
        #expect(value(#"managedstore_http_request_duration_seconds_count{route="/v1/objects/{entity}"}"#) == 5)
        // Seven writes: five inserts and two patches that saved (the 409 wrote nothing).
        let commits = try #require(value("managedstore_commits_total"))
        #expect(commits >= 7)
        #expect(value("managedstore_commit_group_size_sum") == 8, "every write that reached the queue, the refused one too")
        #expect(try #require(value("managedstore_commit_group_size_count")) >= 1)
        #expect(value(#"managedstore_conflicts_total{policy="error",resolved="false"}"#) == 1)
        #expect(value(#"managedstore_conflicts_total{policy="store-trump",resolved="true"}"#) == 1)
        #expect(value("managedstore_write_queue_depth") == 0)
        #expect(value("managedstore_read_pool_wait_seconds_count").map { $0 >= 3 } == true, "each read borrowed a reader")
        #expect(try #require(value("managedstore_store_bytes")) > 0)
        #expect(value("managedstore_wal_bytes") != nil)
        #expect(value("managedstore_history_transactions") == 7, "one recorded save per write that wrote")
        #expect(try #require(value("process_resident_memory_bytes")) > 1_000_000)
        let start = try #require(value("process_start_time_seconds"))
        #expect(abs(start - Date().timeIntervalSince1970) < 3600 * 24, "a plausible start: \(start)")
        for family in ["managedstore_http_requests_total", "managedstore_http_request_duration_seconds", "managedstore_write_queue_depth",
                       "managedstore_commit_group_size", "managedstore_commits_total", "managedstore_conflicts_total",
                       "managedstore_read_pool_wait_seconds", "managedstore_store_bytes", "managedstore_wal_bytes",
                       "managedstore_history_transactions", "managedstore_connections_open", "managedstore_connections_limit",
                       "managedstore_connections_refused_total", "managedstore_connections_closed_total",
                       "process_resident_memory_bytes", "process_start_time_seconds"] {
            #expect(text.contains("# TYPE \(family) "), "\(family) is declared")
        }
        #expect(!text.contains("918273645") && !text.contains("Task/"), "labels hold templates, never keys")
    }

    @Test("The store's own figures in /v1/healthz and /v1/metrics: an SQLite store's file and WAL; on PostgreSQL its tables, and no WAL")
    func storeFigures() throws {
        let (server, _) = try Self.server()  // in memory: a PostgreSQL schema on PostgreSQL runs
        let metrics = try server.request("GET", "/v1/metrics").text
        let health = try #require(try server.request("GET", "/v1/healthz").json)
        #expect(metrics.contains("# TYPE managedstore_store_bytes gauge"))
        if PostgresTestDatabase.isActive {
            #expect(!metrics.contains("managedstore_wal_bytes"), "PostgreSQL's WAL is the database server's")
            #expect(health["walBytes"] == nil)
        } else {
            #expect(metrics.contains("managedstore_wal_bytes 0"))
            #expect(health["walBytes"] as? Int == 0)
        }
    }

    // MARK: Start-up

    @Test("while the store loads: healthz 200, readyz and data 503 with Retry-After; then ready")
    func readinessWhileLoading() throws {
        let (server, gate) = try ServerHarness.startedWhileLoading()
        defer { server.stop(timeout: 5) }
        let client = { try RawHTTPClient(port: server.port) }
        #expect(try client().request("GET", "/v1/healthz").status == 200)
        for (method, path) in [("GET", "/v1/readyz"), ("GET", "/v1/objects/Task"), ("POST", "/v1/objects/Task"), ("GET", "/v1/model")] {
            let response = try client().request(method, path)
            #expect(response.status == 503, "\(method) \(path)")
            #expect(response.header("Retry-After") != nil)
            #expect(response.header("Content-Type") == "application/problem+json")
        }
        gate.signal()
        #expect(server.waitUntilLoaded(timeout: 10))
        #expect(try client().request("GET", "/v1/readyz").status == 200)
        #expect(try client().json("POST", "/v1/objects/Task", #"{"title": "after"}"#).status == 201)
    }

    @Test("a store that cannot be opened: readyz stays 503 and says why; the failure is reported")
    func loadFailure() throws {
        var http = HTTPServer.Configuration()
        http.port = 0
        let reported = Lines()
        let server = ManagedStoreServer(opening: { throw StoreError.notAManagedStore(path: "/tmp/x.sqlite") }, service: ServiceConfiguration(), http: http)
        try server.start(failed: { reported.add("\($0)") })
        defer { server.stop(timeout: 5) }
        #expect(server.waitUntilLoaded(timeout: 10))
        try waitUntil("the failure is reported") { !reported.all.isEmpty }
        let ready = try RawHTTPClient(port: server.port).request("GET", "/v1/readyz")
        #expect(ready.status == 503)
        #expect(String(decoding: ready.body, as: UTF8.self).contains("could not be loaded"))
        #expect(try RawHTTPClient(port: server.port).request("GET", "/v1/healthz").status == 200)
    }
}
