import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite
@testable import ManagedStoreHTTP
@testable import ManagedStoreOpenAPI
@testable import ManagedStoreServer

/// `managedstore import` and `export` through a running server (`--url`, `--token`): the
/// server's model, checks, tokens and write queue; the executable run as a user runs it.
@Suite("import and export through a server")
struct RemoteTransferTests {
    static func server() throws -> ServerHarness {
        try ServerHarness { service, _ in service.accessTokens = AuthTests.tokens }
    }

    static func file(_ lines: [String]) throws -> (TemporaryFolder, String) {
        let folder = TemporaryFolder()
        let path = folder.url.appendingPathComponent("tasks.ndjson").path
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: path))
        return (folder, path)
    }

    @Test("import streams the file as one NDJSON POST; export pages through every match, once each")
    func roundTrip() throws {
        let server = try Self.server()
        let url = "http://127.0.0.1:\(server.port)"
        let titles = (1...2_500).map { "task \($0)" }
        let (folder, path) = try Self.file(titles.map { #"{"title": "\#($0)", "priority": \#(Int($0.dropFirst(5))! % 6)}"# })
        defer { withExtendedLifetime(folder) {} }
        let imported = try ServerProcess.run(["import", path, "--entity", "Task", "--url", url, "--token", "write-secret"])
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(try server.taskTitles() == Set(titles))

        // More than two pages of 1,000: the cursor is followed to the end.
        let all = try ServerProcess.run(["export", "--entity", "Task"], environment: ["MANAGEDSTORE_URL": url, "MANAGEDSTORE_TOKEN": "read-secret"])
        #expect(all.status == 0, "\(all.stderr)")
        let lines = all.stdout.split(separator: "\n")
        #expect(lines.count == 2_500)
        let exported = try lines.map { try JSONParser().parse(Array($0.utf8)) }
        #expect(Set(exported.compactMap { $0["title"]?.stringValue }) == Set(titles))
        #expect(Set(exported.compactMap { $0["_id"]?.stringValue }).count == 2_500, "no object twice")

        let matching = try ServerProcess.run(["export", "--entity", "Task", "--where", "priority == 5", "--url", url, "--token", "read-secret"])
        #expect(matching.status == 0)
        let fives = try matching.stdout.split(separator: "\n").map { try JSONParser().parse(Array($0.utf8)) }
        #expect(fives.count == titles.filter { Int($0.dropFirst(5))! % 6 == 5 }.count)
        #expect(fives.allSatisfy { $0["priority"] == .number("5") })
    }

    @Test("the server's refusals end the command with its words: no token, a read token writing, a bad line, an unknown entity")
    func refusals() throws {
        let server = try Self.server()
        let url = "http://127.0.0.1:\(server.port)"
        let (folder, path) = try Self.file([#"{"title": "one"}"#, #"{"title": "two", "nope": 1}"#])
        defer { withExtendedLifetime(folder) {} }

        let anonymous = try ServerProcess.run(["import", path, "--entity", "Task", "--url", url])
        #expect(anonymous.status == 1)
        #expect(anonymous.stderr.contains("401 unauthorized"))
        let reader = try ServerProcess.run(["import", path, "--entity", "Task", "--url", url, "--token", "read-secret"])
        #expect(reader.status == 1)
        #expect(reader.stderr.contains("403 forbidden"))
        let badLine = try ServerProcess.run(["import", path, "--entity", "Task", "--url", url, "--token", "write-secret"])
        #expect(badLine.status == 1)
        #expect(badLine.stderr.contains("line 2") && badLine.stderr.contains("nope"), "\(badLine.stderr)")
        #expect(try server.taskTitles().isEmpty, "a refused import stores nothing")
        let unknown = try ServerProcess.run(["export", "--entity", "Nope", "--url", url, "--token", "read-secret"])
        #expect(unknown.status == 1)
        #expect(unknown.stderr.contains("unknown-entity"))
        let nobody = try ServerProcess.run(["export", "--entity", "Task", "--url", "http://127.0.0.1:\(TransactionCrashTests.freePort())"])
        #expect(nobody.status == 1)
        #expect(nobody.stderr.contains("no answer"))
        // A store file and a server at once, or a model for a server: usage errors.
        #expect(try ServerProcess.run(["export", "--entity", "Task", "--url", url, "--demo", "--store", "/tmp/x.sqlite"]).status == 64)
        #expect(try ServerProcess.run(["export", "--entity", "Task", "--url", url, "--demo"]).status == 64)
    }
}
