import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite
@testable import ManagedStoreHTTP
@testable import ManagedStoreOpenAPI
@testable import ManagedStoreServer

/// The line per request, written in batches (`RequestLog`, `LogSink`): under load from many
/// threads every request has exactly one whole line, lines come out without being asked for,
/// and the last requests before a shutdown are in the log when the process has exited.
@Suite("The request log", .sqliteWhateverTheRun)
struct RequestLogTests {
    /// 16 threads, each with its own connection, send `perThread` GETs with their own request IDs.
    static func load(_ server: ServerHarness, perThread: Int) throws -> Set<String> {
        let sent = LockedList<String>(), failures = LockedList<String>()
        let done = DispatchGroup()
        let port = server.port
        for thread in 0..<16 {
            done.enter()
            Thread {
                defer { done.leave() }
                do {
                    let client = try RawHTTPClient(port: port)
                    for n in 0..<perThread {
                        let id = "t\(thread)-r\(n)"
                        let path = n % 3 == 0 ? "/v1/objects/Task/1" : (n % 3 == 1 ? "/v1/objects/Task?limit=2" : "/v1/objects/Nope")
                        _ = try client.request("GET", path, headers: [("Request-Id", id)])
                        sent.add(id)
                    }
                } catch { failures.add("thread \(thread): \(error)") }
            }.start()
        }
        try #require(done.wait(timeout: .now() + 60) == .success, "the threads did not finish")
        try #require(failures.all.isEmpty, "\(failures.all)")
        return Set(sent.all)
    }

    @Test("16 threads: exactly one whole logfmt line per request, written without a flush", arguments: [LineLogHandler.Format.text, .json])
    func oneWholeLinePerRequest(format: LineLogHandler.Format) throws {
        let lines = ObservabilityTests.Lines()
        let server = try ServerHarness { service, _ in service.requestLog = RequestLog(format: format, sink: ObservabilityTests.sink(into: lines)) }
        #expect(try server.request("POST", "/v1/objects/Task", json: #"{"title": "one"}"#, headers: [("Request-Id", "setup")]).status == 201)
        let sent = try Self.load(server, perThread: 40)
        // No flush: the sink's writer puts the lines out on its own.
        try waitUntil("every request's line is written", seconds: 5) { lines.all.count >= sent.count + 1 }
        Thread.sleep(forTimeInterval: 0.05)  // and no more come

        var seen: [String: Int] = [:]
        for line in lines.all {
            #expect(line.hasSuffix("\n") && !line.dropLast().contains("\n"), "one line: \(line)")
            let fields: [String: String]
            if format == .json {
                guard case .object(let members)? = try? JSONParser().parse(Array(line.utf8)) else {
                    Issue.record("not one JSON object: \(line)")
                    continue
                }
                fields = Dictionary(members.map { ($0.0, $0.1.stringValue ?? $0.1.serialized()) }, uniquingKeysWith: { a, _ in a })
            } else {
                fields = ObservabilityTests.logfmt(line)
            }
            #expect(Set(fields.keys) == ["time", "level", "msg", "request_id", "method", "route", "status", "bytes", "duration_ms", "token"],
                    "every field, whole: \(line)")
            #expect(fields["msg"] == "request" && fields["method"] == "GET" || fields["request_id"] == "setup")
            let time = fields["time"].flatMap(RFC3339.date(from:))
            #expect(time.map { abs($0.timeIntervalSinceNow) < 120 } == true && fields["time"]?.count == 27, "an RFC 3339 time with microseconds: \(line)")
            if let id = fields["request_id"] { seen[id, default: 0] += 1 }
        }
        #expect(seen.filter { $0.value != 1 }.isEmpty, "each request once: \(seen.filter { $0.value != 1 }.prefix(5))")
        #expect(Set(seen.keys) == sent.union(["setup"]), "missing \(sent.subtracting(seen.keys).prefix(5))")
        // The fields' order is the contract's, in both forms.
        let sample = try #require(lines.all.first { $0.contains("t3-r1") })
        let order = ["time", "level", "msg", "request_id", "method", "route", "status", "bytes", "duration_ms", "token"]
        let positions = order.map { key in sample.range(of: format == .json ? "\"\(key)\":" : "\(key)=")?.lowerBound }
        #expect(!positions.contains(nil) && positions.map { $0! } == positions.map { $0! }.sorted(), "\(sample)")
    }

    @Test("values that need quoting are quoted and escaped, in logfmt and JSON")
    func escaping() throws {
        let tokens = [AccessToken(name: "ci \"bot\"=1\\", token: "s3cret", scopes: [AccessScope(.read)])]
        for format in [LineLogHandler.Format.text, .json] {
            let lines = ObservabilityTests.Lines()
            let server = try ServerHarness { service, _ in
                service.accessTokens = tokens
                service.requestLog = RequestLog(format: format, sink: ObservabilityTests.sink(into: lines))
            }
            _ = try server.request("GET", "/v1/objects/Task", headers: [("Authorization", "Bearer s3cret"), ("Request-Id", "q-1")])
            try waitUntil("the line is written") { !lines.all.isEmpty }
            let line = try #require(lines.all.first)
            if format == .json {
                let object = try JSONParser().parse(Array(line.utf8))
                #expect(object["token"]?.stringValue == "ci \"bot\"=1\\", "\(line)")
                #expect(object["status"] == .number("200"))
            } else {
                #expect(ObservabilityTests.logfmt(line)["token"] == "ci \"bot\"=1\\", "\(line)")
            }
        }
    }

    @Test("the lines of the last requests before SIGTERM are in the log when the process has exited")
    func linesOutBeforeExit() throws {
        let server = try ServerProcess()
        let client = try RawHTTPClient(port: server.port)
        let ids = (0..<200).map { "last-\($0)" }
        for id in ids {
            #expect(try client.request("GET", "/v1/objects/Task/\(ids.firstIndex(of: id)! % 5 + 1)", headers: [("Request-Id", id)]).status == 404)
        }
        server.signal(SIGTERM)
        #expect(server.waitForExit(seconds: 20) == 0)
        let logged = Set(server.stderr.split(separator: "\n").map { ObservabilityTests.logfmt(String($0)) }.compactMap { $0["request_id"] })
        #expect(Set(ids).subtracting(logged).isEmpty, "missing after exit: \(Set(ids).subtracting(logged).sorted().prefix(5))")
    }

    @Test("--log-requests off: no request lines, the other lines still come")
    func off() throws {
        let server = try ServerProcess(arguments: ["--log-requests", "off"])
        #expect(try RawHTTPClient(port: server.port).request("GET", "/v1/objects/Task/1", headers: [("Request-Id", "quiet-1")]).status == 404)
        server.signal(SIGTERM)
        #expect(server.waitForExit(seconds: 20) == 0)
        #expect(!server.stderr.contains("quiet-1") && !server.stderr.contains("msg=request "), "\(server.stderr)")
        #expect(server.stderr.contains("msg=stopped"), "the server's own lines stay: \(server.stderr)")
        let environment = try ServerProcess.run(["serve", "--demo", "--store", ":memory:", "--print-config"], environment: ["MANAGEDSTORE_LOG_REQUESTS": "off"])
        #expect(EnvironmentConfigurationTests.setting("log-requests", in: environment.stdout)?.value == "off")
        let wrong = try ServerProcess.run(["serve", "--demo", "--store", ":memory:", "--log-requests", "maybe"])
        #expect(wrong.status == 64 && wrong.stderr.contains("--log-requests must be on or off"), "\(wrong.stderr)")
    }
}
