import Foundation
import ManagedStoreCore
import ManagedStoreHTTP

/// Reads a write request on the front thread that received it: the body (content type, JSON,
/// values checked against the model), the base version (If-Match, `_version`), the merge
/// policy (`?merge=`, `Merge-Policy`, the server's default) and the author. What it makes, a
/// `WriteRequest`, is all the write queue needs: nothing is parsed on the write thread.
struct WriteRequestParser {
    let coordinator: PersistentStoreCoordinator
    let configuration: ServiceConfiguration
    var model: ManagedObjectModel { coordinator.model }

    /// POST /v1/objects/{Entity} with a JSON object (one insert) or a JSON array (a batch
    /// insert, one transaction). An NDJSON body never gets here: it is read as it arrives
    /// (`NDJSONImport`).
    func insert(_ request: HTTPRequest, entity: EntityDescription) throws(Problem) -> WriteRequest {
        try insertable(entity)
        let policy = try mergePolicy(request, alsoAllowed: ["atomic"])
        _ = try Self.atomic(request)
        guard let json = try body(request, allowNDJSON: false) else { throw Problem.badRequest("the body is empty") }
        if let items = json.arrayValue {
            var bodies: [ObjectBody] = []
            bodies.reserveCapacity(items.count)
            for (index, item) in items.enumerated() {
                do { bodies.append(try ObjectBody(json: item, entity: entity, coordinator: coordinator)) } catch {
                    throw error.about("item \(index)", ("item", .number(String(index))))
                }
            }
            return WriteRequest(operation: .batchInsert(entity: entity.name, bodies: bodies, names: items.indices.map { "item \($0)" }),
                                mergePolicy: policy, author: author(request))
        }
        let body = try ObjectBody(json: json, entity: entity, coordinator: coordinator)
        return WriteRequest(operation: .insert(entity: entity.name, body: body), mergePolicy: policy, author: author(request))
    }

    /// `?atomic=true` on a batch insert: the whole NDJSON stream is one transaction.
    static func atomic(_ request: HTTPRequest) throws(Problem) -> Bool {
        // Exactly the two words, as the OpenAPI document's boolean says: an empty `atomic=`
        // (schemathesis found it taken as true) or a `1` is refused, not guessed at.
        switch request.queryValue("atomic") {
        case nil, "false": return false
        case "true": return true
        case let other?: throw Problem.badRequest("atomic must be true or false, not '\(other.prefix(40))'")
        }
    }

    /// PATCH /v1/objects/{Entity}?where=P: the body's values set on every match.
    func batchUpdate(_ request: HTTPRequest, entity: EntityDescription) throws(Problem) -> WriteRequest {
        let predicate = try batchPredicate(request, entity: entity)
        let json = try body(request, allowNDJSON: false) ?? .null
        let body = try ObjectBody(json: json, entity: entity, coordinator: coordinator)
        guard body.version == nil else { throw Problem.badRequest("a batch update takes no _version (it is based on no one version)") }
        if !body.errors.isEmpty {
            throw Problem.validation(body.errors.map { ("\(entity.name)/*", $0.property, $0.code.rawValue, $0.message) })
        }
        guard !body.propertyNames.isEmpty else { throw Problem.badRequest("the body sets no property: give the values to set, such as {\"done\": true}") }
        var values: [String: PropertyValue] = [:]
        for (name, value) in body.attributes { values[name] = .attribute(value) }
        for (name, target) in body.toOne { values[name] = .object(target.flatMap(\.savedID)) }
        for (name, targets) in body.toMany { values[name] = .objects(targets.compactMap(\.savedID)) }
        return WriteRequest(operation: .batchUpdate(entity: entity.name, predicate: predicate, values: values),
                            mergePolicy: .error, author: author(request))
    }

    /// DELETE /v1/objects/{Entity}?where=P.
    func batchDelete(_ request: HTTPRequest, entity: EntityDescription) throws(Problem) -> WriteRequest {
        let predicate = try batchPredicate(request, entity: entity)
        return WriteRequest(operation: .batchDelete(entity: entity.name, predicate: predicate), mergePolicy: .error, author: author(request))
    }

    /// The `where` of a batch update or delete, parsed and checked against the model here (a
    /// key path that does not exist is a 400 now, not a failure on the write thread).
    private func batchPredicate(_ request: HTTPRequest, entity: EntityDescription) throws(Problem) -> ObjectPredicate {
        for (name, _) in request.query where name != "where" {
            throw Problem.badRequest("unknown query parameter '\(name.prefix(100))' for a batch \(request.method == "PATCH" ? "update" : "delete") (only where)")
        }
        guard let text = request.queryValue("where") else {
            throw Problem.badRequest("batch \(request.method == "PATCH" ? "update" : "delete") needs ?where=…; ask for every object with where=TRUEPREDICATE")
        }
        let predicate = try FetchQuery.predicate(text)
        let fetch = FetchRequest(entityName: entity.name, predicate: predicate)
        do {
            try coordinator.withReadContext { context in try context.validate(fetch) }
        } catch let error as FetchError {
            throw Problem.fetch(error, entity: entity.name)
        } catch {
            throw Problem.internalError("the predicate could not be checked")
        }
        return predicate
    }

    /// PATCH (`replace` false) or PUT (true) /v1/objects/{Entity}/{pk}.
    func update(_ request: HTTPRequest, id: ManagedObjectID, entity: EntityDescription, replace: Bool) throws(Problem) -> WriteRequest {
        let policy = try mergePolicy(request)
        let json = try body(request, allowNDJSON: false) ?? .null
        let body = try ObjectBody(json: json, entity: entity, coordinator: coordinator)
        let base = try baseVersion(request, bodyVersion: body.version)
        return WriteRequest(operation: .update(id: id, body: body, baseVersion: base, replace: replace), mergePolicy: policy, author: author(request))
    }

    /// DELETE /v1/objects/{Entity}/{pk}.
    func delete(_ request: HTTPRequest, id: ManagedObjectID) throws(Problem) -> WriteRequest {
        let policy = try mergePolicy(request)
        let base = try baseVersion(request, bodyVersion: nil)
        return WriteRequest(operation: .delete(id: id, baseVersion: base), mergePolicy: policy, author: author(request))
    }

    /// POST /v1/transactions: `{"operations": [...]}`.
    func transaction(_ request: HTTPRequest) throws(Problem) -> WriteRequest {
        let policy = try mergePolicy(request)
        guard let json = try body(request, allowNDJSON: false), let list = json["operations"]?.arrayValue else {
            throw Problem.badRequest("the body must be {\"operations\": [...]}")
        }
        var refs: [String: String] = [:]  // ref -> entity
        var operations: [TransactionOperation] = []
        for (index, item) in list.enumerated() {
            func fail(_ detail: String) -> Problem { .badRequest("operation \(index): \(detail)") }
            guard let op = item["op"]?.stringValue else { throw fail("missing \"op\" (insert, update or delete)") }
            func target() throws(Problem) -> (ObjectReference, entity: String) {
                guard let text = item["object"]?.stringValue else { throw fail("missing \"object\" (an ID such as \"Task/42\", or a ref)") }
                if let entity = refs[text] { return (.ref(text), entity) }
                guard let id = coordinator.managedObjectID(fromDescription: text) else {
                    throw fail("\"\(text.prefix(100))\" is neither an object ID of this model nor an earlier ref")
                }
                return (.id(id), id.entityName)
            }
            func version() throws(Problem) -> Int64? {
                guard let value = item["version"] else { return nil }
                guard let v = value.int64Value, v >= 1 else { throw fail("\"version\" must be a positive integer") }
                return v
            }
            func values(_ entity: EntityDescription) throws(Problem) -> ObjectBody {
                try ObjectBody(json: item["values"] ?? .object([]), entity: entity, coordinator: coordinator, refs: Set(refs.keys))
            }
            switch op {
            case "insert":
                guard let name = item["entity"]?.stringValue else { throw fail("missing \"entity\"") }
                let entity = try self.entity(name)
                try insertable(entity)
                var ref: String?
                if let text = item["ref"]?.stringValue {
                    guard refs[text] == nil else { throw fail("ref \"\(text.prefix(100))\" is used twice") }
                    ref = text
                }
                operations.append(.insert(entity: entity.name, ref: ref, body: try values(entity)))
                if let ref { refs[ref] = entity.name }
            case "update":
                let (object, entityName) = try target()
                let base = try version()
                if base == nil, case .id = object, configuration.requireIfMatch { throw Problem.preconditionRequired() }
                operations.append(.update(target: object, baseVersion: base, body: try values(try entity(entityName))))
            case "delete":
                let (object, _) = try target()
                let base = try version()
                if base == nil, case .id = object, configuration.requireIfMatch { throw Problem.preconditionRequired() }
                operations.append(.delete(target: object, baseVersion: base))
            default:
                throw fail("unknown op \"\(op.prefix(40))\" (insert, update or delete)")
            }
        }
        return WriteRequest(operation: .transaction(operations), mergePolicy: policy, author: author(request))
    }

    // MARK: Parts

    /// An abstract entity has no objects of its own: an insert names one of its sub-entities.
    func insertable(_ entity: EntityDescription) throws(Problem) {
        guard entity.isAbstract else { return }
        throw Problem.abstractEntity(entity.name, subentities: model.kindNames(of: entity.name))
    }

    func entity(_ name: String) throws(Problem) -> EntityDescription {
        guard let entity = model.entity(named: name) else { throw Problem.unknownEntity(name) }
        return entity
    }

    /// The JSON body of a write: content type checked, parsed strictly. nil when the body is
    /// NDJSON and `allowNDJSON` (the caller decides what that means).
    func body(_ request: HTTPRequest, allowNDJSON: Bool) throws(Problem) -> JSONValue? {
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
    private func baseVersion(_ request: HTTPRequest, bodyVersion: Int64?) throws(Problem) -> Int64? {
        var header: Int64?
        if let text = request.header("If-Match")?.trimmingHTTPWhitespace, text != "*" {
            guard let version = Self.version(ofETag: text) else {
                throw Problem.badRequest("If-Match must be * or a version ETag such as \"3\" (W/\"3\" or 3 too), not \(text.prefix(100))")
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

    /// The version an ETag names: `"3"` or `W/"3"` (the quotes may be written `%22`), or the bare version `3`, a whole number
    /// from 1 with at most 18 digits and no leading zero (the OpenAPI document's pattern, so
    /// that a generated client and the server refuse the same values); nil for anything else.
    static func version(ofETag text: Substring) -> Int64? {
        var digits = text
        // Apple's swift-openapi-runtime percent-encodes header values: `"3"` arrives as `%223%22`.
        if digits.contains("%22") { digits = Substring(digits.replacingOccurrences(of: "%22", with: "\"")) }
        if digits.hasPrefix("W/") || digits.first == "\"" {
            if digits.hasPrefix("W/") { digits = digits.dropFirst(2) }
            guard digits.count >= 3, digits.first == "\"", digits.last == "\"" else { return nil }
            digits = digits.dropFirst().dropLast()
        }
        guard digits.count <= 18 else { return nil }
        guard let first = digits.first, first != "0", digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return Int64(digits)
    }

    /// `?merge=` over `Merge-Policy` over the configured default; a write takes no other query
    /// parameter. Each given is checked, the header too when the query wins over it: a value
    /// the document refuses is refused, wherever it is.
    func mergePolicy(_ request: HTTPRequest, alsoAllowed: Set<String> = []) throws(Problem) -> MergePolicy {
        for (name, _) in request.query where name != "merge" && !alsoAllowed.contains(name) {
            throw Problem.badRequest("unknown query parameter '\(name.prefix(100))' for this write (only \((["merge"] + alsoAllowed.sorted()).joined(separator: ", ")))")
        }
        func policy(named name: String) throws(Problem) -> MergePolicy {
            guard let policy = MergePolicy(name: name) else {
                throw Problem.badRequest("unknown merge policy '\(name.prefix(100))' (one of \(MergePolicy.builtIn.map(\.name).joined(separator: ", ")))")
            }
            return policy
        }
        let header = try request.header("Merge-Policy").map { name throws(Problem) in try policy(named: name) }
        if let name = request.queryValue("merge") { return try policy(named: name) }
        return header ?? configuration.mergePolicy
    }

    /// The request's `Author` header (recorded in the history), when it is one line of at most
    /// 200 characters; longer ones are cut.
    func author(_ request: HTTPRequest) -> String? {
        guard let value = request.header("Author")?.trimmingHTTPWhitespace, !value.isEmpty else { return nil }
        return String(value.prefix(200))
    }
}
