import Foundation
import Testing

/// Settings from `MANAGEDSTORE_*` environment variables, the command line winning, and
/// `serve --print-config` saying where each came from.
@Suite("Configuration from the environment")
struct EnvironmentConfigurationTests {
    /// The line of `--print-config` output for `name`, split into value and origin.
    static func setting(_ name: String, in output: String) -> (value: String, origin: String)? {
        for line in output.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
            if fields.first == name, fields.count >= 3 { return (fields[1], fields[2...].joined(separator: " ")) }
        }
        return nil
    }

    @Test("print-config shows each setting's value and origin; a flag on the command line beats the environment")
    func printConfig() throws {
        let run = try ServerProcess.run(["serve", "--demo", "--store", ":memory:", "--port", "9100", "--print-config"],
                                        environment: ["MANAGEDSTORE_PORT": "9000", "MANAGEDSTORE_MAX_BODY_BYTES": "1000",
                                                      "MANAGEDSTORE_REQUIRE_IF_MATCH": "true", "MANAGEDSTORE_NO_HISTORY": "0"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(Self.setting("port", in: run.stdout)?.value == "9100")
        #expect(Self.setting("port", in: run.stdout)?.origin == "command line")
        #expect(Self.setting("max-body-bytes", in: run.stdout)?.value == "1000")
        #expect(Self.setting("max-body-bytes", in: run.stdout)?.origin == "environment MANAGEDSTORE_MAX_BODY_BYTES")
        #expect(Self.setting("require-if-match", in: run.stdout)?.value == "true")
        #expect(Self.setting("no-history", in: run.stdout)?.value == "false")
        #expect(Self.setting("host", in: run.stdout)?.value == "127.0.0.1")
        #expect(Self.setting("host", in: run.stdout)?.origin == "default")
        #expect(Self.setting("store", in: run.stdout)?.value == ":memory:")
    }

    @Test("print-config prints every value whole, however long, in aligned columns")
    func printConfigWholeValues() throws {
        // 200 characters each: the old table cut every value to its first 28.
        let directory = "/srv/managedstore/volumes/" + String(repeating: "a", count: 160)
        let store = directory + "/store-of-the-app.sqlite"
        let tokens = directory + "/" + String(repeating: "t", count: 200 - directory.count - 6) + ".json"
        #expect(tokens.count == 200)
        let run = try ServerProcess.run(["serve", "--demo", "--store", store, "--print-config"],
                                        environment: ["MANAGEDSTORE_TOKENS_FILE": tokens])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(Self.setting("store", in: run.stdout)?.value == store, "\(run.stdout)")
        #expect(Self.setting("tokens-file", in: run.stdout)?.value == tokens)
        #expect(Self.setting("tokens-file", in: run.stdout)?.origin == "environment MANAGEDSTORE_TOKENS_FILE")
        #expect(Self.setting("port", in: run.stdout)?.origin == "default", "a long value leaves the other lines readable")
        // Origins start in one column, whatever the values' lengths.
        let lines = run.stdout.split(separator: "\n").map(String.init)
        let columns = Set(lines.compactMap { line in line.range(of: "  default").map { line.distance(from: line.startIndex, to: $0.lowerBound) } })
        #expect(columns.count == 1, "\(run.stdout)")
    }

    @Test("a postgres:// store's password is masked in print-config, from the command line or MANAGEDSTORE_STORE")
    func printConfigMasksThePassword() throws {
        let given = try ServerProcess.run(["serve", "--demo", "--store", "postgres://app:s3cret@db.example:5432/app?sslmode=require", "--print-config"])
        #expect(given.status == 0, "\(given.stderr)")
        #expect(Self.setting("store", in: given.stdout)?.value == "postgres://app:***@db.example:5432/app?sslmode=require")
        #expect(!given.stdout.contains("s3cret"))
        let fromEnvironment = try ServerProcess.run(["serve", "--demo", "--print-config"],
                                                    environment: ["MANAGEDSTORE_STORE": "postgresql://db.example/app?password=s3cret"])
        #expect(fromEnvironment.status == 0, "\(fromEnvironment.stderr)")
        #expect(Self.setting("store", in: fromEnvironment.stdout)?.value == "postgresql://db.example/app?password=***")
        #expect(Self.setting("store", in: fromEnvironment.stdout)?.origin == "environment MANAGEDSTORE_STORE")
        #expect(!fromEnvironment.stdout.contains("s3cret"))
    }

    @Test("a value from the environment is validated like one from the command line")
    func badValues() throws {
        let port = try ServerProcess.run(["serve", "--demo", "--store", ":memory:", "--print-config"], environment: ["MANAGEDSTORE_PORT": "eighty"])
        #expect(port.status == 64)
        #expect(port.stderr.contains("port"), "\(port.stderr)")
        let flag = try ServerProcess.run(["serve", "--demo", "--store", ":memory:", "--print-config"], environment: ["MANAGEDSTORE_REQUIRE_IF_MATCH": "maybe"])
        #expect(flag.status == 64)
        #expect(flag.stderr.contains("MANAGEDSTORE_REQUIRE_IF_MATCH must be true or false"), "\(flag.stderr)")
        let policy = try ServerProcess.run(["serve", "--demo", "--store", ":memory:", "--print-config"], environment: ["MANAGEDSTORE_MERGE_POLICY": "whatever"])
        #expect(policy.status == 64)
        #expect(policy.stderr.contains("--merge-policy"), "\(policy.stderr)")
    }

    @Test("the server runs with the settings the environment gives")
    func serverUsesEnvironment() throws {
        let server = try ServerProcess(environment: ["MANAGEDSTORE_REQUIRE_IF_MATCH": "1", "MANAGEDSTORE_MAX_BODY_BYTES": "64"])
        let client = try RawHTTPClient(port: server.port)
        let created = try client.json("POST", "/v1/objects/Task", #"{"title": "from the environment"}"#)
        #expect(created.status == 201)
        let large = try RawHTTPClient(port: server.port).json("POST", "/v1/objects/Task", #"{"title": "\#(String(repeating: "x", count: 100))"}"#)
        #expect(large.status == 413)
        let location = try #require(created.header("Location"))
        let unconditional = try RawHTTPClient(port: server.port).json("PATCH", location, #"{"done": true}"#)
        #expect(unconditional.status == 428, "require-if-match came from the environment")
    }
}
