import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite
@testable import ManagedStoreHTTP
@testable import ManagedStoreOpenAPI
@testable import ManagedStoreServer

/// Bearer tokens and scopes (the contract's "Auth"): every case a client meets.
@Suite("Auth")
struct AuthTests {
    static let tokens: [AccessToken] = [
        AccessToken(name: "reader", token: "read-secret", scopes: [AccessScope(.read)]),
        AccessToken(name: "writer", token: "write-secret", scopes: [AccessScope(.write)]),
        AccessToken(name: "admin", token: "admin-secret", scopes: [AccessScope(.admin)]),
        AccessToken(name: "tasks", token: "tasks-secret", scopes: [AccessScope(.write, entity: "Task")]),
    ]

    static func server() throws -> ServerHarness {
        try ServerHarness { service, _ in service.accessTokens = tokens }
    }

    static func bearer(_ token: String) -> [(String, String)] { [("Authorization", "Bearer \(token)")] }

    static func code(_ response: RawHTTPClient.Response) -> String? {
        (try? JSONParser().parse(response.body))?["code"]?.stringValue
    }

    @Test("no token, an unknown token, or a malformed header: 401 unauthorized with WWW-Authenticate, nothing written")
    func unauthenticated() throws {
        let server = try Self.server()
        for headers in [[], Self.bearer("wrong"), Self.bearer("read-secre"), [("Authorization", "Basic cmVhZDpzZWNyZXQ=")],
                        [("Authorization", "Bearer")], Self.bearer("read-secret-and-more")] {
            for (method, path) in [("GET", "/v1/objects/Task"), ("GET", "/v1/model"), ("GET", "/v1/changes"), ("GET", "/v1/openapi.json")] {
                let response = try server.request(method, path, headers: headers)
                #expect(response.status == 401, "\(method) \(path) \(headers)")
                #expect(response.header("WWW-Authenticate") == #"Bearer realm="managedstore""#)
                #expect(response.header("Content-Type") == "application/problem+json")
                #expect(Self.code(response) == "unauthorized")
            }
            let write = try server.request("POST", "/v1/objects/Task", json: #"{"title": "sneaky"}"#, headers: headers)
            #expect(write.status == 401)
        }
        #expect(try server.taskTitles().isEmpty)
    }

    @Test("probes need no token")
    func probesAreOpen() throws {
        let server = try Self.server()
        #expect(try server.request("GET", "/v1/healthz").status == 200)
        #expect(try server.request("GET", "/v1/readyz").status == 200)
    }

    @Test("a read token reads and may not write: 403 forbidden with insufficient_scope, nothing written")
    func readTokenWriting() throws {
        let server = try Self.server()
        #expect(try server.request("POST", "/v1/objects/Task", json: #"{"title": "one"}"#, headers: Self.bearer("write-secret")).status == 201)
        #expect(try server.request("GET", "/v1/objects/Task", headers: Self.bearer("read-secret")).status == 200)
        #expect(try server.request("GET", "/v1/objects/Task/1", headers: Self.bearer("read-secret")).status == 200)
        #expect(try server.request("GET", "/v1/objects/Task/aggregate?select=n:count()", headers: Self.bearer("read-secret")).status == 200)
        #expect(try server.request("GET", "/v1/model", headers: Self.bearer("read-secret")).status == 200)
        for (method, path, body) in [("POST", "/v1/objects/Task", #"{"title": "two"}"#), ("PATCH", "/v1/objects/Task/1", #"{"done": true}"#),
                                     ("PUT", "/v1/objects/Task/1", #"{"title": "x"}"#), ("DELETE", "/v1/objects/Task/1", "{}"),
                                     ("PATCH", "/v1/objects/Task?where=done%20==%20NO", #"{"done": true}"#),
                                     ("POST", "/v1/transactions", #"{"operations": [{"op": "insert", "entity": "Task", "values": {"title": "t"}}]}"#)] {
            let response = try server.request(method, path, json: body, headers: Self.bearer("read-secret"))
            #expect(response.status == 403, "\(method) \(path)")
            #expect(response.header("WWW-Authenticate") == #"Bearer error="insufficient_scope""#)
            #expect(Self.code(response) == "forbidden")
            #expect(!String(decoding: response.body, as: UTF8.self).contains("read-secret"), "no token in an answer")
        }
        #expect(try server.taskTitles() == ["one"])
    }

    @Test("a scope narrowed to an entity: that entity only, transactions checked per operation, the change feed filtered")
    func narrowedScope() throws {
        let server = try Self.server()
        let tasks = Self.bearer("tasks-secret")
        #expect(try server.request("POST", "/v1/objects/Task", json: #"{"title": "mine"}"#, headers: tasks).status == 201)
        #expect(try server.request("POST", "/v1/objects/Project", json: #"{"name": "not mine"}"#, headers: tasks).status == 403)
        #expect(try server.request("GET", "/v1/objects/Project", headers: tasks).status == 403)
        #expect(try server.request("POST", "/v1/objects/Project", json: #"{"name": "Apollo"}"#, headers: Self.bearer("writer")).status == 401)
        #expect(try server.request("POST", "/v1/objects/Project", json: #"{"name": "Apollo"}"#, headers: Self.bearer("write-secret")).status == 201)
        let mixed = #"{"operations": [{"op": "insert", "entity": "Task", "values": {"title": "t2"}}, {"op": "update", "object": "Project/1", "values": {"archived": true}}]}"#
        let refused = try server.request("POST", "/v1/transactions", json: mixed, headers: tasks)
        #expect(refused.status == 403, "\(String(decoding: refused.body, as: UTF8.self))")
        #expect(try server.taskTitles() == ["mine"], "nothing of a refused transaction is written")
        let feed = try server.request("GET", "/v1/changes", headers: tasks)
        #expect(feed.status == 200)
        let text = String(decoding: feed.body, as: UTF8.self)
        #expect(text.contains("Task") && !text.contains("Project"), "\(text)")
        #expect(try server.request("GET", "/v1/changes?entity=Project", headers: tasks).status == 403)
        let everything = String(decoding: try server.request("GET", "/v1/changes", headers: Self.bearer("admin-secret")).body, as: UTF8.self)
        #expect(everything.contains("Project"))
    }

    @Test("an NDJSON import without the scope is refused before it is read")
    func ndjsonNeedsWrite() throws {
        let server = try Self.server()
        let body = Array(#"{"title": "a"}"#.utf8) + [10] + Array(#"{"title": "b"}"#.utf8) + [10]
        let refused = try server.client().request("POST", "/v1/objects/Task", headers: [("Content-Type", "application/x-ndjson")] + Self.bearer("read-secret"), body: body)
        #expect(refused.status == 403)
        let anonymous = try server.client().request("POST", "/v1/objects/Task", headers: [("Content-Type", "application/x-ndjson")], body: body)
        #expect(anonymous.status == 401)
        #expect(try server.taskTitles().isEmpty)
        let allowed = try server.client().request("POST", "/v1/objects/Task", headers: [("Content-Type", "application/x-ndjson")] + Self.bearer("write-secret"), body: body)
        #expect(allowed.status == 200)
        #expect(try server.taskTitles() == ["a", "b"])
    }

    @Test("a parent entity's list, aggregate and batch change need the token's access to every sub-entity, whose objects they answer")
    func parentEntityScopes() throws {
        let model = try ManagedObjectModel(jsonData: Array(#"""
            {"name": "World", "entities": [
              {"name": "Region", "abstract": true, "attributes": [{"name": "name", "type": "string"}]},
              {"name": "Country", "parent": "Region", "attributes": [{"name": "capital", "type": "string"}]},
              {"name": "Secret", "parent": "Region", "attributes": [{"name": "code", "type": "string"}]}]}
            """#.utf8))
        let server = try ServerHarness(model: model) { service, _ in
            service.accessTokens = [
                AccessToken(name: "narrow", token: "narrow-secret", scopes: [AccessScope(.write, entity: "Region"), AccessScope(.write, entity: "Country")]),
                AccessToken(name: "wide", token: "wide-secret", scopes: [AccessScope(.write)]),
            ]
        }
        let made = try server.request("POST", "/v1/objects/Secret", json: #"{"name": "s", "code": "x"}"#, headers: Self.bearer("wide-secret"))
        #expect(made.status == 201)
        for (method, path, body) in [("GET", "/v1/objects/Region", nil), ("GET", "/v1/objects/Region/aggregate?select=count()", nil),
                                     ("PATCH", "/v1/objects/Region?where=name%20%3D%3D%20%22s%22", #"{"name": "t"}"#),
                                     ("DELETE", "/v1/objects/Region?where=name%20%3D%3D%20%22s%22", nil)] {
            let refused = try server.request(method, path, json: body, headers: Self.bearer("narrow-secret"))
            #expect(refused.status == 403 && refused.text.contains("may not") && refused.text.contains("Secret"), "\(method) \(path): \(refused.text)")
        }
        #expect(try server.request("GET", "/v1/objects/Country", headers: Self.bearer("narrow-secret")).status == 200)
        let listed = try server.request("GET", "/v1/objects/Region", headers: Self.bearer("wide-secret"))
        #expect(listed.status == 200 && listed.text.contains("Secret/1"))
    }

    @Test("include and an aggregate's select reach other entities' values: they need read access to each of them")
    func includeNeedsTheDestinationsScope() throws {
        let server = try ServerHarness { service, _ in
            service.accessTokens = [
                AccessToken(name: "tasks", token: "tasks-secret", scopes: [AccessScope(.read, entity: "Task")]),
                AccessToken(name: "both", token: "both-secret", scopes: [AccessScope(.read, entity: "Task"), AccessScope(.read, entity: "Project"),
                                                                        AccessScope(.read, entity: "Tag")]),
                AccessToken(name: "admin", token: "admin-secret", scopes: [AccessScope(.admin)]),
            ]
        }
        let project = try server.request("POST", "/v1/objects/Project", json: #"{"name": "Apollo"}"#, headers: Self.bearer("admin-secret"))
        #expect(project.status == 201)
        #expect(try server.request("POST", "/v1/objects/Task", json: #"{"title": "Launch", "project": "Project/1"}"#, headers: Self.bearer("admin-secret")).status == 201)
        for path in ["/v1/objects/Task?include=project", "/v1/objects/Task/1?include=project", "/v1/objects/Task?include=tags,project",
                     "/v1/objects/Task/aggregate?select=project.name,count()", "/v1/objects/Task/aggregate?select=n:project.name"] {
            let refused = try server.request("GET", path, headers: Self.bearer("tasks-secret"))
            #expect(refused.status == 403 && refused.text.contains("Project"), "\(path): \(refused.text)")
            let allowed = try server.request("GET", path, headers: Self.bearer("both-secret"))
            #expect(allowed.status == 200 && allowed.text.contains("Apollo"), "\(path): \(allowed.text)")
        }
        // Without include, a to-one answers the related object's ID only: the task's own scope suffices.
        let plain = try server.request("GET", "/v1/objects/Task/1", headers: Self.bearer("tasks-secret"))
        #expect(plain.status == 200 && plain.json?["project"] as? String == "Project/1")
        #expect(try server.request("GET", "/v1/objects/Task/aggregate?select=priority,count()", headers: Self.bearer("tasks-secret")).status == 200)
    }

    @Test("tokens files: sha256 or plain entries, scopes checked, bad files refused with a reason")
    func tokensFile() throws {
        let digest = SHA256.hex(Array("s3cret".utf8))
        let tokens = try TokensFile.parse(Array(#"{"tokens": [{"name": "ci", "sha256": "\#(digest)", "scopes": ["read", "write:Loan"]}, {"name": "dev", "token": "plain", "scopes": ["admin"]}]}"#.utf8))
        #expect(tokens.map(\.name) == ["ci", "dev"])
        #expect(tokens[0].scopes == [AccessScope(.read), AccessScope(.write, entity: "Loan")])
        let access = AccessControl(tokens: tokens)
        #expect(access.entities(tokens[0], .write) == ["Loan"])
        #expect(access.entities(tokens[0], .read) == nil)
        for bad in [#"{}"#, #"{"tokens": [{"name": "x", "scopes": ["read"]}]}"#, #"{"tokens": [{"name": "x", "token": "t", "scopes": ["root"]}]}"#,
                    #"{"tokens": [{"name": "x", "sha256": "abc", "scopes": ["read"]}]}"#, #"{"tokens": [{"name": "x", "token": "t", "scopes": []}]}"#,
                    #"{"tokens": [{"name": "x", "token": "a", "scopes": ["read"]}, {"name": "x", "token": "b", "scopes": ["read"]}]}"#, "not json"] {
            #expect(throws: TokensFileError.self, "\(bad)") { try TokensFile.parse(Array(bad.utf8)) }
        }
        let (token, entry) = TokensFile.newToken(name: "new", scopes: [AccessScope(.read, entity: "Task")])
        let made = try TokensFile.parse(Array(#"{"tokens": [\#(entry)]}"#.utf8))
        #expect(made[0].digest == SHA256.digest(Array(token.utf8)))
        #expect(!entry.contains(token), "the entry keeps only the digest")
    }

    @Test("SHA-256 gives the test vectors of FIPS 180-4's examples")
    func sha256Vectors() {
        #expect(SHA256.hex([UInt8]()) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256.hex(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.hex(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8))
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(SHA256.hex(Array(("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
                                  + "ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu").utf8))
                == "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1")
        #expect(SHA256.hex([UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test("SHA-256 of the long message (1 GiB: a 64-byte pattern 16,777,216 times), streamed in 1 MiB pieces")
    func sha256LongMessage() {
        let pattern = Array("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno".utf8)
        let piece = Array((0..<16_384).map { _ in pattern }.joined())
        var hash = SHA256()
        for _ in 0..<1_024 { hash.update(piece) }
        #expect(hash.finish().map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
                == "50e72a0e26442fe2552dc3938ac58658228c0cbfb1d2ca872ae435266fcd055e")
    }

    @Test("SHA-256 taken in random pieces gives the one-call digest, and a copy taken midway goes on by itself")
    func sha256PiecesAndCopies() {
        var generator = SystemRandomNumberGenerator()
        for length in Array(0...200) + [255, 256, 257, 1_000, 4_096, 65_537] {
            let message = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            var hash = SHA256()
            var offset = 0
            var copy: (SHA256, at: Int)?
            while offset < length {
                let end = min(length, offset + Int.random(in: 1...150, using: &generator))
                hash.update(message[offset..<end])
                offset = end
                if copy == nil && offset >= length / 2 { copy = (hash, offset) }
            }
            #expect(hash.finish() == SHA256.digest(message), "\(length) bytes")
            if let (copied, at) = copy {
                var midway = copied
                midway.update(Array("other".utf8))
                #expect(midway.finish() == SHA256.digest(message[0..<at] + Array("other".utf8)), "a copy at \(at) of \(length)")
            }
        }
    }

    @Test("Digests compare equal only when every byte and the length agree")
    func constantTimeComparison() {
        let digest = SHA256.digest(Array("token".utf8))
        #expect(SHA256.equalInConstantTime(digest, digest))
        for index in [0, 15, 31] {
            var changed = digest
            changed[index] ^= 1
            #expect(!SHA256.equalInConstantTime(digest, changed), "byte \(index)")
        }
        #expect(!SHA256.equalInConstantTime(digest, Array(digest.prefix(31))))
        #expect(SHA256.equalInConstantTime([], []))
    }

    @Test("SHA-256 pads right at the block's edges (lengths around 56 and 64 bytes; digests from Python's hashlib)")
    func sha256BlockEdges() {
        let expected = [
            55: "16fa57a0a3423a715d594516339f36189d6b5f93754a9714fef202616a9fabfe",
            56: "c37b44e5f1b18554b36966f4f8e08bfbf3164c4b6c10374d12d89850892073c5",
            57: "12b234922502022f755ab8550a3d4e202ad39c81d961a4f59ec39d5fd83d15a7",
            63: "bbba992d2c85af960fb2987a1fd05e0aa82a3db3c740dd8982a9e273b75e36a3",
            64: "66bd4633ed6f71c4ecfa4763bf7ba1c8ec7612de9aa6c0578a7b675207c71e0b",
            65: "9f7dc47107b750a1f3d35db5d9547f24ef40da5b731b9540d4f43710a154f6c9",
            119: "a3ed307b730fa77c07531300c6e4a282330011d4d4caf6bb7b63ae05950f4b66",
            120: "8e3b15d9fea7472655aa069620b7f8c2e55ee1499f763200a7515fe826e99d20",
        ]
        for (length, digest) in expected {
            let message = (0..<length).map { UInt8(($0 * 7 + 1) % 256) }
            #expect(SHA256.hex(message) == digest, "\(length) bytes")
        }
    }
}
