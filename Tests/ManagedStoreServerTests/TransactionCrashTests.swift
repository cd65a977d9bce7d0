import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Transactions found by the model-based walk (`MANAGEDSTORE_MODEL_CRASHERS=1`) that stop the
/// server process: each is sent to a `managedstore serve` of its own, out of process, so a
/// crash fails this test instead of ending the test run. The contract: "No request, however
/// malformed, closes the process"; a relationship value naming an object deleted earlier in
/// the transaction, or an object of another entity, is 422 `invalid-relationship`.
@Suite("Transactions that crash the server (out of process)", .serialized)
struct TransactionCrashTests {
    struct Case: CustomTestStringConvertible, Sendable {
        let name: String
        /// Requests before the transaction (each must succeed).
        let setup: [(String, String)]
        let operations: String
        let statuses: Set<Int>
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "a to-many value names a ref deleted earlier", setup: [],
             operations: #"[{"op": "insert", "entity": "Tag", "ref": "g", "values": {"label": "x"}}, {"op": "delete", "object": "g"}, {"op": "insert", "entity": "Task", "ref": "t", "values": {"title": "a", "tags": ["g"]}}]"#,
             statuses: [422]),
        Case(name: "a to-one value names a ref deleted earlier", setup: [],
             operations: #"[{"op": "insert", "entity": "Project", "ref": "p", "values": {"name": "x"}}, {"op": "delete", "object": "p"}, {"op": "insert", "entity": "Task", "ref": "t", "values": {"title": "a", "project": "p"}}]"#,
             statuses: [422]),
        Case(name: "an update of a ref deleted earlier", setup: [],
             operations: #"[{"op": "insert", "entity": "Tag", "ref": "g", "values": {"label": "x"}}, {"op": "delete", "object": "g"}, {"op": "update", "object": "g", "values": {"label": "y"}}]"#,
             statuses: [404, 422]),
        Case(name: "an update of a saved object deleted earlier", setup: [("/v1/objects/Task", #"{"title": "a"}"#)],
             operations: #"[{"op": "delete", "object": "Task/1"}, {"op": "update", "object": "Task/1", "values": {"title": "b"}}]"#,
             statuses: [404, 422]),
        Case(name: "a relationship change of a saved object deleted earlier",
             setup: [("/v1/objects/Project", #"{"name": "p"}"#), ("/v1/objects/Task", #"{"title": "a"}"#)],
             operations: #"[{"op": "delete", "object": "Task/1"}, {"op": "update", "object": "Task/1", "values": {"project": "Project/1"}}]"#,
             statuses: [404, 422]),
        Case(name: "a to-many value names a ref of the wrong entity (Tag.tasks = [a Tag])", setup: [],
             operations: #"[{"op": "insert", "entity": "Tag", "ref": "a", "values": {"label": "x"}}, {"op": "insert", "entity": "Tag", "ref": "b", "values": {"label": "y", "tasks": ["a"]}}]"#,
             statuses: [422]),
        Case(name: "a to-one value names a ref of the wrong entity (Task.project = a Tag)", setup: [],
             operations: #"[{"op": "insert", "entity": "Tag", "ref": "a", "values": {"label": "x"}}, {"op": "insert", "entity": "Task", "ref": "t", "values": {"title": "y", "project": "a"}}]"#,
             statuses: [422]),
    ]

    /// The `managedstore` executable beside the test bundle (built by `swift build --build-tests`).
    static var executable: URL? {
        let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("managedstore")
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return [beside, root.appendingPathComponent(".build/debug/managedstore")].first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }

    /// A port nothing listens on now.
    static func freePort() -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return UInt16(bigEndian: address.sin_port)
    }

    @Test("the server answers and stays up", .enabled(if: executable != nil, "needs the managedstore executable"), arguments: cases)
    func staysUp(_ test: Case) throws {
        let port = Self.freePort()
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("managedstore-crash-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: log) }
        let process = Process()
        process.executableURL = Self.executable
        process.arguments = ["serve", "--demo", "--store", ":memory:", "--port", String(port)]
        let output = try FileHandle(forWritingTo: log)
        process.standardOutput = output
        process.standardError = output
        try process.run()
        defer {
            if process.isRunning { process.terminate() }
            process.waitUntilExit()
        }
        func request(_ method: String, _ path: String, _ body: String? = nil) throws -> RawHTTPClient.Response {
            let client = try RawHTTPClient(port: port, timeout: 10)
            return try body.map { try client.json(method, path, $0) } ?? client.request(method, path)
        }
        var up = false
        for _ in 0..<100 where !up {
            up = (try? request("GET", "/v1/readyz").status) == 200
            if !up { usleep(50_000) }
        }
        try #require(up, "the server did not start")
        for (path, body) in test.setup { try #require(try request("POST", path, body).status == 201) }
        let answer = try? request("POST", "/v1/transactions", #"{"operations": \#(test.operations)}"#)
        usleep(200_000)
        let crash = (try? String(contentsOf: log, encoding: .utf8))?.split(separator: "\n").first { $0.contains("Precondition failed") || $0.contains("Fatal error") }
        #expect(process.isRunning, "the process stopped: \(crash.map(String.init) ?? "no message")\n  POST /v1/transactions {\"operations\": \(test.operations)}")
        #expect(answer.map { test.statuses.contains($0.status) } == true,
                "expected \(test.statuses.sorted()), got \(answer.map { "\($0.status) \($0.text)" } ?? "no answer")")
        if process.isRunning { #expect((try? request("GET", "/v1/healthz").status) == 200) }
    }
}
