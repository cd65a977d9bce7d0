import Foundation
import ManagedStore

/// How the service behaves, from `managedstore serve`'s flags.
public struct ServiceConfiguration: Sendable {
    /// Read contexts GET requests borrow (each with its own reader connection).
    public var readContexts = 4
    /// The merge policy when a request names none.
    public var mergePolicy = "error"
    /// Refuse PATCH, PUT and DELETE without a base version (428).
    public var requireIfMatch = false
    /// Drain every waiting write into one transaction (off: one commit per request, for comparison).
    public var groupCommit = true
    /// How long one fetch or count may run (in SQLite and in memory) before it is stopped
    /// and answered 503 `query-timeout`.
    public var queryTimeout: Duration = .seconds(5)

    public init() {}

    public static let mergePolicies = ["error", "store-trump", "object-trump", "overwrite", "rollback"]
}

/// The REST API of `shared/api-contract.md` over one store: routing, reads on a pool of read
/// contexts, writes through the one write queue.
public final class ManagedStoreService: HTTPRequestHandler {
    public let coordinator: PersistentStoreCoordinator
    let configuration: ServiceConfiguration
    let reads: ReadContextPool
    let writes: WriteQueue
    /// Every entity's JSON keys, made once.
    let layouts: JSONLayouts
    private let ready = ReadyFlag()

    public init(coordinator: PersistentStoreCoordinator, configuration: ServiceConfiguration) {
        self.coordinator = coordinator
        self.configuration = configuration
        self.reads = ReadContextPool(coordinator: coordinator, count: configuration.readContexts)
        self.layouts = JSONLayouts(coordinator.model)
        self.writes = WriteQueue(coordinator: coordinator, groupCommit: configuration.groupCommit, layouts: layouts)
    }

    public func start() {
        writes.start()
        ready.set(true)
    }

    /// Stops taking writes and waits until `deadline` for the queued ones to be answered and
    /// committed. Returns whether the queue finished by then.
    @discardableResult
    public func stop(deadline: DispatchTime = .distantFuture) -> Bool {
        ready.set(false)
        return writes.stop(deadline: deadline)
    }

    var model: ManagedObjectModel { coordinator.model }

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
        switch (request.method, rest.count, rest.first) {
        case ("GET", 1, "model"), ("HEAD", 1, "model"):
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
        case ("GET", 1, "openapi.yaml"):
            return .respond(HTTPResponse(status: 200, headers: [("Content-Type", "application/yaml")], body: OpenAPIDocument.yaml.utf8Array))
        case ("GET", 1, "openapi.json"):
            return .respond(.json(200, OpenAPIDocument.json.utf8Array))
        case (_, 1, "changes"):
            guard request.method == "GET" else { throw Problem.methodNotAllowed(request.method, allowed: ["GET"]) }
            throw Problem.notImplemented("the change feed (persistent history) is not implemented yet")
        case (_, 1, "transactions"):
            guard request.method == "POST" else { throw Problem.methodNotAllowed(request.method, allowed: ["POST"]) }
            return try transaction(request)
        case (_, 2, "objects"):
            return try collection(request, entityName: rest[2])
        case (_, 3, "objects"):
            return try single(request, entityName: rest[2], key: rest[3])
        case (_, 1, "model"), (_, 1, "healthz"), (_, 1, "readyz"), (_, 1, "openapi.json"), (_, 1, "openapi.yaml"):
            throw Problem.methodNotAllowed(request.method, allowed: ["GET"])
        default:
            throw Problem.notFound("no resource at \(request.path)")
        }
    }

    private func entity(_ name: String) throws -> EntityDescription {
        guard let entity = model.entity(named: name) else { throw Problem.unknownEntity(name) }
        return entity
    }

    private func collection(_ request: HTTPRequest, entityName: String) throws -> HTTPHandlerOutcome {
        let entity = try entity(entityName)
        switch request.method {
        case "GET", "HEAD":
            return .respond(try fetch(request, entity: entity))
        case "POST":
            try checkMergePolicy(request)
            let json = try body(request, allowNDJSON: true)
            guard let json else {
                throw Problem.notImplemented("batch insert from application/x-ndjson is not implemented yet")
            }
            if case .array = json { throw Problem.notImplemented("batch insert (a JSON array body) is not implemented yet") }
            let objectBody = try ObjectBody(json: json, entity: entity, coordinator: coordinator)
            return enqueue(.insert(entity: entity.name, body: objectBody))
        case "PATCH", "DELETE":
            guard request.queryValue("where") != nil else {
                throw Problem.badRequest("batch \(request.method == "PATCH" ? "update" : "delete") needs ?where=…; ask for every object with where=TRUEPREDICATE")
            }
            throw Problem.notImplemented("batch \(request.method == "PATCH" ? "update" : "delete") is not implemented yet")
        default:
            throw Problem.methodNotAllowed(request.method, allowed: ["GET", "POST", "PATCH", "DELETE"])
        }
    }

    private func single(_ request: HTTPRequest, entityName: String, key: String) throws -> HTTPHandlerOutcome {
        let entity = try entity(entityName)
        guard let pk = Int64(key), pk > 0, let id = coordinator.managedObjectID(entityName: entity.name, primaryKey: pk) else {
            throw Problem.notFound("no object \(entityName)/\(key) (keys are positive integers)")
        }
        switch request.method {
        case "GET", "HEAD":
            return .respond(try getOne(request, id: id, entity: entity))
        case "PATCH", "PUT":
            let json = try body(request, allowNDJSON: false) ?? .null
            let objectBody = try ObjectBody(json: json, entity: entity, coordinator: coordinator)
            let base = try baseVersion(request, bodyVersion: objectBody.version)
            try checkMergePolicy(request)
            return enqueue(.update(id: id, body: objectBody, baseVersion: base, replace: request.method == "PUT"))
        case "DELETE":
            let base = try baseVersion(request, bodyVersion: nil)
            try checkMergePolicy(request)
            return enqueue(.delete(id: id, baseVersion: base))
        default:
            throw Problem.methodNotAllowed(request.method, allowed: ["GET", "PATCH", "PUT", "DELETE"])
        }
    }

    // MARK: Reads

    private func fetch(_ request: HTTPRequest, entity: EntityDescription) throws -> HTTPResponse {
        let query = try FetchQuery(request, entity: entity, model: model)
        return try reads.withContext { context in
            let fetchRequest = query.fetchRequest(entity: entity, timeout: configuration.queryTimeout)
            let objects: [ManagedObject]
            let count: Int?
            let next: FetchCursor?
            do {
                var found = try context.fetch(fetchRequest)
                var page = fetchRequest
                page.fetchLimit = query.limit
                next = found.count > query.limit ? try context.cursor(after: found[query.limit - 1], for: page) : nil
                if found.count > query.limit { found.removeLast(found.count - query.limit) }
                objects = found
                if query.wantsCount {
                    var all = fetchRequest
                    all.fetchLimit = 0
                    all.fetchOffset = 0
                    all.after = nil
                    count = try context.count(for: all)
                } else {
                    count = nil
                }
            } catch let error as FetchError {
                throw Problem.fetch(error, entity: entity.name)
            }
            var writer = JSONWriter(reservingCapacity: 256 + objects.count * 256)
            writer.writeRaw("{\"objects\":[")
            let encoder = ObjectJSONEncoder(layouts: layouts, fields: query.fields, include: query.include)
            var embedded = 0
            for (i, object) in objects.enumerated() {
                if i > 0 { writer.writeRaw(",") }
                try encoder.encode(object, into: &writer, embedded: &embedded)
            }
            writer.writeRaw("],\"next\":")
            if let next { writer.writeString(next.token) } else { writer.writeRaw("null") }
            if let count {
                writer.writeRaw(",\"count\":")
                writer.writeInteger(Int64(count))
            }
            writer.writeRaw("}")
            return .json(200, writer.bytes)
        }
    }

    private static let getOneParameters: Set<String> = ["fields", "include"]

    private func getOne(_ request: HTTPRequest, id: ManagedObjectID, entity: EntityDescription) throws -> HTTPResponse {
        let query = try FetchQuery(request, entity: entity, model: model, allowed: Self.getOneParameters)
        let encoder = ObjectJSONEncoder(layouts: layouts, fields: query.fields, include: query.include)
        return try reads.withContext { context in
            let found: ([UInt8], Int64)?
            if encoder.include.children.isEmpty {
                // Straight from the stored row: no managed object to build, register and reset.
                found = try context.withStoredObject(id) { row in (try encoder.body(row), row.version) }
            } else {
                found = try context.existingObjectIfStored(with: id).map { (try encoder.body($0), $0.version) }
            }
            guard let (body, version) = found else { throw Problem.notFound("no object \(id)") }
            return .json(200, body, version: version)
        }
    }

    // MARK: Writes

    private func enqueue(_ operation: WriteOperation) -> HTTPHandlerOutcome {
        .suspend { [writes] deferred in writes.submit(WriteJob(operation: operation, deferred: deferred)) }
    }

    /// The JSON body of a write: content type checked, parsed strictly. nil when the body is
    /// NDJSON and `allowNDJSON` (the caller decides what that means).
    private func body(_ request: HTTPRequest, allowNDJSON: Bool) throws -> JSONValue? {
        let type = request.mediaType
        switch type {
        case "application/json", "application/merge-patch+json":
            break
        case "application/x-ndjson" where allowNDJSON:
            return nil
        case "":
            throw Problem.unsupportedMediaType("send the body as application/json (Content-Type is missing)")
        default:
            throw Problem.unsupportedMediaType("send the body as application/json, not \(type)")
        }
        guard !request.body.isEmpty else { throw Problem.invalidJSON("the body is empty; a JSON object was expected") }
        do { return try JSONParser(maxDepth: 64).parse(request.body) } catch {
            throw Problem.invalidJSON("the body is not valid JSON: \(error)")
        }
    }

    /// The version a write is based on, from If-Match or `_version`; nil when none is given
    /// (then the write cannot conflict), or 428 under --require-if-match.
    private func baseVersion(_ request: HTTPRequest, bodyVersion: Int64?) throws -> Int64? {
        var header: Int64?
        if let text = request.header("If-Match")?.trimmingCharacters(in: .whitespaces), text != "*" {
            var tag = Substring(text)
            if tag.hasPrefix("W/") { tag = tag.dropFirst(2) }
            if tag.hasPrefix("\"") && tag.hasSuffix("\"") && tag.count >= 2 { tag = tag.dropFirst().dropLast() }
            guard let version = Int64(tag), version >= 1 else {
                throw Problem.badRequest("If-Match must be a version ETag such as \"3\", not \(text)")
            }
            header = version
        }
        if let header, let bodyVersion, header != bodyVersion {
            throw Problem.badRequest("If-Match (\(header)) and _version (\(bodyVersion)) disagree")
        }
        let base = header ?? bodyVersion
        if base == nil && configuration.requireIfMatch { throw Problem.preconditionRequired() }
        return base
    }

    /// `?merge=` over `Merge-Policy` over the configured default. Only `error` exists so far.
    private func checkMergePolicy(_ request: HTTPRequest) throws {
        let policy = request.queryValue("merge") ?? request.header("Merge-Policy") ?? configuration.mergePolicy
        guard ServiceConfiguration.mergePolicies.contains(policy) else {
            throw Problem.badRequest("unknown merge policy '\(policy)' (one of \(ServiceConfiguration.mergePolicies.joined(separator: ", ")))")
        }
        guard policy == "error" else { throw Problem.notImplemented("the \(policy) merge policy is not implemented yet; use error") }
        for (name, _) in request.query where name != "merge" {
            throw Problem.badRequest("unknown query parameter '\(name)' for a write")
        }
    }

    private func transaction(_ request: HTTPRequest) throws -> HTTPHandlerOutcome {
        try checkMergePolicy(request)
        guard let json = try body(request, allowNDJSON: false), let list = json["operations"]?.arrayValue else {
            throw Problem.badRequest("the body must be {\"operations\": [...]}")
        }
        var refs: Set<String> = []
        var operations: [TransactionOperation] = []
        for (index, item) in list.enumerated() {
            func fail(_ detail: String) -> Problem { .badRequest("operation \(index): \(detail)") }
            guard let op = item["op"]?.stringValue else { throw fail("missing \"op\" (insert, update or delete)") }
            func target() throws -> ObjectReference {
                guard let text = item["object"]?.stringValue else { throw fail("missing \"object\" (an ID such as \"Task/42\", or a ref)") }
                if refs.contains(text) { return .ref(text) }
                guard let id = coordinator.managedObjectID(fromDescription: text) else {
                    throw fail("\"\(text)\" is neither an object ID of this model nor an earlier ref")
                }
                return .id(id)
            }
            func version() throws -> Int64? {
                guard let value = item["version"] else { return nil }
                guard let v = value.int64Value, v >= 1 else { throw fail("\"version\" must be a positive integer") }
                return v
            }
            func values(_ entity: EntityDescription) throws -> ObjectBody {
                try ObjectBody(json: item["values"] ?? .object([]), entity: entity, coordinator: coordinator, refs: refs)
            }
            switch op {
            case "insert":
                guard let name = item["entity"]?.stringValue else { throw fail("missing \"entity\"") }
                let entity = try entity(name)
                var ref: String?
                if let text = item["ref"]?.stringValue {
                    guard refs.insert(text).inserted else { throw fail("ref \"\(text)\" is used twice") }
                    ref = text
                }
                operations.append(.insert(entity: entity.name, ref: ref, body: try values(entity)))
            case "update":
                let object = try target()
                let entityName: String
                switch object {
                case .id(let id): entityName = id.entityName
                case .ref: entityName = try refEntity(object, in: operations)
                }
                let base = try version()
                if base == nil, case .id = object, configuration.requireIfMatch { throw Problem.preconditionRequired() }
                operations.append(.update(target: object, baseVersion: base, body: try values(try entity(entityName))))
            case "delete":
                let object = try target()
                let base = try version()
                if base == nil, case .id = object, configuration.requireIfMatch { throw Problem.preconditionRequired() }
                operations.append(.delete(target: object, baseVersion: base))
            default:
                throw fail("unknown op \"\(op)\" (insert, update or delete)")
            }
        }
        return enqueue(.transaction(operations))
    }

    private func refEntity(_ reference: ObjectReference, in operations: [TransactionOperation]) throws -> String {
        for operation in operations {
            if case let .insert(entity, ref, _) = operation, case .ref(let name) = reference, ref == name { return entity }
        }
        throw Problem.badRequest("unknown ref")
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
