import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite
@testable import ManagedStoreHTTP
@testable import ManagedStoreOpenAPI
@testable import ManagedStoreServer

/// `serve` without tokens on an address other than loopback, and `managedstore token new`.
/// (No test listens beyond loopback: 192.0.2.1 is a documentation address this machine does
/// not have, so the server makes its tokens and then fails to bind.)
@Suite("Serve: tokens")
struct ServeTokensTests {
    @Test("no tokens on a non-loopback address: tokens.json made beside the store with one admin token shown once, reused next time")
    func tokensMadeBesideStore() throws {
        let folder = TemporaryFolder()
        let store = folder.url.appendingPathComponent("data/store.sqlite").path
        let first = try ServerProcess.run(["serve", "--demo", "--store", store, "--host", "192.0.2.1", "--port", "0"])
        let tokensPath = folder.url.appendingPathComponent("data/tokens.json").path
        let printed = try #require(first.stderr.split(separator: "\n").last { $0.hasPrefix("  ms_") }).trimmingCharacters(in: .whitespaces)
        let tokens = try TokensFile.load(path: tokensPath)
        #expect(tokens.count == 1 && tokens[0].scopes == [AccessScope(.admin)])
        #expect(tokens[0].digest == SHA256.digest(Array(printed.utf8)))
        let file = try String(contentsOfFile: tokensPath, encoding: .utf8)
        #expect(!file.contains(printed), "only the digest is kept")
        let mode = try FileManager.default.attributesOfItem(atPath: tokensPath)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let second = try ServerProcess.run(["serve", "--demo", "--store", store, "--host", "192.0.2.1", "--port", "0"])
        #expect(!second.stderr.contains("ms_"), "the token is shown once: \(second.stderr)")
        #expect(try String(contentsOfFile: tokensPath, encoding: .utf8) == file)
    }

    @Test("an in-memory or postgres:// store on a non-loopback address needs --tokens-file or --insecure-open: exit 2",
          arguments: [":memory:", "postgres://app:s3cret@127.0.0.1:1/app"])
    func inMemoryNeedsTokens(store: String) throws {
        let run = try ServerProcess.run(["serve", "--demo", "--store", store, "--host", "192.0.2.1", "--port", "0"])
        #expect(run.status == 2)
        #expect(run.stderr.contains("--tokens-file or --insecure-open"), "\(run.stderr)")
        #expect(!run.stderr.contains("s3cret"))
    }

    @Test("a bad tokens file stops serve with the reason")
    func badTokensFile() throws {
        let folder = TemporaryFolder()
        let path = folder.url.appendingPathComponent("tokens.json").path
        try #"{"tokens": [{"name": "x", "token": "t", "scopes": ["root"]}]}"#.write(toFile: path, atomically: true, encoding: .utf8)
        let run = try ServerProcess.run(["serve", "--demo", "--store", ":memory:", "--port", "0"], environment: ["MANAGEDSTORE_TOKENS_FILE": path])
        #expect(run.status == 64)
        #expect(run.stderr.contains("invalid tokens file"), "\(run.stderr)")
    }

    @Test("a server started with a tokens file from the environment requires its tokens")
    func tokensFileFromEnvironment() throws {
        let folder = TemporaryFolder()
        let path = folder.url.appendingPathComponent("tokens.json").path
        let made = try ServerProcess.run(["token", "new", "--scopes", "read,write:Task", "--name", "ci"])
        #expect(made.status == 0, "\(made.stderr)")
        let lines = made.stdout.split(separator: "\n")
        let token = try #require(lines.first { $0.hasPrefix("token: ") }).dropFirst("token: ".count)
        let entry = try #require(lines.first { $0.hasPrefix("tokens-file entry: ") }).dropFirst("tokens-file entry: ".count)
        try #"{"tokens": [\#(entry)]}"#.write(toFile: path, atomically: true, encoding: .utf8)
        let server = try ServerProcess(environment: ["MANAGEDSTORE_TOKENS_FILE": path])
        #expect(try RawHTTPClient(port: server.port).request("GET", "/v1/objects/Task").status == 401)
        let created = try RawHTTPClient(port: server.port).json("POST", "/v1/objects/Task", #"{"title": "ci"}"#, headers: [("Authorization", "Bearer \(token)")])
        #expect(created.status == 201)
        let project = try RawHTTPClient(port: server.port).json("POST", "/v1/objects/Project", #"{"name": "no"}"#, headers: [("Authorization", "Bearer \(token)")])
        #expect(project.status == 403)
        #expect(!server.stderr.contains(String(token)), "no token in the log")
    }
}
