import Foundation
import Logging
import ManagedStoreCore
import ManagedStoreHTTP
import ManagedStoreOpenAPI

/// How the service behaves, from `managedstore serve`'s flags.
public struct ServiceConfiguration: Sendable {
    /// The merge policy when a request names none.
    public var mergePolicy: MergePolicy = .error
    /// Refuse PATCH, PUT and DELETE without a base version (428).
    public var requireIfMatch = false
    /// Drain every waiting write into one transaction (off: one commit per request, for comparison).
    public var groupCommit = true
    /// How long one fetch or count may run (in SQLite and in memory) before it is stopped
    /// and answered 503 `query-timeout`.
    public var queryTimeout: Duration = .seconds(5)
    /// How long the persistent history is kept (pruned on a timer).
    public var historyRetention: HistoryRetention.Setting = .sevenDays
    /// The largest request body; for an NDJSON import (never held whole) the longest line, and
    /// the most an `?atomic=true` import may hold. `ManagedStoreServer` sets it from the HTTP
    /// configuration.
    public var maxBodyBytes = 8_388_608
    /// The bearer tokens the server accepts; none: every request is allowed (the server then
    /// listens on loopback only, unless told `--insecure-open`).
    public var accessTokens: [AccessToken] = []
    /// Where the server's own lines go (`LineLogHandler` in `serve`); by default nowhere.
    public var logger = Logger(label: "managedstore", factory: { _ in SwiftLogNoOpLogHandler() })
    /// The line per request (`serve` turns it on unless `--log-requests off`); by default none.
    public var requestLog: RequestLog?

    public init() {}
}

/// The REST API (`openapi/openapi.yaml`; the README's "The HTTP API in five minutes") over one
/// store, as a router: each request goes to
/// the read handlers (answered on the front thread), or is parsed into a `WriteRequest` and
/// queued on the one write queue (its connection suspended until the answer).
public final class ManagedStoreService: HTTPRequestHandler {
    public let coordinator: PersistentStoreCoordinator
    let configuration: ServiceConfiguration
    let writes: WriteQueue
    let reads: ReadHandlers
    let parser: WriteRequestParser
    let changes: ChangeFeed
    let retention: HistoryRetention?
    /// Deletes idempotency records past the store's key lifetime.
    let idempotencyExpiry: IdempotencyExpiry
    /// Every entity's JSON keys, made once.
    let layouts: JSONLayouts
    let access: AccessControl
    let metrics: ServiceMetrics
    /// The OpenAPI document of this model (`ModelOpenAPI`), made once.
    let openAPIDocument: [UInt8]
    let openAPIYAML: [UInt8]
    private let ready = ReadyFlag()

    public init(coordinator: PersistentStoreCoordinator, configuration: ServiceConfiguration, metrics: ServiceMetrics = ServiceMetrics()) {
        self.coordinator = coordinator
        self.configuration = configuration
        self.metrics = metrics
        let document = ModelOpenAPI.document(for: coordinator.model)
        self.openAPIDocument = document.serialized().utf8Array
        self.openAPIYAML = YAMLWriter.yaml(document).utf8Array
        self.layouts = JSONLayouts(coordinator.model)
        self.access = AccessControl(tokens: configuration.accessTokens)
        self.reads = ReadHandlers(coordinator: coordinator, configuration: configuration, layouts: layouts)
        self.changes = ChangeFeed(coordinator: coordinator, layouts: layouts)
        self.parser = WriteRequestParser(coordinator: coordinator, configuration: configuration)
        self.writes = WriteQueue(coordinator: coordinator, groupCommit: configuration.groupCommit)
        if case .period(let period) = configuration.historyRetention {
            self.retention = HistoryRetention(coordinator: coordinator, period: period)
        } else {
            self.retention = nil
        }
        self.idempotencyExpiry = IdempotencyExpiry(coordinator: coordinator)
    }

    public func start() {
        writes.start()
        retention?.start()
        idempotencyExpiry.start()
        ready.set(true)
    }

    /// Stops taking writes and waits until `deadline` for the queued ones to be answered and
    /// committed. Returns whether the queue finished by then.
    @discardableResult
    public func stop(deadline: DispatchTime = .distantFuture) -> Bool {
        ready.set(false)
        retention?.stop()
        idempotencyExpiry.stop()
        let finished = writes.stop(deadline: deadline)
        // After the last commit: long-polls are answered with what they have, streams end.
        changes.stop()
        return finished
    }

    var model: ManagedObjectModel { coordinator.model }

    /// An NDJSON batch insert is read as it arrives (`NDJSONImport`). Anything about it that is
    /// wrong before the body (an unknown entity, a bad parameter) is left to `handle`, which
    /// answers it after the body.
    public func bodyStream(for request: HTTPRequest) -> HTTPBodyStream? {
        guard request.method == "POST", request.mediaType == "application/x-ndjson" else { return nil }
        let segments = request.pathSegments
        guard segments.count == 3, segments[0] == "v1", segments[1] == "objects", let entity = model.entity(named: segments[2]), !entity.isAbstract,
              // A request the token does not allow is answered by `handle`, never read.
              access.allows(request, .write, on: .entity(entity.name)),
              let policy = try? parser.mergePolicy(request, alsoAllowed: ["atomic"]), let atomic = try? WriteRequestParser.atomic(request)
        else { return nil }
        // A malformed Idempotency-Key is answered by `handle` too.
        let key: IdempotencyKey?
        do { key = try IdempotentWrite.key(of: request) } catch { return nil }
        return NDJSONImport(entity: entity, coordinator: coordinator, writes: writes, policy: policy, author: parser.author(request),
                            atomic: atomic, byteLimit: configuration.maxBodyBytes,
                            idempotency: key.map { ($0, IdempotentWrite.fingerprintStart(of: request, tokenName: (try? access.authenticate(request))??.name)) })
    }

    public func handle(_ request: HTTPRequest) -> HTTPHandlerOutcome {
        do {
            return try route(request)
        } catch let problem as Problem {
            return .respond(problem.response)
        } catch {
            return .respond(Problem.internalError("\(error)").response)
        }
    }

    // MARK: Routing

    private func route(_ request: HTTPRequest) throws -> HTTPHandlerOutcome {
        let segments = request.pathSegments
        guard segments.first == "v1" else { throw Problem.notFound("no resource at \(request.path); the API lives under /v1") }
        let rest = segments[1...]  // indexes from 1: rest[2] is segments[2]
        // Probes never need a token; everything else is checked (401) before anything is read.
        let isProbe = request.method == "GET" && rest.count == 1 && (rest.first == "healthz" || rest.first == "readyz")
        let token = isProbe ? nil : try access.authenticate(request)
        request.notes.tokenName = token?.name
        switch (request.method, rest.count, rest.first) {
        case ("GET", 1, "model"), ("HEAD", 1, "model"):
            try access.require(token, .read, on: .anyEntity)
            return .respond(.json(200, model.jsonValue.serialized().utf8Array))
        case ("GET", 1, "healthz"):
            let (requests, batches) = writes.counters
            let body = JSONValue.object([("status", .string("ok")), ("writeRequests", .number(String(requests))),
                                         ("writeTransactions", .number(String(batches))), ("commits", .number(String(coordinator.commitCount))),
                                         ("walBytes", .number(String(coordinator.walSize)))])
            return .respond(.json(200, body.serialized().utf8Array))
        case ("GET", 1, "readyz"):
            guard ready.value else { throw Problem.unavailable("the store is not ready") }
            return .respond(.json(200, Array(#"{"status":"ready"}"#.utf8)))
        case ("GET", 1, "metrics"):
            try access.require(token, .admin, on: .wholeStore)
            return .respond(HTTPResponse(status: 200, headers: [("Content-Type", PrometheusText.contentType)], body: metricsText().utf8Array))
        case ("GET", 1, "openapi.yaml"):
            try access.require(token, .read, on: .anyEntity)
            // The same document as openapi.json (the model's), in YAML.
            return .respond(HTTPResponse(status: 200, headers: [("Content-Type", "application/yaml")], body: openAPIYAML))
        case ("GET", 1, "openapi.json"):
            try access.require(token, .read, on: .anyEntity)
            return .respond(.json(200, openAPIDocument))
        case ("DELETE", 1, "changes"):
            try access.require(token, .admin, on: .wholeStore)
            return try HistoryPruning.handle(request, coordinator: coordinator, retention: configuration.historyRetention)
        case (_, 1, "changes"):
            guard request.method == "GET" else { throw Problem.methodNotAllowed(request.method, allowed: ["GET", "DELETE"]) }
            try access.require(token, .read, on: .anyEntity)
            return try changes.handle(request, readable: access.entities(token, .read))
        case (_, 1, "transactions"):
            guard request.method == "POST" else { throw Problem.methodNotAllowed(request.method, allowed: ["POST"]) }
            try access.require(token, .write, on: .anyEntity)
            return try enqueue(request) {
                let transaction = try parser.transaction(request)
                for entity in transaction.operation.entitiesWritten.sorted() { try access.require(token, .write, on: .entity(entity)) }
                return transaction
            }
        case (_, 2, "objects"):
            return try collection(request, entityName: rest[2], token: token)
        case (_, 3, "objects") where rest[3] == "aggregate":
            let entity = try parser.entity(rest[2])
            guard request.method == "GET" || request.method == "HEAD" else { throw Problem.methodNotAllowed(request.method, allowed: ["GET", "HEAD"]) }
            try access.require(token, .read, on: .entity(entity.name))
            try requireKinds(token, .read, of: entity)
            try requireReachedBySelect(request, token, from: entity)
            return .respond(try reads.aggregate(request, entity: entity))
        case (_, 3, "objects"):
            return try single(request, entityName: rest[2], key: rest[3], token: token)
        case (_, 4, "objects"):
            return try fetchedProperty(request, entityName: rest[2], key: rest[3], name: rest[4], token: token)
        case (_, 1, "model"), (_, 1, "healthz"), (_, 1, "readyz"), (_, 1, "openapi.json"), (_, 1, "openapi.yaml"), (_, 1, "metrics"):
            throw Problem.methodNotAllowed(request.method, allowed: ["GET"])
        default:
            throw Problem.notFound("no resource at \(request.path)")
        }
    }

    private func collection(_ request: HTTPRequest, entityName: String, token: AccessToken?) throws -> HTTPHandlerOutcome {
        let entity = try parser.entity(entityName)
        try access.require(token, AccessControl.level(for: request.method), on: .entity(entity.name))
        try requireKinds(token, AccessControl.level(for: request.method), of: entity)
        switch request.method {
        case "GET", "HEAD":
            try requireIncluded(request, token, from: entity)
            return .respond(try reads.fetch(request, entity: entity))
        case "POST":
            return try enqueue(request) { try parser.insert(request, entity: entity) }
        case "PATCH":
            return try enqueue(request) { try parser.batchUpdate(request, entity: entity) }
        case "DELETE":
            return try enqueue(request) { try parser.batchDelete(request, entity: entity) }
        default:
            throw Problem.methodNotAllowed(request.method, allowed: ["GET", "POST", "PATCH", "DELETE"])
        }
    }

    /// A parent entity's objects are those of its sub-entities, each answered whole: a list,
    /// an aggregate or a batch change of the parent needs the same access to every one of them.
    private func requireKinds(_ token: AccessToken?, _ level: AccessScope.Level, of entity: EntityDescription) throws(Problem) {
        for kind in model.kindNames(of: entity.name) where kind != entity.name { try access.require(token, level, on: .entity(kind)) }
    }

    /// `include` embeds the related objects whole: it needs read access to every entity it
    /// reaches, and to each sub-entity of a parent it reaches. (A path the model does not have
    /// is the read's own 400.)
    private func requireIncluded(_ request: HTTPRequest, _ token: AccessToken?, from entity: EntityDescription) throws(Problem) {
        guard let text = request.queryValue("include"), let tree = try? IncludeTree(text, entity: entity, model: model) else { return }
        func walk(_ tree: IncludeTree, from entity: EntityDescription) throws(Problem) {
            for (name, child) in tree.children.sorted(by: { $0.key < $1.key }) {
                guard let destination = entity.relationship(named: name).flatMap({ model.entity(named: $0.destination) }) else { continue }
                try requireRead(destination, token)
                try walk(child, from: destination)
            }
        }
        try walk(tree, from: entity)
    }

    /// An aggregate's `select` answers the values its key paths reach: through a relationship,
    /// another entity's, which needs read access as `include` does.
    private func requireReachedBySelect(_ request: HTTPRequest, _ token: AccessToken?, from entity: EntityDescription) throws(Problem) {
        guard let text = request.queryValue("select") else { return }
        for item in text.split(separator: ",") {
            // `[name:]key.path` or `[name:][key.path.]function()`: the relationships come first.
            var current = entity
            for step in (item.split(separator: ":", maxSplits: 1).last ?? item).split(separator: ".") {
                let name = step.trimmingCharacters(in: .whitespaces)
                guard let destination = current.relationship(named: name).flatMap({ model.entity(named: $0.destination) }) else { break }
                try requireRead(destination, token)
                current = destination
            }
        }
    }

    private func requireRead(_ entity: EntityDescription, _ token: AccessToken?) throws(Problem) {
        try access.require(token, .read, on: .entity(entity.name))
        try requireKinds(token, .read, of: entity)
    }

    /// GET /v1/objects/{Entity}/{pk}/{fetchedProperty}: read on the entity and on the objects
    /// it answers (the destination and its sub-entities).
    private func fetchedProperty(_ request: HTTPRequest, entityName: String, key: String, name: String, token: AccessToken?) throws -> HTTPHandlerOutcome {
        let entity = try parser.entity(entityName)
        guard let property = entity.fetchedProperty(named: name) else {
            throw Problem.notFound("no resource at \(request.path): \(entity.name) has no fetched property '\(name.prefix(64))'")
        }
        guard request.method == "GET" || request.method == "HEAD" else { throw Problem.methodNotAllowed(request.method, allowed: ["GET", "HEAD"]) }
        try access.require(token, .read, on: .entity(entity.name))
        if let destination = model.entity(named: property.destinationEntityName) {
            try requireRead(destination, token)
            try requireIncluded(request, token, from: destination)
        }
        guard let pk = Int64(key), pk > 0, let id = coordinator.managedObjectID(entityName: entity.name, primaryKey: pk) else {
            throw Problem.notFound("no object \(entityName)/\(key.prefix(40)) (keys are positive integers)")
        }
        return .respond(try reads.fetchedProperty(request, of: id, property))
    }

    private func single(_ request: HTTPRequest, entityName: String, key: String, token: AccessToken?) throws -> HTTPHandlerOutcome {
        let entity = try parser.entity(entityName)
        try access.require(token, AccessControl.level(for: request.method), on: .entity(entity.name))
        guard let pk = Int64(key), pk > 0, let id = coordinator.managedObjectID(entityName: entity.name, primaryKey: pk) else {
            throw Problem.notFound("no object \(entityName)/\(key.prefix(40)) (keys are positive integers)")
        }
        switch request.method {
        case "GET", "HEAD":
            try requireIncluded(request, token, from: entity)
            return .respond(try reads.getOne(request, id: id, entity: entity))
        case "PATCH", "PUT":
            return try enqueue(request) { try parser.update(request, id: id, entity: entity, replace: request.method == "PUT") }
        case "DELETE":
            return try enqueue(request) { try parser.delete(request, id: id) }
        default:
            throw Problem.methodNotAllowed(request.method, allowed: ["GET", "PATCH", "PUT", "DELETE"])
        }
    }

    /// Parses the write (`parse`), suspends the connection and queues it; its answer is
    /// written as JSON off the write thread, then the connection resumes with it. A write with
    /// an `Idempotency-Key` is carried out once per key, and its answer made on the write
    /// thread, to be stored with it (`IdempotentWrite`). The key is checked first: a malformed
    /// one is 400 whatever the body holds.
    private func enqueue(_ request: HTTPRequest, _ parse: () throws -> WriteRequest) throws -> HTTPHandlerOutcome {
        let key = try IdempotentWrite.key(of: request)
        let write = try parse()
        guard let key else {
            return .suspend { [writes, layouts, metrics] deferred in
                writes.submit({ context in write.perform(in: context) }, completion: { outcome in
                    metrics.recordConflicts(of: outcome, policy: write.mergePolicy.name)
                    // Resumed from the write queue's thread; the answer is made on the MHD thread.
                    deferred.complete { WriteResponse.make(outcome, layouts: layouts) }
                })
            }
        }
        let keyed = IdempotentWrite(key: key, fingerprint: IdempotentWrite.fingerprint(of: request))
        return .suspend { [writes, layouts, metrics] deferred in
            writes.submit({ context in keyed.perform(in: context, layouts: layouts) { write.perform(in: context) } }, completion: { outcome in
                switch outcome {
                case .completed(.performed(let result, let response)):
                    metrics.recordConflicts(of: .completed(result), policy: write.mergePolicy.name)
                    deferred.complete { response }
                case .completed(.replayed(let response)):
                    deferred.complete { response }
                case .undone:
                    deferred.complete { WriteResponse.make(WriteOutcome<WriteResult>.undone, layouts: layouts) }
                case .notRun:
                    deferred.complete { WriteResponse.make(WriteOutcome<WriteResult>.notRun, layouts: layouts) }
                }
            })
        }
    }
}

/// Whether the service accepts requests; read by /v1/readyz from any thread.
private final class ReadyFlag: @unchecked Sendable {
    // @unchecked Sendable: `flag` is only touched under `lock`.
    private let lock = NSLock()
    private var flag = false
    var value: Bool { lock.lock(); defer { lock.unlock() }; return flag }
    func set(_ value: Bool) { lock.lock(); flag = value; lock.unlock() }
}

extension String {
    var utf8Array: [UInt8] { Array(utf8) }
}
