import Foundation
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite

/// The first disagreement between the server and the reference model, with what is needed
/// to act on it: seed, step, recent requests, expected and actual.
struct ModelMismatch: Error, CustomStringConvertible {
    let description: String
}

/// One request and its answer, kept for failure reports.
struct Exchange {
    let method: String
    let path: String
    let headers: [(String, String)]
    let body: String?
    let status: Int
    let response: String

    var text: String {
        let head = headers.map { "\($0.0): \($0.1)" }.joined(separator: ", ")
        return "\(method) \(path)\(head.isEmpty ? "" : " [\(head)]")\(body.map { " \($0)" } ?? "")\n      -> \(status) \(response.prefix(1500))"
    }
}

/// Settings of a walk, from the environment where given.
struct WalkSettings {
    var steps: Int
    var deadline: Date
    var seed: UInt64
    /// What a failure tells the reader to replay: the seed of the whole test, which for one of
    /// several concurrent clients is not that client's own seed.
    var replay: String?
    var crashers: Bool
    /// Checks loosened for triage, so that a known server bug does not hide the next one
    /// (`MANAGEDSTORE_MODEL_RELAX=name,name`; every check is on by default). See `Relax`.
    var relax: Set<Relax> = []
    var checkEvery = 10

    enum Relax: String, CaseIterable {
        /// A relationship value naming an object of the wrong entity may be `invalid-type`.
        case wrongEntityCode = "wrong-entity-code"
        /// A transaction's `objects` may leave out objects changed only by inverse maintenance
        /// or deleted by a cascade.
        case transactionObjects = "transaction-objects"
        /// A 422 may list only some of the broken rules (at least one, none unexpected).
        case allErrors = "all-errors"
        /// No transaction deletes an object it inserted while a deny relationship of it holds objects.
        case denyThroughRef = "deny-through-ref"
        /// Internal temporary IDs are looked for only where an object is named (`object`,
        /// `conflictingObjects`), not in messages and snapshots.
        case temporaryIDs = "temporary-ids"
        /// No transaction empties a deny relationship after deleting its object (only before).
        case denyUnlinkAfter = "deny-unlink-after"
        /// No transaction passes a unique value from one object to another.
        case uniqueShuffle = "unique-shuffle"
        /// A 409 may list only some of the conflicts (at least one, none unexpected).
        case allConflicts = "all-conflicts"
        /// An error may name an object inserted by the request `Entity/new` (not only by its ref).
        case newNames = "new-names"
    }

    /// `MANAGEDSTORE_MODEL_STEPS` raises the step count (and lifts the time limit unless
    /// `MANAGEDSTORE_MODEL_SECONDS` is given too); `MANAGEDSTORE_MODEL_SEED` replays a seed;
    /// `MANAGEDSTORE_MODEL_CRASHERS=0` leaves out the requests that used to crash the server
    /// (refs to deleted objects or of the wrong entity; they run in-process, so a regression
    /// there ends the test run: `TransactionCrashTests` checks them out of process too).
    static func fromEnvironment(defaultSteps: Int, defaultSeconds: Double, defaultSeed: UInt64) -> WalkSettings {
        let environment = ProcessInfo.processInfo.environment
        let steps = environment["MANAGEDSTORE_MODEL_STEPS"].flatMap(Int.init)
        var seconds = steps == nil ? defaultSeconds : Double.infinity
        if let s = environment["MANAGEDSTORE_MODEL_SECONDS"].flatMap(Double.init) { seconds = s }
        return WalkSettings(steps: steps ?? defaultSteps,
                            deadline: seconds.isFinite ? Date().addingTimeInterval(seconds) : .distantFuture,
                            seed: environment["MANAGEDSTORE_MODEL_SEED"].flatMap { UInt64($0) } ?? defaultSeed,
                            crashers: environment["MANAGEDSTORE_MODEL_CRASHERS"] != "0",
                            relax: Set((environment["MANAGEDSTORE_MODEL_RELAX"] ?? "").split(separator: ",").compactMap { Relax(rawValue: String($0)) }))
    }
}

/// A random walk of requests against a running server, each checked against the reference
/// model: status, problem codes, returned objects, read-back of every written object, key
/// reuse, versions, the transaction answer, and (every few steps) every object of every entity.
final class ModelWalk {
    let port: UInt16
    let schema: RefSchema
    let name: String
    let settings: WalkSettings
    /// Prefix of this client's strings; its objects are found by it when several clients share the server.
    let owner: String
    var store: ReferenceStore
    var generator: OperationGenerator
    /// The highest key ever returned per entity: a new key must be higher.
    private(set) var maxKey: [String: Int64] = [:]
    /// Every ID this walk's inserts were given.
    private(set) var insertedIDs: Set<String> = []
    private var history: [Exchange] = []
    private(set) var step = 0
    private var label = ""
    private(set) var requests = 0
    private var client: RawHTTPClient?
    private var lastUse = Date.distantPast
    private var stopFlag: (() -> Bool)?
    /// Outcomes seen, by kind ("201", "422", "transaction 200", ...): what the walk exercised.
    private(set) var outcomes: [String: Int] = [:]
    var summary: String { outcomes.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ") }

    init(port: UInt16, model: ManagedObjectModel, name: String, settings: WalkSettings, owner: String = "", cap: Int = 60,
         shouldStop: (() -> Bool)? = nil) {
        self.port = port
        self.schema = RefSchema(model)
        self.name = name
        self.settings = settings
        self.owner = owner
        self.store = ReferenceStore(schema: schema)
        self.generator = OperationGenerator(schema: schema, seed: settings.seed, owner: owner, cap: cap, crashers: settings.crashers,
                                            relax: settings.relax)
        self.stopFlag = shouldStop
    }

    // MARK: Running

    /// Runs the walk; returns the number of steps done (fewer when the deadline came first).
    @discardableResult
    func run() throws -> Int {
        for s in 1...settings.steps {
            if Date() > settings.deadline || stopFlag?() == true { break }
            step = s
            let (request, label) = generator.next(store)
            self.label = label
            try perform(request)
            if s % settings.checkEvery == 0 { try checkEverything() }
        }
        label = "final check"
        try checkEverything()
        return step
    }

    func fail(_ what: String, expected: String? = nil, actual: String? = nil) -> ModelMismatch {
        var text = "model-based HTTP test failed: \(name), seed \(settings.seed) (\(settings.replay ?? "MANAGEDSTORE_MODEL_SEED=\(settings.seed) replays it")), step \(step): \(label)\n"
        text += what + "\n"
        if let expected { text += "  expected: \(expected)\n" }
        if let actual { text += "  actual:   \(actual)\n" }
        text += "last requests (oldest first):\n"
        for (i, exchange) in history.enumerated() { text += "  [\(i - history.count + 1)] \(exchange.text)\n" }
        return ModelMismatch(description: text)
    }

    // MARK: HTTP

    struct Answer {
        let status: Int
        let headers: [String: String]
        let text: String
        let json: JSONValue?
        func header(_ name: String) -> String? { headers[name.lowercased()] }
    }

    private func send(_ method: String, _ path: String, body: String? = nil, headers: [(String, String)] = []) throws -> Answer {
        // The server closes idle keep-alive connections after a few seconds: start afresh before that.
        if client == nil || Date().timeIntervalSince(lastUse) > 1 { client = try RawHTTPClient(port: port) }
        let response: RawHTTPClient.Response
        do {
            if let body {
                response = try client!.json(method, path, body, headers: headers)
            } else {
                response = try client!.request(method, path, headers: headers)
            }
        } catch {
            client = nil
            history.append(Exchange(method: method, path: path, headers: headers, body: body, status: 0, response: "\(error)"))
            throw fail("no answer from the server (\(error)): did the request stop the process?")
        }
        lastUse = Date()
        requests += 1
        history.append(Exchange(method: method, path: path, headers: headers, body: body, status: response.status, response: response.text))
        if history.count > 8 { history.removeFirst() }
        if response.header("Connection")?.lowercased() == "close" { client = nil }
        let json = response.body.isEmpty ? nil : try? JSONParser().parse(response.body)
        return Answer(status: response.status, headers: response.headers, text: response.text, json: json)
    }

    private func path(_ id: RefID) -> String { "/v1/objects/\(id.entity)/\(id.pk)" }

    private func targetJSON(_ target: RefTarget) -> JSONValue { .string(target.description) }

    private func send(_ request: RefRequest) throws -> Answer {
        switch request {
        case let .insert(entity, values):
            return try send("POST", "/v1/objects/\(entity)", body: JSONValue.object(values).serialized())
        case let .update(id, values, replace, version, versionInBody):
            var body = values
            var headers: [(String, String)] = []
            if let version {
                if versionInBody { body.append(("_version", .number(String(version)))) } else { headers.append(("If-Match", "\"\(version)\"")) }
            }
            return try send(replace ? "PUT" : "PATCH", path(id), body: JSONValue.object(body).serialized(), headers: headers)
        case let .delete(id, version):
            return try send("DELETE", path(id), headers: version.map { [("If-Match", "\"\($0)\"")] } ?? [])
        case .get(let id):
            return try send("GET", path(id))
        case .transaction(let operations):
            let list: [JSONValue] = operations.map { operation in
                switch operation {
                case let .insert(entity, ref, values):
                    var members: [(String, JSONValue)] = [("op", .string("insert")), ("entity", .string(entity))]
                    if let ref { members.append(("ref", .string(ref))) }
                    members.append(("values", .object(values)))
                    return .object(members)
                case let .update(target, version, values):
                    var members: [(String, JSONValue)] = [("op", .string("update")), ("object", targetJSON(target))]
                    if let version { members.append(("version", .number(String(version)))) }
                    members.append(("values", .object(values)))
                    return .object(members)
                case let .delete(target, version):
                    var members: [(String, JSONValue)] = [("op", .string("delete")), ("object", targetJSON(target))]
                    if let version { members.append(("version", .number(String(version)))) }
                    return .object(members)
                }
            }
            return try send("POST", "/v1/transactions", body: JSONValue.object([("operations", .array(list))]).serialized())
        }
    }

    // MARK: One step

    func perform(_ request: RefRequest) throws {
        let prediction = store.predict(request)
        let answer = try send(request)
        let kind: String
        switch request {
        case .transaction: kind = "transaction "
        case .insert: kind = "POST "
        case .update(_, _, let replace, _, _): kind = replace ? "PUT " : "PATCH "
        case .delete: kind = "DELETE "
        case .get: kind = "GET "
        }
        outcomes[kind + String(answer.status), default: 0] += 1
        switch prediction.outcome {
        case .ambiguous(let why):
            throw fail("the generator made a request whose answer the contract leaves open (\(why)): a bug of the test")
        case .success:
            try checkSuccess(request, prediction, answer)
            return
        case .notFound(let what):
            if prediction.working.usesDeadObject && [404, 422].contains(answer.status) {
                try checkProblem(answer, code: answer.status == 404 ? "not-found" : "validation")
            } else {
                try expectStatus(answer, 404, "not-found", because: "\(what) does not exist")
                try checkProblem(answer, code: "not-found")
            }
        case let .validation(expected, tolerated):
            try expectStatus(answer, 422, "validation", because: "validation errors \(expected)")
            try checkProblem(answer, code: "validation")
            try checkErrors(answer, expected: expected, tolerated: tolerated)
        case .conflict(let expected):
            try expectStatus(answer, 409, "conflict", because: "conflicts \(expected)")
            try checkProblem(answer, code: "conflict")
            try checkConflicts(answer, expected: expected)
        }
        try checkUnchanged(prediction)
    }

    private func expectStatus(_ answer: Answer, _ status: Int, _ code: String?, because: String) throws {
        guard answer.status == status else {
            throw fail("wrong status", expected: "\(status)\(code.map { " \($0)" } ?? "") (\(because))", actual: "\(answer.status) \(answer.text.prefix(2000))")
        }
    }

    /// Every error answer: problem+json with the expected code, and nothing internal in it.
    private func checkProblem(_ answer: Answer, code: String) throws {
        guard answer.header("Content-Type")?.hasPrefix("application/problem+json") == true else {
            throw fail("an error answer is not application/problem+json", actual: answer.header("Content-Type") ?? "no Content-Type")
        }
        guard answer.json?["code"]?.stringValue == code else {
            throw fail("wrong problem code", expected: code, actual: answer.json?["code"].map { "\($0)" } ?? "none: \(answer.text)")
        }
        for word in ["SQLite", "sqlite3", "INSERT", "UPDATE ", "SELECT "] where answer.text.contains(word) {
            throw fail("a problem body shows the store's internals (\(word))", actual: answer.text)
        }
        var named = answer.text
        if settings.relax.contains(.temporaryIDs) {
            let items = (answer.json?["errors"]?.arrayValue ?? []) + (answer.json?["conflicts"]?.arrayValue ?? [])
            named = items.map { item in
                ([item["object"] ?? .null] + (item["conflictingObjects"]?.arrayValue ?? [])).map { $0.serialized() }.joined(separator: " ")
            }.joined(separator: " ")
        }
        if let range = Self.temporaryID(in: named) {
            throw fail("a problem body names an internal temporary ID (\(named[range]))", actual: answer.text)
        }
    }

    /// `/t` followed by digits: an internal temporary ID such as `Genre/t7`.
    static func temporaryID(in text: String) -> Range<String.Index>? {
        var search = text.startIndex
        while let found = text.range(of: "/t", range: search..<text.endIndex) {
            var end = found.upperBound
            while end < text.endIndex, text[end].isASCII, text[end].isNumber { end = text.index(after: end) }
            if end > found.upperBound {
                let start = text[..<found.lowerBound].lastIndex { !($0.isLetter || $0.isNumber) }.map { text.index(after: $0) } ?? text.startIndex
                return start..<end
            }
            search = found.upperBound
        }
        return nil
    }

    private func nameMatches(_ actual: String?, _ allowed: Set<String>?) -> Bool {
        guard let allowed else { return true }
        guard let actual else { return false }
        if allowed.contains(actual) { return true }
        if settings.relax.contains(.newNames), actual.hasSuffix("/new"), allowed.contains("\(actual.dropLast(4))/*") { return true }
        for pattern in allowed where pattern.hasSuffix("/*") {
            let entity = pattern.dropLast(2)
            if let id = RefID(text: actual), id.entity == entity { return true }
        }
        return false
    }

    private func checkErrors(_ answer: Answer, expected: [ExpectedError], tolerated: [ExpectedError]) throws {
        guard let list = answer.json?["errors"]?.arrayValue else { throw fail("a 422 answer without \"errors\"", actual: answer.text) }
        let actual = list.map { (object: $0["object"]?.stringValue, property: $0["property"]?.stringValue, code: $0["code"]?.stringValue ?? "?") }
        let relaxCodes = settings.relax.contains(.wrongEntityCode)
        func matches(_ a: (object: String?, property: String?, code: String), _ e: ExpectedError) -> Bool {
            let sameCode = a.code == e.code || relaxCodes && Set([a.code, e.code]) == ["invalid-type", "invalid-relationship"]
            return a.property == e.property && sameCode && nameMatches(a.object, e.objects)
        }
        let describeActual = actual.map { "\($0.object ?? "-").\($0.property ?? "-"): \($0.code)" }
        for e in expected where !actual.contains(where: { matches($0, e) }) && !(settings.relax.contains(.allErrors) && !actual.isEmpty) {
            throw fail("the 422 misses an error (a 422 lists every broken rule of the write at once)",
                       expected: "\(expected)", actual: "\(describeActual)")
        }
        for a in actual where !(expected + tolerated).contains(where: { matches(a, $0) }) {
            throw fail("the 422 reports an error the reference does not expect", expected: "\(expected)", actual: "\(describeActual)")
        }
    }

    private func checkConflicts(_ answer: Answer, expected: [ExpectedConflict]) throws {
        guard let list = answer.json?["conflicts"]?.arrayValue else { throw fail("a 409 answer without \"conflicts\"", actual: answer.text) }
        var unmatched = list
        for conflict in expected {
            let index = unmatched.firstIndex { actual in
                switch conflict {
                case let .locking(object, old, new):
                    return actual["kind"]?.stringValue == "optimistic-locking" && actual["object"]?.stringValue == object
                        && actual["oldVersion"]?.int64Value == old && actual["newVersion"]?.int64Value == new
                case let .uniqueness(entity, constraint, values, holders, exact):
                    guard actual["kind"]?.stringValue == "uniqueness", actual["entity"]?.stringValue == entity,
                          actual["constraint"]?.arrayValue?.compactMap(\.stringValue) == constraint else { return false }
                    for (key, value) in values {
                        guard let type = schema.attribute(entity, key)?.type, let json = actual["values"]?[key],
                              RValue(json: json, type: type) == value else { return false }
                    }
                    let named = Set(actual["conflictingObjects"]?.arrayValue?.compactMap(\.stringValue) ?? [])
                    return exact ? named == holders : named.isSubset(of: holders)
                }
            }
            guard let index else {
                if settings.relax.contains(.allConflicts) { continue }
                throw fail("the 409 misses a conflict (or names other objects)", expected: "\(expected)", actual: answer.text)
            }
            unmatched.remove(at: index)
        }
        if settings.relax.contains(.allConflicts) { return }
        if !unmatched.isEmpty { throw fail("the 409 reports conflicts the reference does not expect", expected: "\(expected)", actual: answer.text) }
    }

    // MARK: Comparing objects

    /// Where an object's JSON differs from the reference's values; nil when equal.
    func difference(_ actual: JSONValue?, _ expected: RefObject, id: RefID, versions: ClosedRange<Int64>) -> String? {
        guard let actual, let members = actual.objectMembers else { return "not a JSON object" }
        let entity = schema.entity(id.entity)
        let keys = Set(members.map(\.0))
        let wanted = Set(["_id", "_version"] + entity.attributes.map(\.name) + entity.relationships.map(\.name))
        if keys != wanted { return "properties \(keys.sorted()) instead of \(wanted.sorted())" }
        if actual["_id"]?.stringValue != id.description { return "_id \(actual["_id"].map { "\($0)" } ?? "none") instead of \(id)" }
        guard let version = actual["_version"]?.int64Value, versions.contains(version) else {
            return "_version \(actual["_version"].map { "\($0)" } ?? "none"), expected \(versions.count == 1 ? "\(versions.lowerBound)" : "\(versions)")"
        }
        var problems: [String] = []
        for attribute in entity.attributes {
            let value = actual[attribute.name]!
            let want = expected.attributes[attribute.name] ?? .null
            if RValue(json: value, type: attribute.type) != want { problems.append("\(attribute.name): \(value.serialized()) instead of \(want)") }
        }
        for relationship in entity.relationships {
            let value = actual[relationship.name]!
            if relationship.isToMany {
                // Primary-key order: keys are unique across a hierarchy, so a relationship to a
                // parent entity orders its kinds' objects together.
                let want = (expected.toMany[relationship.name] ?? []).sorted { ($0.pk, $0.entity) < ($1.pk, $1.entity) }
                let got = value.arrayValue?.map { $0.stringValue.flatMap { RefID(text: $0) } }
                if got == nil || got!.contains(where: { $0 == nil }) || got!.map({ $0! }) != want {
                    problems.append("\(relationship.name): \(value.serialized()) instead of \(want.map(\.description)) (in key order)")
                }
            } else {
                let want = expected.toOne[relationship.name]
                let got: RefID?? = value.isNull ? .some(nil) : value.stringValue.flatMap { RefID(text: $0) }.map { .some($0) }
                if got != .some(want) { problems.append("\(relationship.name): \(value.serialized()) instead of \(want.map(\.description) ?? "null")") }
            }
        }
        return problems.isEmpty ? nil : problems.joined(separator: "; ")
    }

    private func exact(_ object: RefObject) -> ClosedRange<Int64> { object.version...object.version }

    /// GETs one object and compares it; returns its version.
    @discardableResult
    private func readBack(_ id: RefID, _ expected: RefObject, versions: ClosedRange<Int64>, why: String) throws -> Int64 {
        let answer = try send("GET", path(id))
        guard answer.status == 200 else {
            throw fail("\(id) does not read back (\(why))", expected: "200 with \(expected)", actual: "\(answer.status) \(answer.text)")
        }
        if let problem = difference(answer.json, expected, id: id, versions: versions) {
            throw fail("\(id) reads back wrong (\(why)): \(problem)", actual: answer.text)
        }
        let version = answer.json!["_version"]!.int64Value!
        if answer.header("ETag") != "\"\(version)\"" {
            throw fail("the ETag of \(id) is not its version", expected: "\"\(version)\"", actual: answer.header("ETag") ?? "none")
        }
        return version
    }

    private func expectGone(_ id: RefID, why: String) throws {
        let answer = try send("GET", path(id))
        guard answer.status == 404 else { throw fail("\(id) still reads back (\(why))", expected: "404", actual: "\(answer.status) \(answer.text)") }
    }

    // MARK: Success

    /// A new key must name its entity and be higher than every key ever returned for it.
    private func checkNewKey(_ text: String?, entity: String, _ seen: inout Set<RefID>) throws -> RefID {
        guard let text, let id = RefID(text: text), id.entity == entity else {
            throw fail("an insert answered an ID that is not \(entity)/<key>", actual: text ?? "none")
        }
        if let max = maxKey[entity], id.pk <= max {
            throw fail("an insert was given key \(id.pk), not above the highest key ever returned for \(entity) (\(max)): keys are reused", actual: text)
        }
        guard seen.insert(id).inserted else { throw fail("two inserts of one request were given the same ID \(id)") }
        return id
    }

    private func checkSuccess(_ request: RefRequest, _ prediction: Prediction, _ answer: Answer) throws {
        let w = prediction.working
        var mapping: [RefID: RefID] = [:]
        var newIDs: Set<RefID> = []
        switch request {
        case .insert(let entity, _):
            try expectStatus(answer, 201, nil, because: "a valid insert")
            let id = try checkNewKey(answer.json?["_id"]?.stringValue, entity: entity, &newIDs)
            mapping[w.inserted[0]] = id
            if answer.header("Location") != path(id) { throw fail("wrong Location", expected: path(id), actual: answer.header("Location") ?? "none") }
        case .update:
            try expectStatus(answer, 200, nil, because: "a valid update")
        case .delete:
            try expectStatus(answer, 204, nil, because: "a valid delete")
        case .get:
            throw fail("a read of a missing object predicted to succeed: a bug of the test")
        case .transaction:
            try expectStatus(answer, 200, nil, because: "a valid transaction")
            guard let ids = answer.json?["ids"]?.objectMembers else { throw fail("a transaction answer without \"ids\"", actual: answer.text) }
            let surviving = w.inserted.filter { w.live[$0] != nil }
            let wantedRefs = Set(surviving.compactMap { w.refNames[$0] })
            let gotRefs = Set(ids.map(\.0))
            if gotRefs != wantedRefs || ids.count != gotRefs.count {
                throw fail("\"ids\" must map every ref of an insert that survived the transaction, and nothing else",
                           expected: "\(wantedRefs.sorted())", actual: "\(ids.map(\.0))")
            }
            for temporary in surviving {
                guard let ref = w.refNames[temporary] else { continue }
                mapping[temporary] = try checkNewKey(answer.json!["ids"]![ref]!.stringValue, entity: temporary.entity, &newIDs)
            }
        }
        for id in newIDs {
            maxKey[id.entity] = max(maxKey[id.entity] ?? 0, id.pk)
            insertedIDs.insert(id.description)
        }
        func map(_ id: RefID) -> RefID { mapping[id] ?? id }
        func final(_ object: RefObject) -> RefObject {
            var copy = object
            copy.toOne = copy.toOne.mapValues(map)
            copy.toMany = copy.toMany.mapValues { Set($0.map(map)) }
            return copy
        }
        let (changed, deleted) = store.differences(w)
        func versions(_ id: RefID) -> ClosedRange<Int64> {
            prediction.allowedVersions[id] ?? store[id].map(exact) ?? 1...1
        }

        // The answer's objects.
        switch request {
        case .insert, .update:
            let id: RefID
            if case .update(let target, _, _, _, _) = request { id = target } else { id = w.inserted[0] }
            if let problem = difference(answer.json, final(w.live[id]!), id: map(id), versions: versions(id)) {
                throw fail("the answer's object is not what was written: \(problem)", actual: answer.text)
            }
            if let version = answer.json?["_version"]?.int64Value, answer.header("ETag") != "\"\(version)\"" {
                throw fail("the ETag is not the object's version", expected: "\"\(version)\"", actual: answer.header("ETag") ?? "none")
            }
        case .transaction:
            guard let listed = answer.json?["objects"]?.arrayValue else { throw fail("a transaction answer without \"objects\"", actual: answer.text) }
            var listedIDs: Set<RefID> = []
            var listedDeleted: Set<RefID> = []
            let inverse = Dictionary(uniqueKeysWithValues: mapping.map { ($0.value, $0.key) })
            for object in listed {
                guard let text = object["_id"]?.stringValue, let id = RefID(text: text) else {
                    throw fail("an entry of \"objects\" without a valid _id", actual: object.serialized())
                }
                guard !listedIDs.contains(id) && !listedDeleted.contains(id) else { throw fail("\"objects\" lists \(id) twice", actual: answer.text) }
                if object["_deleted"]?.boolValue == true {
                    listedDeleted.insert(id)
                    continue
                }
                listedIDs.insert(id)
                let working = inverse[id] ?? id
                guard let expected = w.live[working] else {
                    throw fail("\"objects\" lists \(id), which the transaction did not leave alive", actual: answer.text)
                }
                if let problem = difference(object, final(expected), id: id, versions: versions(working)) {
                    throw fail("\"objects\" holds a wrong final state of \(id): \(problem)", actual: object.serialized())
                }
            }
            // "Touched" (the contract): every object whose stored state changed, and every
            // object an operation names, even when its values end as they were.
            let mustList = Set(changed.map(map)).union(w.addressed.filter { w.live[$0] != nil })
            let mayList = mustList
            var missing = mustList.subtracting(listedIDs)
            if settings.relax.contains(.transactionObjects) {
                // Only what the operations addressed or inserted must be listed.
                missing = missing.filter { id in w.addressed.contains(id) || mapping.values.contains(id) }
            }
            let extra = listedIDs.subtracting(mayList)
            if !missing.isEmpty || !extra.isEmpty {
                throw fail("\"objects\" must list exactly the objects the transaction touched (changed, inverse maintenance included, or named by an operation)"
                           + (missing.isEmpty ? "" : "; missing \(missing.sorted())") + (extra.isEmpty ? "" : "; not changed: \(extra.sorted())"),
                           expected: "\(mustList.sorted())", actual: "\(listedIDs.sorted())")
            }
            if listedDeleted != deleted && !(settings.relax.contains(.transactionObjects) && listedDeleted.isSubset(of: deleted)) {
                throw fail("\"objects\" must list every object the transaction deleted (cascades included) as _deleted, and no other",
                           expected: "\(deleted.sorted())", actual: "\(listedDeleted.sorted())")
            }
        case .delete, .get:
            break
        }

        // Every changed, addressed or inserted object reads back as the reference says; deleted ones are gone.
        var learned: [RefID: Int64] = [:]
        for id in changed.union(w.addressed.filter { w.live[$0] != nil }).sorted() {
            learned[map(id)] = try readBack(map(id), final(w.live[id]!), versions: versions(id), why: "written by this request")
        }
        for id in deleted.sorted() { try expectGone(id, why: "deleted by this request") }
        store.commit(prediction, mapping: mapping, versions: learned)
    }

    // MARK: Failure

    /// A refused write leaves the store as it was: every object it would have changed reads
    /// back unchanged, and no object was added.
    private func checkUnchanged(_ prediction: Prediction) throws {
        let w = prediction.working
        let (changed, deleted) = store.differences(w)
        for id in changed.union(deleted).union(w.addressed).filter({ !$0.isTemporary }).sorted() {
            guard let object = store[id] else { continue }
            try readBack(id, object, versions: exact(object), why: "a refused request must leave it unchanged")
        }
        for entity in Set(w.inserted.map(\.entity)).sorted() {
            let answer = try send("GET", listPath(entity, limit: 1))
            let count = answer.json?["count"]?.int64Value
            if count != Int64(store.listedCount(entity)) {
                throw fail("a refused request changed the number of \(entity) objects", expected: "\(store.listedCount(entity))", actual: answer.text)
            }
        }
    }

    // MARK: Everything

    private func listPath(_ entity: String, limit: Int, after: String? = nil) -> String {
        var path = "/v1/objects/\(entity)?limit=\(limit)&count=true"
        if !owner.isEmpty, let attribute = schema.ownerAttribute(entity) {
            path += "&where=" + "\(attribute) BEGINSWITH \"\(owner)\"".queryEncoded
        }
        if let after { path += "&after=" + after.queryEncoded }
        return path
    }

    /// Every entity lists exactly the reference's objects, with equal values, the right
    /// count, and relationships whose inverses hold the object back.
    func checkEverything() throws {
        var fetched: [RefID: JSONValue] = [:]
        for entity in schema.listedEntities.map(\.name) {
            var after: String?
            var listed: [RefID] = []
            repeat {
                let answer = try send("GET", listPath(entity, limit: 1000, after: after))
                guard answer.status == 200, let objects = answer.json?["objects"]?.arrayValue else {
                    throw fail("listing \(entity) failed", actual: "\(answer.status) \(answer.text)")
                }
                if answer.json?["count"]?.int64Value != Int64(store.listedCount(entity)) {
                    throw fail("the count of \(entity) is wrong", expected: "\(store.listedCount(entity))", actual: answer.json?["count"].map { "\($0)" } ?? "none")
                }
                for object in objects {
                    guard let id = object["_id"]?.stringValue.flatMap({ RefID(text: $0) }) else { throw fail("a listed object without _id", actual: object.serialized()) }
                    listed.append(id)
                    fetched[id] = object
                }
                after = answer.json?["next"]?.stringValue
            } while after != nil
            let expected = store.listedIDs(entity)
            if Set(listed) != Set(expected) || listed.count != expected.count {
                let missing = Set(expected).subtracting(listed).sorted(), extra = Set(listed).subtracting(expected).sorted()
                throw fail("listing \(entity) does not give the reference's objects: missing \(missing), not expected \(extra)",
                           expected: "\(expected.count) objects", actual: "\(listed.count) objects")
            }
            for id in expected {
                if let problem = difference(fetched[id], store[id]!, id: id, versions: exact(store[id]!)) {
                    throw fail("listing \(entity): \(id) differs from the reference: \(problem)", actual: fetched[id]!.serialized())
                }
            }
        }
        // Inverses, as the server answers them.
        for (id, object) in fetched {
            for relationship in schema.entity(id.entity).relationships {
                let inverse = schema.inverse(of: relationship)
                let value = object[relationship.name]!
                let targets = (value.arrayValue ?? [value]).compactMap { $0.stringValue.flatMap { RefID(text: $0) } }
                for target in targets {
                    guard let other = fetched[target] else { throw fail("\(id).\(relationship.name) holds \(target), which is not listed") }
                    let back = other[inverse.name]!
                    let holds = back.arrayValue.map { $0.contains(.string(id.description)) } ?? (back.stringValue == id.description)
                    if !holds { throw fail("\(id).\(relationship.name) holds \(target), but \(target).\(inverse.name) does not hold \(id)", actual: other.serialized()) }
                }
            }
        }
    }
}
