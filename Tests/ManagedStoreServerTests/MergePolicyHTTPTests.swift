import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite
import ManagedStoreTestSupport
@testable import ManagedStoreHTTP
@testable import ManagedStoreOpenAPI
@testable import ManagedStoreServer

extension MergePolicyTable.Value {
    /// The value as a request body writes it: P2 is `Project/2`, G3 is `Tag/3`.
    var json: String {
        switch self {
        case .text(let s): return "\"\(s)\""
        case .number(let n): return "\(n)"
        case .flag(let b): return "\(b)"
        case .project(let p): return p.map { "\"\(MergePolicyHTTPTests.projectID($0))\"" } ?? "null"
        case .tags(let t): return "[" + t.map { "\"\(MergePolicyHTTPTests.tagID($0))\"" }.joined(separator: ", ") + "]"
        }
    }
}

/// The five merge policies over HTTP, held to the API contract ("Writes, versions and merge
/// policies"): the library's table (`MergePolicyTable`, which `MergePolicyTests` runs through contexts) run through `PATCH`/`DELETE` with
/// `If-Match` and through `POST /v1/transactions` with an operation's `version`, the policy
/// named by `?merge=`, by `Merge-Policy` or by the server's default; the 409 body; uniqueness
/// on insert; and a seeded race of two writers against a plain reference model of the policies.
///
/// Every scenario starts on a fresh in-memory server: projects P1-P3 (`Project/1`-`3`), tags
/// G1-G3 (`Tag/1`-`3`) and `Task/1` at the base values, version 1. The store's change C is a
/// PATCH without a base version (version 2); the request's change R is based on version 1.
@Suite("Merge policies over HTTP")
struct MergePolicyHTTPTests {
    // MARK: Values

    // The table is the library tests' too (Tests/Support/MergePolicyTable.swift).
    typealias Value = MergePolicyTable.Value
    typealias Values = [String: Value]

    static func projectID(_ name: String) -> String { "Project/\(name.dropFirst())" }
    static func tagID(_ label: String) -> String { "Tag/\(label.dropFirst())" }

    /// A JSON object of `values`, keys in a fixed order.
    static func json(_ values: Values) -> String {
        "{" + values.sorted { $0.key < $1.key }.map { "\"\($0.key)\": \($0.value.json)" }.joined(separator: ", ") + "}"
    }

    static func describe(_ values: Values?) -> String {
        guard let values else { return "deleted" }
        return "{" + values.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ") + "}"
    }

    /// A task as an answer or a GET shows it: its version and the table's five properties.
    /// nil when the JSON is not a task of this store (`_id` other than `id`, `estimate` or
    /// `due` set, a value of the wrong kind, a project or tag that is not one of the seeded).
    static func task(_ json: JSONValue?, id: String) -> (version: Int64, values: Values)? {
        guard let json, json["_id"]?.stringValue == id, let version = json["_version"]?.int64Value,
              let title = json["title"]?.stringValue, let priority = json["priority"]?.int64Value,
              let done = json["done"]?.boolValue, json["estimate"]?.isNull == true, json["due"]?.isNull == true,
              let projectJSON = json["project"], let tagsJSON = json["tags"]?.arrayValue else { return nil }
        func name(_ id: String, _ entity: String, _ prefix: String) -> String? {
            guard id.hasPrefix(entity + "/"), let pk = Int(id.dropFirst(entity.count + 1)), (1...3).contains(pk) else { return nil }
            return "\(prefix)\(pk)"
        }
        var project: String?
        if !projectJSON.isNull {
            guard let text = projectJSON.stringValue, let named = name(text, "Project", "P") else { return nil }
            project = named
        }
        var tags: [String] = []
        for tag in tagsJSON {
            guard let text = tag.stringValue, let label = name(text, "Tag", "G") else { return nil }
            tags.append(label)
        }
        return (version, ["title": .text(title), "priority": .number(priority), "done": .flag(done), "project": .project(project), "tags": .tags(tags)])
    }

    static func parse(_ response: RawHTTPClient.Response) -> JSONValue? { try? JSONParser().parse(response.body) }

    /// `Merge-Conflicts` as a set of property names (nil when the header is absent).
    static func mergeConflicts(_ response: RawHTTPClient.Response) -> Set<String>? {
        response.header("Merge-Conflicts").map { Set($0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }) }
    }

    // MARK: Reading the store

    /// What the store holds, read over HTTP: every task (by ID) and every way in which a
    /// project's or a tag's `tasks` disagrees with the tasks' `project` and `tags` (inverses;
    /// to-many arrays in primary-key order).
    struct Stored {
        var tasks: [String: (version: Int64, values: Values)] = [:]
        var problems: [String] = []
    }

    static func stored(_ client: RawHTTPClient) throws -> Stored {
        var result = Stored()
        func objects(_ entity: String) throws -> [JSONValue] {
            let response = try client.request("GET", "/v1/objects/\(entity)?limit=1000")
            guard response.status == 200, let list = parse(response)?["objects"]?.arrayValue else {
                result.problems.append("GET /v1/objects/\(entity): \(response.status) \(response.text)")
                return []
            }
            return list
        }
        for json in try objects("Task") {
            let id = json["_id"]?.stringValue ?? "?"
            guard let task = task(json, id: id) else {
                result.problems.append("not a task of this store: \(String(describing: json))")
                continue
            }
            result.tasks[id] = task
        }
        // Task IDs in primary-key order.
        let ids = result.tasks.keys.sorted { Int($0.dropFirst(5)) ?? 0 < Int($1.dropFirst(5)) ?? 0 }
        for (entity, prefix, property) in [("Project", "P", "project"), ("Tag", "G", "tags")] {
            for json in try objects(entity) {
                let id = json["_id"]?.stringValue ?? "?"
                let name = prefix + id.drop { $0 != "/" }.dropFirst()
                let holds = json["tasks"]?.arrayValue?.compactMap(\.stringValue)
                let expected = ids.filter { id in
                    switch result.tasks[id]?.values[property] {
                    case .project(let p)?: return p == name
                    case .tags(let t)?: return t.contains(name)
                    default: return false
                    }
                }
                if holds != expected {
                    result.problems.append("\(id) (\(name)).tasks is \(holds.map { "\($0)" } ?? "missing"), but the tasks say \(expected)")
                }
            }
        }
        return result
    }

    // MARK: The table

    typealias Case = MergePolicyTable.Case
    static let base = MergePolicyTable.base
    static func with(_ changes: Values) -> Values? { MergePolicyTable.with(changes) }
    static let cases = MergePolicyTable.cases

    static let policies = MergePolicy.builtIn.map(\.name)

    /// How the request names its policy and which endpoint it goes to.
    struct Delivery: CustomTestStringConvertible, Sendable {
        enum Naming: String, Sendable, CaseIterable {
            case query = "?merge="
            case header = "the Merge-Policy header"
            case serverDefault = "the server's default"
        }
        let naming: Naming
        let transaction: Bool
        var testDescription: String { "\(transaction ? "POST /v1/transactions" : "PATCH/DELETE") with \(naming.rawValue)" }

        static let all: [Delivery] = Naming.allCases.flatMap { naming in [false, true].map { Delivery(naming: naming, transaction: $0) } }
    }

    /// A server on the task tracker with the scenario's objects at version 1; `defaultPolicy`
    /// is its `--merge-policy`; `file`: a store file (separate reader connections), else in memory.
    static func seeded(defaultPolicy: MergePolicy = .error, file: Bool = false) throws -> (ServerHarness, RawHTTPClient) {
        let harness = try ServerHarness(inMemory: !file) { service, _ in service.mergePolicy = defaultPolicy }
        let client = try harness.client()
        let response = try client.json("POST", "/v1/transactions", #"""
            {"operations": [
              {"op": "insert", "entity": "Project", "ref": "p1", "values": {"name": "P1"}},
              {"op": "insert", "entity": "Project", "ref": "p2", "values": {"name": "P2"}},
              {"op": "insert", "entity": "Project", "ref": "p3", "values": {"name": "P3"}},
              {"op": "insert", "entity": "Tag", "ref": "g1", "values": {"label": "G1"}},
              {"op": "insert", "entity": "Tag", "ref": "g2", "values": {"label": "G2"}},
              {"op": "insert", "entity": "Tag", "ref": "g3", "values": {"label": "G3"}},
              {"op": "insert", "entity": "Task", "ref": "t", "values": {"title": "t0", "priority": 1, "done": false, "project": "p1", "tags": ["g1"]}}]}
            """#)
        let ids = parse(response)?["ids"]
        guard response.status == 200, ids?["p1"]?.stringValue == "Project/1", ids?["p3"]?.stringValue == "Project/3",
              ids?["g1"]?.stringValue == "Tag/1", ids?["g3"]?.stringValue == "Tag/3", ids?["t"]?.stringValue == "Task/1" else {
            throw HarnessError("seeding failed: \(response.status) \(response.text)")
        }
        return (harness, client)
    }

    struct HarnessError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// The store's change C: a PATCH with no base version, which makes version 2.
    static func applyStoreChange(_ values: Values, _ client: RawHTTPClient) throws {
        let response = try client.json("PATCH", "/v1/objects/Task/1", json(values))
        guard response.status == 200, task(parse(response), id: "Task/1")?.version == 2 else {
            throw HarnessError("the store's change failed: \(response.status) \(response.text)")
        }
    }

    /// Sends R (based on version 1) under `policy` as `delivery` says.
    static func sendRequestChange(_ scenario: Case, policy: String, delivery: Delivery, _ client: RawHTTPClient) throws -> RawHTTPClient.Response {
        let query = delivery.naming == .query ? "?merge=\(policy)" : ""
        let named: [(String, String)] = delivery.naming == .header ? [("Merge-Policy", policy)] : []
        if delivery.transaction {
            let operation = scenario.mine.map { #"{"op": "update", "object": "Task/1", "version": 1, "values": \#(json($0))}"# }
                ?? #"{"op": "delete", "object": "Task/1", "version": 1}"#
            return try client.json("POST", "/v1/transactions\(query)", #"{"operations": [\#(operation)]}"#, headers: named)
        }
        if let mine = scenario.mine {
            return try client.json("PATCH", "/v1/objects/Task/1\(query)", json(mine), headers: [("If-Match", "\"1\"")] + named)
        }
        return try client.request("DELETE", "/v1/objects/Task/1\(query)", headers: [("If-Match", "\"1\"")] + named)
    }

    /// One row of the table under one policy and one delivery; every disagreement is recorded
    /// as an issue naming them.
    static func check(_ scenario: Case, policy: String, delivery: Delivery) throws {
        let context = "\(scenario.name), \(policy), \(delivery.testDescription)"
        let (harness, client) = try seeded(defaultPolicy: delivery.naming == .serverDefault ? MergePolicy(name: policy)! : .error)
        defer { withExtendedLifetime(harness) {} }
        try applyStoreChange(scenario.store, client)
        let afterStore = try #require(with(scenario.store))
        let response = try sendRequestChange(scenario, policy: policy, delivery: delivery, client)
        let body = parse(response)
        let now = try stored(client)
        #expect(now.problems.isEmpty, "\(context): inverses disagree: \(now.problems)")
        let final = now.tasks["Task/1"]

        guard policy != "error" else {
            #expect(response.status == 409, "\(context): \(response.status) \(response.text)")
            #expect(response.header("Merge-Policy-Applied") == nil, "\(context): nothing was resolved")
            let conflicts = body?["conflicts"]?.arrayValue ?? []
            #expect(conflicts.count == 1, "\(context): \(response.text)")
            let conflict = conflicts.first
            #expect(conflict?["kind"]?.stringValue == "optimistic-locking" && conflict?["object"]?.stringValue == "Task/1", "\(context): \(response.text)")
            #expect(conflict?["oldVersion"]?.int64Value == 1 && conflict?["newVersion"]?.int64Value == 2, "\(context): \(response.text)")
            let properties = conflict?["properties"]?.arrayValue?.compactMap(\.stringValue)
            #expect(properties.map(Set.init) == scenario.conflicting, "\(context): properties must be R ∩ C = \(scenario.conflicting.sorted()): \(response.text)")
            let cached = task(conflict?["cachedSnapshot"], id: "Task/1")
            #expect(cached?.version == 1 && cached?.values == base, "\(context): cachedSnapshot is the object at version 1: \(response.text)")
            let persisted = task(conflict?["persistedSnapshot"], id: "Task/1")
            #expect(persisted?.version == 2 && persisted?.values == afterStore, "\(context): persistedSnapshot is the store's: \(response.text)")
            #expect(final?.version == 2 && final?.values == afterStore, "\(context): nothing is written: \(describe(final?.values))")
            return
        }

        let expected = try #require(scenario.expected[policy], "\(context): no row")
        // A write that changes nothing commits no change: the version stays.
        let expectedVersion: Int64 = expected == afterStore ? 2 : 3
        #expect(final?.values == expected, "\(context): the task is \(describe(final?.values)) instead of \(describe(expected))")
        if expected != nil { #expect(final?.version == expectedVersion, "\(context): version \(final.map { "\($0.version)" } ?? "-") instead of \(expectedVersion)") }
        #expect(response.header("Merge-Policy-Applied") == policy, "\(context): Merge-Policy-Applied is \(response.header("Merge-Policy-Applied") ?? "absent")")
        #expect(mergeConflicts(response) == scenario.conflicting,
                "\(context): Merge-Conflicts is \(response.header("Merge-Conflicts").map { "'\($0)'" } ?? "absent") instead of R ∩ C = \(scenario.conflicting.sorted())")

        if delivery.transaction {
            #expect(response.status == 200, "\(context): \(response.status) \(response.text)")
            let token = body?["token"]?.stringValue
            #expect(token.map { !$0.isEmpty && $0.allSatisfy(\.isNumber) } == true, "\(context): token is a history token string: \(response.text)")
            let resolved = body?["resolved"]?.arrayValue ?? []
            #expect(resolved.count == 1, "\(context): one resolved conflict: \(response.text)")
            let record = resolved.first
            #expect(record?["kind"]?.stringValue == "optimistic-locking" && record?["object"]?.stringValue == "Task/1", "\(context): \(response.text)")
            #expect(record?["policy"]?.stringValue == policy, "\(context): \(response.text)")
            #expect(record?["oldVersion"]?.int64Value == 1 && record?["newVersion"]?.int64Value == 2, "\(context): \(response.text)")
            #expect(record?["properties"]?.arrayValue.map { Set($0.compactMap(\.stringValue)) } == scenario.conflicting, "\(context): resolved properties must be R ∩ C: \(response.text)")
            #expect(task(record?["cachedSnapshot"], id: "Task/1")?.values == base, "\(context): cachedSnapshot is version 1: \(response.text)")
            #expect(task(record?["persistedSnapshot"], id: "Task/1")?.values == afterStore, "\(context): persistedSnapshot is the store's: \(response.text)")
            let listed = body?["objects"]?.arrayValue?.first { $0["_id"]?.stringValue == "Task/1" }
            if expected == nil {
                #expect(listed?["_deleted"]?.boolValue == true, "\(context): the deletion is in objects: \(response.text)")
            } else if expected != afterStore {
                #expect(task(listed, id: "Task/1").map { $0.version == expectedVersion && $0.values == expected } == true,
                        "\(context): objects holds the task as stored: \(response.text)")
            }
        } else if expected == nil {
            #expect(response.status == 204, "\(context): \(response.status) \(response.text)")
        } else {
            #expect(response.status == 200, "\(context): \(response.status) \(response.text)")
            let answered = task(body, id: "Task/1")
            #expect(answered?.values == expected && answered?.version == expectedVersion, "\(context): the answer is the stored task: \(response.text)")
            #expect(response.header("ETag") == "\"\(expectedVersion)\"", "\(context): ETag \(response.header("ETag") ?? "absent")")
        }
    }

    @Test("each policy leaves the exact task the library's table states, with Merge-Policy-Applied and Merge-Conflicts = R ∩ C",
          arguments: cases, Delivery.all)
    func table(_ scenario: Case, _ delivery: Delivery) throws {
        for policy in Self.policies { try Self.check(scenario, policy: policy, delivery: delivery) }
    }

    @Test("the store's change made through the inverse (a project's tasks) conflicts like one made on the task",
          arguments: MergePolicy.builtIn.map(\.name))
    func storeChangeThroughInverse(_ policy: String) throws {
        let scenario = Self.cases[3]  // a to-one changed on both sides
        let (harness, client) = try Self.seeded()
        defer { withExtendedLifetime(harness) {} }
        let moved = try client.json("PATCH", "/v1/objects/Project/2", #"{"tasks": ["Task/1"]}"#)
        #expect(moved.status == 200, "\(moved.text)")
        let afterStore = try Self.stored(client)
        // The task's own row changed (its project): version 2, as after a PATCH of the task.
        #expect(afterStore.tasks["Task/1"]?.version == 2 && afterStore.tasks["Task/1"]?.values == Self.with(["project": .project("P2")]),
                "\(Self.describe(afterStore.tasks["Task/1"]?.values))")
        let response = try client.json("PATCH", "/v1/objects/Task/1?merge=\(policy)", Self.json(scenario.mine!), headers: [("If-Match", "\"1\"")])
        let now = try Self.stored(client)
        #expect(now.problems.isEmpty, "\(policy): \(now.problems)")
        if policy == "error" {
            #expect(response.status == 409, "\(response.status) \(response.text)")
            #expect(Self.parse(response)?["conflicts"]?.arrayValue?.first?["properties"]?.arrayValue?.compactMap(\.stringValue) == ["project"], "\(response.text)")
            #expect(now.tasks["Task/1"]?.values == Self.with(["project": .project("P2")]))
            return
        }
        let expected = scenario.expected[policy] ?? nil
        #expect(response.status == 200 && response.header("Merge-Policy-Applied") == policy, "\(policy): \(response.status) \(response.text)")
        #expect(Self.mergeConflicts(response) == ["project"], "\(policy): \(response.header("Merge-Conflicts") ?? "absent")")
        #expect(now.tasks["Task/1"]?.values == expected, "\(policy): \(Self.describe(now.tasks["Task/1"]?.values)) instead of \(Self.describe(expected))")
    }

    @Test("?merge= wins over Merge-Policy, which wins over the server's default")
    func precedence() throws {
        let scenario = Self.cases[1]  // overlapping attributes: each policy ends differently
        for (query, header, serverDefault, applied) in [
            ("store-trump", "object-trump", MergePolicy.rollback, "store-trump"),
            (nil, "object-trump", .rollback, "object-trump"),
            (nil, nil, .overwrite, "overwrite"),
        ] as [(String?, String?, MergePolicy, String)] {
            let (harness, client) = try Self.seeded(defaultPolicy: serverDefault)
            defer { withExtendedLifetime(harness) {} }
            try Self.applyStoreChange(scenario.store, client)
            let response = try client.json("PATCH", "/v1/objects/Task/1\(query.map { "?merge=\($0)" } ?? "")", Self.json(scenario.mine!),
                                           headers: [("If-Match", "\"1\"")] + (header.map { [("Merge-Policy", $0)] } ?? []))
            #expect(response.status == 200 && response.header("Merge-Policy-Applied") == applied, "\(applied): \(response.status) \(response.header("Merge-Policy-Applied") ?? "-")")
            #expect(Self.task(Self.parse(response), id: "Task/1")?.values == scenario.expected[applied] ?? nil, "\(applied): \(response.text)")
        }
    }

    @Test("a write based on the stored version is no conflict: no merge headers, whatever the policy")
    func currentVersionIsNoConflict() throws {
        for policy in Self.policies {
            let (harness, client) = try Self.seeded()
            defer { withExtendedLifetime(harness) {} }
            let response = try client.json("PATCH", "/v1/objects/Task/1?merge=\(policy)", #"{"title": "mine"}"#, headers: [("If-Match", "\"1\"")])
            #expect(response.status == 200, "\(policy): \(response.text)")
            #expect(response.header("Merge-Policy-Applied") == nil && response.header("Merge-Conflicts") == nil, "\(policy): \(response.headers)")
            #expect(Self.task(Self.parse(response), id: "Task/1").map { $0.version == 2 && $0.values == Self.with(["title": .text("mine")]) } == true,
                    "\(policy): \(response.text)")
        }
    }

    // MARK: The 409 body

    @Test("409 under error: properties is R ∩ C, cachedSnapshot the object at the base version, persistedSnapshot the store's; nothing written")
    func conflictBody() throws {
        let (harness, client) = try Self.seeded()
        defer { withExtendedLifetime(harness) {} }
        try Self.applyStoreChange(["title": .text("store"), "project": .project("P2")], client)
        let response = try client.json("PATCH", "/v1/objects/Task/1", #"{"title": "mine", "done": true}"#, headers: [("If-Match", "\"1\"")])
        #expect(response.status == 409)
        let body = Self.parse(response)
        #expect(body?["code"]?.stringValue == "conflict" && body?["type"]?.stringValue == "urn:managedstore:conflict", "\(response.text)")
        #expect(response.header("Content-Type")?.hasPrefix("application/problem+json") == true)
        let conflicts = body?["conflicts"]?.arrayValue ?? []
        #expect(conflicts.count == 1, "\(response.text)")
        let conflict = conflicts.first
        #expect(conflict?["properties"]?.arrayValue?.compactMap(\.stringValue) == ["title"], "R ∩ C: \(response.text)")
        let cached = Self.task(conflict?["cachedSnapshot"], id: "Task/1")
        #expect(cached?.version == 1 && cached?.values == Self.base, "the object at version 1: \(response.text)")
        let persisted = Self.task(conflict?["persistedSnapshot"], id: "Task/1")
        #expect(persisted?.version == 2 && persisted?.values == Self.with(["title": .text("store"), "project": .project("P2")]), "\(response.text)")
        let mine = Self.task(conflict?["objectSnapshot"], id: "Task/1")
        #expect(mine?.values == Self.with(["title": .text("mine"), "done": .flag(true), "project": .project("P2")]),
                "what the request would have written, on the store's values: \(response.text)")
        let now = try Self.stored(client)
        #expect(now.tasks["Task/1"]?.version == 2 && now.tasks["Task/1"]?.values == Self.with(["title": .text("store"), "project": .project("P2")]))
        #expect(now.problems.isEmpty, "\(now.problems)")
    }

    @Test("a stale base version is a conflict even when R ∩ C is empty: 409 with properties []")
    func disjointIsStillAConflict() throws {
        let (harness, client) = try Self.seeded()
        defer { withExtendedLifetime(harness) {} }
        try Self.applyStoreChange(["title": .text("store")], client)
        let response = try client.json("PATCH", "/v1/objects/Task/1", #"{"done": true}"#, headers: [("If-Match", "\"1\"")])
        #expect(response.status == 409, "\(response.text)")
        let conflict = Self.parse(response)?["conflicts"]?.arrayValue?.first
        #expect(conflict?["properties"]?.arrayValue?.isEmpty == true, "\(response.text)")
        // PUT sets every property (what it leaves out goes to its default): R ∩ C is C, even
        // where the value sent equals the store's.
        let put = try client.json("PUT", "/v1/objects/Task/1", #"{"title": "store", "priority": 1, "project": "Project/1", "tags": ["Tag/1"]}"#,
                                  headers: [("If-Match", "\"1\"")])
        #expect(put.status == 409, "PUT: \(put.text)")
        #expect(Self.parse(put)?["conflicts"]?.arrayValue?.first?["properties"]?.arrayValue?.compactMap(\.stringValue) == ["title"], "PUT: \(put.text)")
        // `_version` in the body names the base version as If-Match does.
        let versioned = try client.json("PATCH", "/v1/objects/Task/1", #"{"_version": 1, "done": true}"#)
        #expect(versioned.status == 409, "_version: \(versioned.text)")
        #expect(try Self.stored(client).tasks["Task/1"]?.values == Self.with(["title": .text("store")]))
    }

    @Test("where the history no longer reaches the base version: cachedSnapshot null, properties all of R, C every property")
    func prunedHistory() throws {
        for policy in Self.policies {
            let (harness, client) = try Self.seeded()
            defer { withExtendedLifetime(harness) {} }
            try Self.applyStoreChange(["title": .text("store"), "project": .project("P2")], client)
            _ = try harness.coordinator.deleteHistory(before: try harness.coordinator.lastHistoryToken())
            let stored: Values = try #require(Self.with(["title": .text("store"), "project": .project("P2")]))
            let response = try client.json("PATCH", "/v1/objects/Task/1?merge=\(policy)", #"{"title": "mine", "done": true}"#, headers: [("If-Match", "\"1\"")])
            let now = try Self.stored(client)
            #expect(now.problems.isEmpty, "\(policy): \(now.problems)")
            let final = now.tasks["Task/1"]
            switch policy {
            case "error", "overwrite":
                // overwrite: C minus R is not empty, and the values at B are unknown.
                #expect(response.status == 409, "\(policy): \(response.status) \(response.text)")
                let conflict = Self.parse(response)?["conflicts"]?.arrayValue?.first
                #expect(conflict?["cachedSnapshot"]?.isNull == true, "\(policy): \(response.text)")
                #expect(conflict?["properties"]?.arrayValue.map { Set($0.compactMap(\.stringValue)) } == ["title", "done"], "\(policy): all of R: \(response.text)")
                #expect(conflict?["oldVersion"]?.int64Value == 1 && conflict?["newVersion"]?.int64Value == 2, "\(policy): \(response.text)")
                #expect(Self.task(conflict?["persistedSnapshot"], id: "Task/1")?.values == stored, "\(policy): \(response.text)")
                #expect(final?.version == 2 && final?.values == stored, "\(policy): nothing written")
            default:
                // C is every property: store-trump and rollback apply nothing, object-trump all of R.
                let expected = policy == "object-trump" ? stored.merging(["title": .text("mine"), "done": .flag(true)]) { _, new in new } : stored
                #expect(response.status == 200, "\(policy): \(response.status) \(response.text)")
                #expect(response.header("Merge-Policy-Applied") == policy, "\(policy)")
                #expect(Self.mergeConflicts(response) == ["title", "done"], "\(policy): Merge-Conflicts is all of R: \(response.header("Merge-Conflicts") ?? "absent")")
                #expect(final?.values == expected, "\(policy): \(Self.describe(final?.values))")
                #expect(final?.version == (expected == stored ? 2 : 3), "\(policy): version \(final?.version ?? 0)")
                #expect(Self.task(Self.parse(response), id: "Task/1")?.values == expected, "\(policy): \(response.text)")
            }
        }
    }

    // MARK: Uniqueness

    @Test("uniqueness on insert: error 409; object-trump and overwrite take the request's values; store-trump and rollback keep the tag",
          arguments: MergePolicy.builtIn.map(\.name))
    func uniqueTag(_ policy: String) throws {
        let (harness, client) = try Self.seeded()
        defer { withExtendedLifetime(harness) {} }
        let response = try client.json("POST", "/v1/objects/Tag?merge=\(policy)", #"{"label": "G1", "tasks": []}"#)
        let body = Self.parse(response)
        let tags = try client.request("GET", "/v1/objects/Tag?where=\("label == \"G1\"".queryEncoded)")
        let g1 = Self.parse(tags)?["objects"]?.arrayValue ?? []
        #expect(g1.count == 1, "\(policy): never two tags labelled G1: \(tags.text)")
        let now = try Self.stored(client)
        #expect(now.problems.isEmpty, "\(policy): \(now.problems)")
        let holder: Bool
        switch policy {
        case "error":
            #expect(response.status == 409, "\(policy): \(response.status) \(response.text)")
            let conflict = body?["conflicts"]?.arrayValue?.first
            #expect(body?["conflicts"]?.arrayValue?.count == 1, "\(response.text)")
            #expect(conflict?["kind"]?.stringValue == "uniqueness" && conflict?["entity"]?.stringValue == "Tag", "\(response.text)")
            #expect(conflict?["constraint"]?.arrayValue?.compactMap(\.stringValue) == ["label"], "\(response.text)")
            #expect(conflict?["values"]?["label"]?.stringValue == "G1", "\(response.text)")
            #expect(conflict?["conflictingObjects"]?.arrayValue?.compactMap(\.stringValue) == ["Tag/1"], "\(response.text)")
            #expect(response.header("Merge-Policy-Applied") == nil)
            holder = true
        case "object-trump", "overwrite":
            // The request set tasks to none: the stored tag takes that.
            #expect(response.status == 200, "\(policy): \(response.status) \(response.text)")
            #expect(body?["_id"]?.stringValue == "Tag/1" && body?["label"]?.stringValue == "G1", "\(policy): \(response.text)")
            #expect(body?["tasks"]?.arrayValue?.isEmpty == true, "\(policy): the request's tasks (none): \(response.text)")
            #expect(response.header("ETag") == body?["_version"]?.int64Value.map { "\"\($0)\"" }, "\(policy): ETag")
            #expect(response.header("Merge-Policy-Applied") == policy, "\(policy)")
            holder = false
        default:
            #expect(response.status == 200, "\(policy): \(response.status) \(response.text)")
            #expect(body?["_id"]?.stringValue == "Tag/1" && body?["_version"]?.int64Value == 1 && body?["label"]?.stringValue == "G1", "\(policy): \(response.text)")
            #expect(body?["tasks"]?.arrayValue?.compactMap(\.stringValue) == ["Task/1"], "\(policy): kept as it was: \(response.text)")
            #expect(response.header("ETag") == "\"1\"", "\(policy): ETag")
            #expect(response.header("Merge-Policy-Applied") == policy, "\(policy)")
            holder = true
        }
        #expect(g1.first?["tasks"]?.arrayValue?.compactMap(\.stringValue) == (holder ? ["Task/1"] : []), "\(policy): \(tags.text)")
        #expect(now.tasks["Task/1"]?.values["tags"] == .tags(holder ? ["G1"] : []), "\(policy): \(Self.describe(now.tasks["Task/1"]?.values))")
        #expect(try harness.counts() == ["Project": 3, "Tag": 3, "Task": 1], "\(policy)")
    }

    @Test("uniqueness on insert: object-trump keeps what the request left out, overwrite puts it back to its default or to nothing",
          arguments: ["object-trump", "overwrite"])
    func upsertLeavesOrResets(_ policy: String) throws {
        let (harness, client) = try Self.seeded()
        defer { withExtendedLifetime(harness) {} }
        #expect(try client.json("PATCH", "/v1/objects/Project/1", #"{"archived": true}"#).status == 200)
        let response = try client.json("POST", "/v1/objects/Project?merge=\(policy)", #"{"name": "P1"}"#)
        let body = Self.parse(response)
        #expect(response.status == 200, "\(policy): \(response.status) \(response.text)")
        let resets = policy == "overwrite"
        #expect(body?["_id"]?.stringValue == "Project/1", "\(policy): \(response.text)")
        #expect(body?["archived"]?.boolValue == !resets, "\(policy): archived: \(response.text)")
        #expect(body?["tasks"]?.arrayValue?.compactMap(\.stringValue) == (resets ? [] : ["Task/1"]), "\(policy): tasks: \(response.text)")
        let now = try Self.stored(client)
        #expect(now.problems.isEmpty, "\(policy): \(now.problems)")
        #expect(now.tasks["Task/1"]?.values["project"] == .project(resets ? nil : "P1"), "\(policy): \(Self.describe(now.tasks["Task/1"]?.values))")
        #expect(try harness.counts() == ["Project": 3, "Tag": 3, "Task": 1], "\(policy)")
    }

    @Test("inserts of one unique key in one transaction collapse into one object; every ref maps to it",
          arguments: MergePolicy.builtIn.map(\.name))
    func insertsCollapse(_ policy: String) throws {
        let harness = try ServerHarness()
        let client = try harness.client()
        let response = try client.json("POST", "/v1/transactions?merge=\(policy)", #"""
            {"operations": [{"op": "insert", "entity": "Project", "ref": "a", "values": {"name": "Apollo"}},
                            {"op": "insert", "entity": "Project", "ref": "b", "values": {"name": "Apollo", "archived": true}}]}
            """#)
        let body = Self.parse(response)
        let projects = Self.parse(try client.request("GET", "/v1/objects/Project"))?["objects"]?.arrayValue ?? []
        guard policy != "error" else {
            #expect(response.status == 409, "\(response.status) \(response.text)")
            #expect(body?["conflicts"]?.arrayValue?.first?["kind"]?.stringValue == "uniqueness", "\(response.text)")
            #expect(projects.isEmpty, "nothing written")
            return
        }
        #expect(response.status == 200, "\(policy): \(response.status) \(response.text)")
        #expect(projects.count == 1, "\(policy): one project stored: \(projects)")
        let id = try #require(projects.first?["_id"]?.stringValue)
        #expect(body?["ids"]?["a"]?.stringValue == id && body?["ids"]?["b"]?.stringValue == id, "\(policy): both refs name \(id): \(response.text)")
        let laterWins = policy == "object-trump" || policy == "overwrite"
        #expect(projects.first?["archived"]?.boolValue == laterWins, "\(policy): \(laterWins ? "the later insert's values" : "the first insert kept")")
        let resolved = body?["resolved"]?.arrayValue ?? []
        #expect(resolved.count == 1 && resolved.first?["kind"]?.stringValue == "uniqueness" && resolved.first?["policy"]?.stringValue == policy, "\(policy): \(response.text)")
        #expect(body?["token"]?.stringValue != nil, "\(policy): \(response.text)")
        #expect(response.header("Merge-Policy-Applied") == policy, "\(policy)")
    }

    @Test("inserts of a key the store already holds, twice in one transaction: both refs map to the stored object",
          arguments: ["store-trump", "object-trump", "overwrite", "rollback"])
    func insertsCollapseIntoStored(_ policy: String) throws {
        let (harness, client) = try Self.seeded()
        defer { withExtendedLifetime(harness) {} }
        let response = try client.json("POST", "/v1/transactions?merge=\(policy)", #"""
            {"operations": [{"op": "insert", "entity": "Tag", "ref": "x", "values": {"label": "G2"}},
                            {"op": "insert", "entity": "Tag", "ref": "y", "values": {"label": "G2", "tasks": ["Task/1"]}}]}
            """#)
        let body = Self.parse(response)
        #expect(response.status == 200, "\(policy): \(response.status) \(response.text)")
        #expect(body?["ids"]?["x"]?.stringValue == "Tag/2" && body?["ids"]?["y"]?.stringValue == "Tag/2", "\(policy): \(response.text)")
        #expect(try harness.counts() == ["Project": 3, "Tag": 3, "Task": 1], "\(policy)")
        let now = try Self.stored(client)
        #expect(now.problems.isEmpty, "\(policy): \(now.problems)")
        let takesRequest = policy == "object-trump" || policy == "overwrite"
        #expect(now.tasks["Task/1"]?.values["tags"] == .tags(takesRequest ? ["G1", "G2"] : ["G1"]), "\(policy): \(Self.describe(now.tasks["Task/1"]?.values))")
    }
}

extension MergePolicyHTTPTests {
    // MARK: Minimal cases of the contract, one rule each

    @Test("Merge-Conflicts is sent on every resolved answer, also when R ∩ C is empty")
    func emptyMergeConflicts() throws {
        for (scenario, policy) in [(Self.cases[0], "store-trump"), (Self.cases[6], "rollback"), (Self.cases[6], "overwrite")] {
            let (harness, client) = try Self.seeded()
            defer { withExtendedLifetime(harness) {} }
            try Self.applyStoreChange(scenario.store, client)
            let response = try Self.sendRequestChange(scenario, policy: policy, delivery: .init(naming: .query, transaction: false), client)
            #expect(response.header("Merge-Policy-Applied") == policy, "\(scenario.name), \(policy)")
            #expect(response.header("Merge-Conflicts") == "", "\(scenario.name), \(policy): Merge-Conflicts is \(response.header("Merge-Conflicts").map { "'\($0)'" } ?? "absent")")
        }
    }

    @Test("a transaction answers its token as a string, also when it changes nothing")
    func noOpTransactionToken() throws {
        let (harness, client) = try Self.seeded()
        defer { withExtendedLifetime(harness) {} }
        // An update to the values already stored, and an upsert that store-trump keeps out.
        for (query, body) in [("", #"{"operations": [{"op": "update", "object": "Task/1", "values": {"title": "t0"}}]}"#),
                              ("?merge=store-trump", #"{"operations": [{"op": "insert", "entity": "Tag", "values": {"label": "G1"}}]}"#)] {
            let response = try client.json("POST", "/v1/transactions\(query)", body)
            #expect(response.status == 200, "\(body): \(response.text)")
            #expect(Self.parse(response)?["token"]?.stringValue != nil, "\(body): token: \(response.text)")
        }
    }

    @Test("overwrite applies every property the request sets, also one whose value equals the store's")
    func overwriteKeepsRequestValuesEqualToTheStores() throws {
        // PUT sets every property: what it leaves out (priority) goes to its default, 0, which
        // is what the store changed it to.
        let rows: [(method: String, store: Values, mine: Values)] = [
            ("PATCH", ["title": .text("store")], ["title": .text("store"), "done": .flag(true)]),
            ("PATCH", ["project": .project(nil)], ["project": .project(nil)]),
            ("PATCH", ["tags": .tags(["G1", "G2"])], ["tags": .tags(["G1", "G2"]), "priority": .number(4)]),
            ("PUT", ["priority": .number(0)], ["title": .text("mine"), "priority": .number(0), "done": .flag(false), "project": .project("P1"), "tags": .tags(["G1"])]),
        ]
        for (method, store, mine) in rows {
            let (harness, client) = try Self.seeded()
            defer { withExtendedLifetime(harness) {} }
            try Self.applyStoreChange(store, client)
            var body = Self.json(mine)
            if method == "PUT" { body = body.replacingOccurrences(of: #""priority": 0, "#, with: "") }
            let response = try client.json(method, "/v1/objects/Task/1?merge=overwrite", body, headers: [("If-Match", "\"1\"")])
            let expected = Self.with(store.merging(mine) { _, new in new })
            let now = try Self.stored(client)
            #expect(response.status == 200, "\(response.text)")
            #expect(now.tasks["Task/1"]?.values == expected,
                    "\(method) based on version 1, C \(Self.describe(store)), R \(Self.describe(mine)): the task is \(Self.describe(now.tasks["Task/1"]?.values)) instead of \(Self.describe(expected))")
            #expect(now.problems.isEmpty, "\(now.problems)")
        }
    }
}

extension MergePolicyHTTPTests {
    @Test("a base version above the stored one is 409 under every policy: no policy merges a version the store never had",
          arguments: ["error", "store-trump", "object-trump", "overwrite", "rollback"])
    func baseVersionFromTheFuture(_ policy: String) throws {
        let (harness, client) = try Self.seeded()
        defer { withExtendedLifetime(harness) {} }
        let patch = try client.json("PATCH", "/v1/objects/Task/1?merge=\(policy)", #"{"title": "mine"}"#, headers: [("If-Match", "\"99\"")])
        #expect(patch.status == 409, "\(policy): \(patch.text)")
        let conflict = Self.parse(patch)?["conflicts"]?.arrayValue?.first
        #expect(conflict?["oldVersion"]?.int64Value == 99 && conflict?["newVersion"]?.int64Value == 1, "\(policy): \(patch.text)")
        let delete = try client.request("DELETE", "/v1/objects/Task/1?merge=\(policy)", headers: [("If-Match", "\"7\"")])
        #expect(delete.status == 409, "\(policy): \(delete.text)")
        let task = Self.parse(try client.request("GET", "/v1/objects/Task/1"))
        #expect(task?["title"]?.stringValue == "t0" && task?["_version"]?.int64Value == 1, "\(policy): nothing written")
    }

    @Test("overwrite that would put back a relationship to an object deleted since the base version: 409, nothing written")
    func overwriteToADeletedDestination() throws {
        let (harness, client) = try Self.seeded()
        defer { withExtendedLifetime(harness) {} }
        // The store moves the task to P2 and deletes P1, where it was at version 1.
        #expect(try client.json("PATCH", "/v1/objects/Task/1", #"{"project": "Project/2"}"#).status == 200)
        #expect(try client.request("DELETE", "/v1/objects/Project/1").status == 204)
        let response = try client.json("PATCH", "/v1/objects/Task/1?merge=overwrite", #"{"title": "mine"}"#, headers: [("If-Match", "\"1\"")])
        #expect(response.status == 409, "the project at version 1 is gone: \(response.text)")
        #expect(Self.parse(response)?["code"]?.stringValue == "conflict")
        let task = Self.parse(try client.request("GET", "/v1/objects/Task/1"))
        #expect(task?["title"]?.stringValue == "t0" && task?["project"]?.stringValue == "Project/2", "nothing written: \(task.map { "\($0)" } ?? "-")")
        // Under object-trump the same write goes through: nothing needs putting back.
        let trump = try client.json("PATCH", "/v1/objects/Task/1?merge=object-trump", #"{"title": "mine"}"#, headers: [("If-Match", "\"1\"")])
        #expect(trump.status == 200, "\(trump.text)")
    }

    @Test("an insert folded into a stored object by its unique value: later operations that name its ref link to that object",
          arguments: ["store-trump", "object-trump", "overwrite", "rollback"])
    func refsOfFoldedInserts(_ policy: String) throws {
        let (harness, client) = try Self.seeded()
        defer { withExtendedLifetime(harness) {} }
        // Upsert project P1 and tag G2 by their unique values, then insert a task in them.
        let response = try client.json("POST", "/v1/transactions?merge=\(policy)", #"""
            {"operations": [{"op": "insert", "entity": "Project", "ref": "p", "values": {"name": "P1"}},
                            {"op": "insert", "entity": "Tag", "ref": "g", "values": {"label": "G2"}},
                            {"op": "insert", "entity": "Task", "ref": "t", "values": {"title": "new", "project": "p", "tags": ["g"]}}]}
            """#)
        let ids = Self.parse(response)?["ids"]
        #expect(response.status == 200, "\(policy): \(response.text)")
        #expect(ids?["p"]?.stringValue == "Project/1" && ids?["g"]?.stringValue == "Tag/2" && ids?["t"]?.stringValue == "Task/2", "\(policy): \(response.text)")
        let now = try Self.stored(client)
        #expect(now.problems.isEmpty, "\(policy): \(now.problems)")
        let inserted = now.tasks["Task/2"]?.values
        #expect(inserted?["project"] == .project("P1"), "\(policy): the task names ref p, which is Project/1: \(Self.describe(inserted))")
        #expect(inserted?["tags"] == .tags(["G2"]), "\(policy): the task names ref g, which is Tag/2: \(Self.describe(inserted))")
        #expect(try harness.counts() == ["Project": 3, "Tag": 3, "Task": 2], "\(policy)")
    }
}

/// Two writers race on three tasks, each PATCH a random subset of {title, priority, done,
/// project, tags} under a random policy, based on the version that writer last saw (refreshed
/// by a GET now and then, so often stale). A plain reference model of the five policies, which
/// keeps every version's values and what each version changed (C is what changed after the
/// writer's version), predicts each answer (status, `Merge-Policy-Applied`, `Merge-Conflicts`,
/// the task, the 409's conflict; a transaction's `objects`, `resolved` and `token`) and the
/// store after it, inverses included. A quarter of the writes are transactions (the base
/// version as the operation's `version`); now and then the history is pruned up to the last
/// transaction, so that C becomes every property for the versions before it.
///
/// `concurrentRounds` sends six such writes at once, all based on the same version, on a store
/// file (so that they share group commits), and checks that the answers agree with the model in
/// some serial order and that the store ends as that order leaves it.
///
/// 1,000 steps or 5 seconds, seed 20260801; 25 rounds, seed 20260802. Environment:
/// `MANAGEDSTORE_POLICY_SEED`, `MANAGEDSTORE_POLICY_STEPS`, `MANAGEDSTORE_POLICY_SECONDS`,
/// `MANAGEDSTORE_POLICY_ROUNDS` (the concurrent rounds are timed by the machine, so a seed
/// replays their requests but not their order).
@Suite("Merge policies over HTTP: two writers race")
struct MergePolicyRaceTests {
    typealias Value = MergePolicyHTTPTests.Value
    typealias Values = MergePolicyHTTPTests.Values

    /// One task in the reference model: the values of each version and what each changed.
    struct ModelTask {
        private(set) var versions: [Values]
        private(set) var changes: [Set<String>]
        init(_ values: Values) { versions = [values]; changes = [[]] }
        var version: Int64 { Int64(versions.count) }
        var values: Values { versions[versions.count - 1] }
        func values(at version: Int64) -> Values { versions[Int(version) - 1] }
        /// The properties changed by the versions after `base`.
        func changed(after base: Int64) -> Set<String> { changes[Int(base)...].reduce(into: []) { $0.formUnion($1) } }
        /// A committed write: a new version when it changes anything.
        mutating func commit(_ new: Values) {
            let changed = Set(new.keys.filter { new[$0] != values[$0] })
            guard !changed.isEmpty else { return }
            versions.append(new)
            changes.append(changed)
        }
    }

    /// What the model says an answer is.
    struct Prediction {
        var status: Int
        var applied: String?
        var conflicting: Set<String>
        var after: Values
    }

    /// Every property of a task: C when the history no longer reaches the base version.
    static let allProperties: Set<String> = ["title", "priority", "done", "estimate", "due", "project", "tags"]

    /// The answer to a PATCH of `request` based on `base` (nil: none) under `policy`;
    /// `reachable`: whether the history still reaches the base version.
    static func predict(_ task: ModelTask, request: Values, base: Int64?, reachable: Bool, policy: String) -> Prediction {
        let current = task.values
        guard let base, base < task.version else {
            return Prediction(status: 200, applied: nil, conflicting: [], after: current.merging(request) { _, new in new })
        }
        let storeChanged = reachable ? task.changed(after: base) : allProperties
        let requested = Set(request.keys)
        let conflicting = requested.intersection(storeChanged)
        var after = current
        switch policy {
        case "error":
            return Prediction(status: 409, applied: nil, conflicting: conflicting, after: current)
        case "store-trump":
            for (key, value) in request where !storeChanged.contains(key) { after[key] = value }
        case "object-trump":
            after.merge(request) { _, new in new }
        case "overwrite":
            after.merge(request) { _, new in new }
            // Without the values at the base version, C minus R cannot be put back: 409.
            guard reachable else { return Prediction(status: 409, applied: nil, conflicting: conflicting, after: current) }
            for key in storeChanged.subtracting(requested) { after[key] = task.values(at: base)[key] }
        default:  // rollback
            break
        }
        return Prediction(status: 200, applied: policy, conflicting: conflicting, after: after)
    }

    struct Mismatch: Error, CustomStringConvertible { let description: String }

    /// How the answer to a write of `request` to `task` (the model's, before the write) based on
    /// `base` under `policy` differs from `expected`; `next` is the task after the write.
    static func problems(of response: RawHTTPClient.Response, viaTransaction: Bool, id: String, base: Int64?, reaches: Bool, policy: String,
                         task: ModelTask, expected: Prediction, next: ModelTask) -> [String] {
        let body = MergePolicyHTTPTests.parse(response)
        var problems: [String] = []
        if response.status != expected.status { problems.append("status \(response.status) instead of \(expected.status)") }
        if response.header("Merge-Policy-Applied") != expected.applied {
            problems.append("Merge-Policy-Applied \(response.header("Merge-Policy-Applied") ?? "absent") instead of \(expected.applied ?? "absent")")
        }
        if expected.applied != nil, (MergePolicyHTTPTests.mergeConflicts(response) ?? []) != expected.conflicting {
            problems.append("Merge-Conflicts \(response.header("Merge-Conflicts") ?? "absent") instead of R ∩ C = \(expected.conflicting.sorted())")
        }
        if expected.status == 200 {
            if viaTransaction {
                // The task is listed (the operation names it) with its final state, changed or
                // not; the resolved conflict when it was stale.
                let listed = body?["objects"]?.arrayValue?.first { $0["_id"]?.stringValue == id }
                let answered = MergePolicyHTTPTests.task(listed, id: id)
                if answered?.version != next.version || answered?.values != next.values {
                    problems.append("objects hold \(answered.map { "version \($0.version) \(MergePolicyHTTPTests.describe($0.values))" } ?? "no \(id)") instead of version \(next.version) \(MergePolicyHTTPTests.describe(next.values))")
                }
                // (A transaction that changes nothing: `noOpTransactionToken` holds its token.)
                if (next.version > task.version || expected.applied != nil) && body?["token"]?.stringValue == nil { problems.append("no token") }
                let resolved = body?["resolved"]?.arrayValue ?? []
                let record = resolved.first
                if resolved.count != (expected.applied == nil ? 0 : 1) || (record != nil && (record?["object"]?.stringValue != id || record?["policy"]?.stringValue != policy
                    || record?["properties"]?.arrayValue.map({ Set($0.compactMap(\.stringValue)) }) != expected.conflicting)) {
                    problems.append("resolved is \(resolved) instead of \(expected.applied == nil ? "[]" : "one conflict of \(id) under \(policy) with properties \(expected.conflicting.sorted())")")
                }
            } else {
                let answered = MergePolicyHTTPTests.task(body, id: id)
                if answered?.version != next.version || answered?.values != next.values {
                    problems.append("answered \(answered.map { "version \($0.version) \(MergePolicyHTTPTests.describe($0.values))" } ?? response.text) instead of version \(next.version) \(MergePolicyHTTPTests.describe(next.values))")
                }
                if response.header("ETag") != "\"\(next.version)\"" { problems.append("ETag \(response.header("ETag") ?? "absent") instead of \"\(next.version)\"") }
            }
        } else if let base {
            let conflict = body?["conflicts"]?.arrayValue?.first
            let properties = conflict?["properties"]?.arrayValue.map { Set($0.compactMap(\.stringValue)) }
            if properties != expected.conflicting { problems.append("409 properties \(properties.map { "\($0.sorted())" } ?? "missing") instead of R ∩ C = \(expected.conflicting.sorted())") }
            if conflict?["oldVersion"]?.int64Value != base || conflict?["newVersion"]?.int64Value != task.version {
                problems.append("409 versions \(String(describing: conflict?["oldVersion"])) -> \(String(describing: conflict?["newVersion"])) instead of \(base) -> \(task.version)")
            }
            let cached = MergePolicyHTTPTests.task(conflict?["cachedSnapshot"], id: id)
            if !reaches {
                if conflict?["cachedSnapshot"]?.isNull != true { problems.append("409 cachedSnapshot is not null, but the history no longer reaches version \(base)") }
            } else if cached?.version != base || cached?.values != task.values(at: base) {
                problems.append("409 cachedSnapshot \(cached.map { "version \($0.version) \(MergePolicyHTTPTests.describe($0.values))" } ?? "missing") instead of version \(base) \(MergePolicyHTTPTests.describe(task.values(at: base)))")
            }
            if MergePolicyHTTPTests.task(conflict?["persistedSnapshot"], id: id)?.values != task.values { problems.append("409 persistedSnapshot is not the stored task") }
        }
        return problems
    }


    @Test("every answer and the store after it agree with a reference model of the five policies")
    func race() throws {
        let environment = ProcessInfo.processInfo.environment
        let seed = environment["MANAGEDSTORE_POLICY_SEED"].flatMap(UInt64.init) ?? 20_260_801
        let steps = environment["MANAGEDSTORE_POLICY_STEPS"].flatMap(Int.init) ?? 1_000
        let seconds = environment["MANAGEDSTORE_POLICY_SECONDS"].flatMap(Double.init) ?? 5
        var random = SplitMix64(seed: seed)
        let deadline = Date().addingTimeInterval(seconds)

        let harness = try ServerHarness()
        let client = try harness.client()
        var recent: [Exchange] = []
        func send(_ method: String, _ path: String, body: String? = nil, headers: [(String, String)] = []) throws -> RawHTTPClient.Response {
            let response = if let body { try client.json(method, path, body, headers: headers) } else { try client.request(method, path, headers: headers) }
            recent.append(Exchange(method: method, path: path, headers: headers, body: body, status: response.status, response: response.text))
            if recent.count > 8 { recent.removeFirst() }
            return response
        }

        // Three tasks, three projects, three tags; every task at version 1.
        var model: [String: ModelTask] = [
            "Task/1": ModelTask(["title": .text("a"), "priority": .number(0), "done": .flag(false), "project": .project("P1"), "tags": .tags(["G1"])]),
            "Task/2": ModelTask(["title": .text("b"), "priority": .number(1), "done": .flag(true), "project": .project("P2"), "tags": .tags([])]),
            "Task/3": ModelTask(["title": .text("c"), "priority": .number(2), "done": .flag(false), "project": .project(nil), "tags": .tags(["G1", "G3"])]),
        ]
        let seed1 = try send("POST", "/v1/transactions", body: #"""
            {"operations": [
              {"op": "insert", "entity": "Project", "values": {"name": "P1"}},
              {"op": "insert", "entity": "Project", "values": {"name": "P2"}},
              {"op": "insert", "entity": "Project", "values": {"name": "P3"}},
              {"op": "insert", "entity": "Tag", "values": {"label": "G1"}},
              {"op": "insert", "entity": "Tag", "values": {"label": "G2"}},
              {"op": "insert", "entity": "Tag", "values": {"label": "G3"}}]}
            """#)
        try #require(seed1.status == 200, "\(seed1.text)")
        for id in ["Task/1", "Task/2", "Task/3"] {
            let response = try send("POST", "/v1/objects/Task", body: MergePolicyHTTPTests.json(model[id]!.values))
            try #require(response.status == 201 && response.header("Location") == "/v1/objects/\(id)", "\(response.text)")
        }
        // What each writer last saw of each task: its version.
        var views: [[String: Int64]] = [["Task/1": 1, "Task/2": 1, "Task/3": 1], ["Task/1": 1, "Task/2": 1, "Task/3": 1]]
        // The versions of each task that the persistent history still reaches (now and then
        // the history is pruned up to the last transaction).
        var reachable: [String: Set<Int64>] = ["Task/1": [1], "Task/2": [1], "Task/3": [1]]
        var prunings = 0
        let policies = MergePolicy.builtIn.map(\.name)
        var counts: [String: Int] = [:]

        func fail(_ step: Int, _ what: String) -> Mismatch {
            Mismatch(description: """
                the server disagrees with the reference model of the merge policies
                  seed \(seed) (MANAGEDSTORE_POLICY_SEED=\(seed)), step \(step)
                  \(what)
                  last requests:
                    \(recent.map(\.text).joined(separator: "\n    "))
                """)
        }

        func randomValues() -> Values {
            var values: Values = [:]
            while values.isEmpty {
                if Bool.random(using: &random) { values["title"] = .text(["a", "b", "c"].randomElement(using: &random)!) }
                if Bool.random(using: &random) { values["priority"] = .number(Int64.random(in: 0...2, using: &random)) }
                if Bool.random(using: &random) { values["done"] = .flag(Bool.random(using: &random)) }
                if Bool.random(using: &random) { values["project"] = .project([nil, "P1", "P2", "P3"].randomElement(using: &random)!) }
                if Bool.random(using: &random) { values["tags"] = .tags(["G1", "G2", "G3"].filter { _ in Bool.random(using: &random) }) }
            }
            return values
        }

        var step = 0
        do {
            while step < steps && Date() < deadline {
                step += 1
                let writer = Int.random(in: 0...1, using: &random)
                let id = "Task/\(Int.random(in: 1...3, using: &random))"
                let task = model[id]!
                if Int.random(in: 0..<6, using: &random) == 0 {
                    // The writer refreshes its view of the task.
                    let response = try send("GET", "/v1/objects/\(id)")
                    guard let read = MergePolicyHTTPTests.task(MergePolicyHTTPTests.parse(response), id: id), read.version == task.version, read.values == task.values else {
                        throw fail(step, "GET \(id): expected version \(task.version) \(MergePolicyHTTPTests.describe(task.values))")
                    }
                    views[writer][id] = read.version
                    continue
                }
                let request = randomValues()
                let policy = policies.randomElement(using: &random)!
                let base: Int64? = Int.random(in: 0..<10, using: &random) == 0 ? nil : views[writer][id]!
                counts[policy, default: 0] += 1
                if let base, base < task.version { counts["stale", default: 0] += 1 }
                let reaches = base.map { reachable[id]!.contains($0) } ?? true
                if let base, base < task.version, !reaches { counts["stale beyond the history", default: 0] += 1 }
                let expected = Self.predict(task, request: request, base: base, reachable: reaches, policy: policy)
                // A quarter of the writes go through POST /v1/transactions, the base version as the
                // update operation's `version`.
                let viaTransaction = Int.random(in: 0..<4, using: &random) == 0
                let response: RawHTTPClient.Response
                if viaTransaction {
                    let version = base.map { #", "version": \#($0)"# } ?? ""
                    response = try send("POST", "/v1/transactions?merge=\(policy)", body: #"""
                        {"operations": [{"op": "update", "object": "\#(id)"\#(version), "values": \#(MergePolicyHTTPTests.json(request))}]}
                        """#)
                } else {
                    response = try send("PATCH", "/v1/objects/\(id)?merge=\(policy)", body: MergePolicyHTTPTests.json(request),
                                        headers: base.map { [("If-Match", "\"\($0)\"")] } ?? [])
                }
                var next = task
                if expected.status == 200 { next.commit(expected.after) }
                let problems = Self.problems(of: response, viaTransaction: viaTransaction, id: id, base: base, reaches: reaches, policy: policy,
                                             task: task, expected: expected, next: next)
                if !problems.isEmpty {
                    let changed = base.map { reaches ? "\(task.changed(after: $0).sorted())" : "every property (the history no longer reaches version \($0))" } ?? "[]"
                    throw fail(step, "\(viaTransaction ? "a transaction's update of" : "PATCH") \(id) \(MergePolicyHTTPTests.json(request)) based on \(base.map { "\($0)" } ?? "nothing") under \(policy), task at version \(task.version) \(MergePolicyHTTPTests.describe(task.values)), C = \(changed):\n  " + problems.joined(separator: "\n  "))
                }
                model[id] = next
                if response.status == 200 { views[writer][id] = next.version }  // (a transaction's answer lists the task when it changed)
                if next.version > task.version {
                    reachable[id]!.insert(next.version)
                    // Now and then, right after a write that committed a change (so that the last
                    // history transaction is known), prune the history before it: only this
                    // task's newest version stays reachable.
                    if Int.random(in: 0..<40, using: &random) == 0 {
                        _ = try harness.coordinator.deleteHistory(before: try harness.coordinator.lastHistoryToken())
                        reachable = reachable.mapValues { _ in [] }
                        reachable[id] = [next.version]
                        prunings += 1
                        recent.append(Exchange(method: "PRUNE", path: "coordinator.deleteHistory(before: lastHistoryToken())", headers: [], body: nil, status: 0, response: ""))
                    }
                }

                // The store after the step: every task and every inverse.
                let now = try MergePolicyHTTPTests.stored(client)
                var differences = now.problems
                for (taskID, modelled) in model.sorted(by: { $0.key < $1.key }) {
                    let held = now.tasks[taskID]
                    if held?.version != modelled.version || held?.values != modelled.values {
                        differences.append("\(taskID) is \(held.map { "version \($0.version) \(MergePolicyHTTPTests.describe($0.values))" } ?? "missing") instead of version \(modelled.version) \(MergePolicyHTTPTests.describe(modelled.values))")
                    }
                }
                if !differences.isEmpty { throw fail(step, "after the step:\n  " + differences.joined(separator: "\n  ")) }
            }
        } catch let mismatch as Mismatch {
            Issue.record(Comment(rawValue: mismatch.description))
            return
        }
        print("merge-policy race: \(step) steps, seed \(seed), \(prunings) prunings; writes by policy \(counts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))")
        #expect(step >= min(steps, 50), "the race ran \(step) steps")
    }
}

extension MergePolicyRaceTests {
    /// Holds the answers of one round of concurrent writes.
    final class Answers: @unchecked Sendable {
        // @unchecked Sendable: `items` is only touched under `lock`.
        private let lock = NSLock()
        private var items: [Int: RawHTTPClient.Response] = [:]
        func set(_ index: Int, _ response: RawHTTPClient.Response) { lock.lock(); items[index] = response; lock.unlock() }
        var all: [Int: RawHTTPClient.Response] { lock.lock(); defer { lock.unlock() }; return items }
    }

    /// One write of a concurrent round.
    struct RoundWrite: Sendable {
        let request: Values
        let policy: String
        let base: Int64?
        let viaTransaction: Bool

        func send(_ client: RawHTTPClient, id: String) throws -> RawHTTPClient.Response {
            if viaTransaction {
                let version = base.map { #", "version": \#($0)"# } ?? ""
                return try client.json("POST", "/v1/transactions?merge=\(policy)",
                                       #"{"operations": [{"op": "update", "object": "\#(id)"\#(version), "values": \#(MergePolicyHTTPTests.json(request))}]}"#)
            }
            return try client.json("PATCH", "/v1/objects/\(id)?merge=\(policy)", MergePolicyHTTPTests.json(request),
                                   headers: base.map { [("If-Match", "\"\($0)\"")] } ?? [])
        }

        var text: String {
            "\(viaTransaction ? "transaction update" : "PATCH") \(MergePolicyHTTPTests.json(request)) based on \(base.map { "\($0)" } ?? "nothing") under \(policy)"
        }
    }

    /// Whether the answers `pending` can be put in an order in which each agrees with the model
    /// (each write sees the task as the writes before it left it): the serial order that the
    /// write queue must have given them. Returns the task after them, or nil.
    static func serialize(_ writes: [RoundWrite], _ answers: [Int: RawHTTPClient.Response], pending: Set<Int>, from task: ModelTask) -> ModelTask? {
        guard !pending.isEmpty else { return task }
        for index in pending.sorted() {
            let write = writes[index], answer = answers[index]!
            let expected = predict(task, request: write.request, base: write.base, reachable: true, policy: write.policy)
            var next = task
            if expected.status == 200 { next.commit(expected.after) }
            guard problems(of: answer, viaTransaction: write.viaTransaction, id: "Task/1", base: write.base, reaches: true, policy: write.policy,
                           task: task, expected: expected, next: next).isEmpty else { continue }
            if let end = serialize(writes, answers, pending: pending.subtracting([index]), from: next) { return end }
        }
        return nil
    }

    @Test("writes sent at once (one group commit) agree with the model in some serial order, and the store ends as that order leaves it")
    func concurrentRounds() throws {
        let environment = ProcessInfo.processInfo.environment
        let seed = environment["MANAGEDSTORE_POLICY_SEED"].flatMap(UInt64.init) ?? 20_260_802
        let rounds = environment["MANAGEDSTORE_POLICY_ROUNDS"].flatMap(Int.init) ?? 25
        var random = SplitMix64(seed: seed)
        let writers = 6

        let (harness, client) = try MergePolicyHTTPTests.seeded(file: true)
        defer { withExtendedLifetime(harness) {} }
        var model = ModelTask(MergePolicyHTTPTests.base)
        let policies = MergePolicy.builtIn.map(\.name)
        for round in 1...rounds {
            let start = model
            let writes = (0..<writers).map { _ in
                var values: Values = [:]
                while values.isEmpty {
                    if Bool.random(using: &random) { values["title"] = .text(["a", "b", "c"].randomElement(using: &random)!) }
                    if Bool.random(using: &random) { values["priority"] = .number(Int64.random(in: 0...2, using: &random)) }
                    if Bool.random(using: &random) { values["done"] = .flag(Bool.random(using: &random)) }
                    if Bool.random(using: &random) { values["project"] = .project([nil, "P1", "P2", "P3"].randomElement(using: &random)!) }
                    if Bool.random(using: &random) { values["tags"] = .tags(["G1", "G2", "G3"].filter { _ in Bool.random(using: &random) }) }
                }
                return RoundWrite(request: values, policy: policies.randomElement(using: &random)!,
                                  base: Int.random(in: 0..<6, using: &random) == 0 ? nil : start.version,
                                  viaTransaction: Int.random(in: 0..<4, using: &random) == 0)
            }
            // Every writer connects, then all send at once.
            let answers = Answers(), failures = LockedList<String>()
            let ready = DispatchGroup(), done = DispatchGroup(), go = DispatchSemaphore(value: 0)
            let port = harness.port
            for index in writes.indices {
                ready.enter()
                done.enter()
                Thread {
                    defer { done.leave() }
                    let connected = Result { try RawHTTPClient(port: port) }
                    ready.leave()
                    go.wait()
                    do { answers.set(index, try writes[index].send(try connected.get(), id: "Task/1")) } catch { failures.add("\(index): \(error)") }
                }.start()
            }
            try #require(ready.wait(timeout: .now() + 30) == .success, "the writers did not connect")
            for _ in writes { go.signal() }
            try #require(done.wait(timeout: .now() + 60) == .success, "the writes did not finish")
            try #require(failures.all.isEmpty, "\(failures.all)")
            let got = answers.all
            guard got.count == writers, let end = Self.serialize(writes, got, pending: Set(0..<writers), from: start) else {
                Issue.record(Comment(rawValue: """
                    round \(round) (seed \(seed)): no serial order of these answers agrees with the model
                      task before: version \(start.version) \(MergePolicyHTTPTests.describe(start.values))
                      \(writes.indices.map { "\(writes[$0].text)\n        -> \(got[$0].map { "\($0.status) [\($0.header("Merge-Policy-Applied") ?? "-"); \($0.header("Merge-Conflicts") ?? "-")] \($0.text.prefix(600))" } ?? "no answer")" }.joined(separator: "\n      "))
                    """))
                return
            }
            model = end
            let now = try MergePolicyHTTPTests.stored(client)
            let held = now.tasks["Task/1"]
            guard now.problems.isEmpty, held?.version == model.version, held?.values == model.values else {
                Issue.record("round \(round) (seed \(seed)): the store holds \(held.map { "version \($0.version) \(MergePolicyHTTPTests.describe($0.values))" } ?? "no task") instead of version \(model.version) \(MergePolicyHTTPTests.describe(model.values)); \(now.problems)")
                return
            }
        }
        let health = MergePolicyHTTPTests.parse(try client.request("GET", "/v1/healthz"))
        print("merge-policy rounds: \(rounds) rounds of \(writers) writes, seed \(seed); \(health?["writeRequests"]?.int64Value ?? 0) write requests in \(health?["writeTransactions"]?.int64Value ?? 0) transactions")
    }
}
