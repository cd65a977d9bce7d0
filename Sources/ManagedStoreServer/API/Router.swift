import ManagedStoreCore
import ManagedStoreHTTP

/// The router: each request to its handler by method and path. It authenticates first (401
/// before anything is read), checks the access the request needs (`AccessControl`, `Auth/`),
/// and hands the request on: reads to `ReadHandlers` (answered on the front thread), writes
/// parsed into a `WriteRequest` and queued on the one write queue (`enqueue`).
extension ManagedStoreService {
    func route(_ request: HTTPRequest) throws -> HTTPHandlerOutcome {
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
            // The store's own figures that belong here (the SQLite store's WAL size), by their keys.
            let figures = coordinator.storeFigures.compactMap { figure in figure.healthKey.map { ($0, JSONValue.number(String(figure.value))) } }
            let body = JSONValue.object([("status", .string("ok")), ("writeRequests", .number(String(requests))),
                                         ("writeTransactions", .number(String(batches))), ("commits", .number(String(coordinator.commitCount)))]
                                        + figures)
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
            try access.requireRead(entity, token, in: model)
            let query = try reads.aggregateQuery(request, entity: entity)
            try access.requireRead(reachedBy: query.request, from: entity, token, in: model)
            return .respond(try reads.aggregate(query, entity: entity))
        case (_, 3, "objects") where rest[3] == "live":
            return try liveQuery(request, entityName: rest[2], token: token)
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
        try access.requireKinds(token, AccessControl.level(for: request.method), of: entity, in: model)
        switch request.method {
        case "GET", "HEAD":
            let query = try reads.fetchQuery(request, entity: entity)
            try access.requireRead(reachedBy: query.include, from: entity, token, in: model)
            return .respond(try reads.fetch(query, entity: entity))
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

    /// GET /v1/objects/{Entity}/live: read on the entity (and its sub-entities) and on every
    /// entity a key path of `where` or `sort` reaches: an answer that follows them changes
    /// with those entities' objects, which tells of them.
    private func liveQuery(_ request: HTTPRequest, entityName: String, token: AccessToken?) throws -> HTTPHandlerOutcome {
        let entity = try parser.entity(entityName)
        guard request.method == "GET" else { throw Problem.methodNotAllowed(request.method, allowed: ["GET"]) }
        try access.requireRead(entity, token, in: model)
        let (query, since) = try live.query(request, entity: entity, model: model)
        let prepared: PreparedFetch
        do throws(FetchError) { prepared = try coordinator.prepareFetch(live.fetchRequest(query, entity: entity)) } catch {
            throw Problem.fetch(error, entity: entity.name)
        }
        for index in prepared.entitiesRead.sorted() {
            guard let reached = model.entity(named: model.schema[index].name) else { continue }
            try access.requireRead(reached, token, in: model)
        }
        guard ready.value else { throw Problem.unavailable("the store is not ready") }
        return try live.open(query, since: since, entity: entity)
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
        guard let destination = model.entity(named: property.destinationEntityName) else { throw Problem.unknownEntity(property.destinationEntityName) }
        try access.requireRead(destination, token, in: model)
        let query = try reads.fetchedPropertyQuery(request, destination: destination)
        try access.requireRead(reachedBy: query.include, from: destination, token, in: model)
        guard let pk = Int64(key), pk > 0, let id = coordinator.managedObjectID(entityName: entity.name, primaryKey: pk) else {
            throw Problem.notFound("no object \(entityName)/\(key.prefix(40)) (keys are positive integers)")
        }
        return .respond(try reads.fetchedProperty(query, of: id, property, destination: destination))
    }

    private func single(_ request: HTTPRequest, entityName: String, key: String, token: AccessToken?) throws -> HTTPHandlerOutcome {
        let entity = try parser.entity(entityName)
        try access.require(token, AccessControl.level(for: request.method), on: .entity(entity.name))
        guard let pk = Int64(key), pk > 0, let id = coordinator.managedObjectID(entityName: entity.name, primaryKey: pk) else {
            throw Problem.notFound("no object \(entityName)/\(key.prefix(40)) (keys are positive integers)")
        }
        switch request.method {
        case "GET", "HEAD":
            let query = try reads.getOneQuery(request, entity: entity)
            try access.requireRead(reachedBy: query.include, from: entity, token, in: model)
            return .respond(try reads.getOne(query, id: id))
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
