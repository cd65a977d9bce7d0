import Foundation
import ManagedStoreCore
import ManagedStoreHTTP

/// The query parameters of `GET /v1/objects/{Entity}`, checked: where, sort, limit, offset,
/// after, fields, include, count, and a template's fetch and var.NAME (`FetchTemplateQuery`).
struct FetchQuery {
    static let defaultLimit = 100
    static let maxLimit = 1000
    static let parameters: Set<String> = ["where", "sort", "limit", "offset", "after", "fields", "include", "count", "fetch"]

    var predicate: ObjectPredicate?
    var sorts: [ObjectSortDescriptor] = []
    var limit = defaultLimit
    var offset = 0
    var after: FetchCursor?
    var fields: Set<String>?
    var include = IncludeTree()
    var wantsCount = false

    init(_ request: HTTPRequest, entity: EntityDescription, model: ManagedObjectModel, storeIdentifier: UUID? = nil,
         allowed: Set<String> = parameters) throws(Problem) {
        guard !request.query.isEmpty else { return }  // every default: the common GET of one object
        try Self.refuseUnknownParameters(request, allowed: allowed)
        if let text = request.queryValue("where") {
            predicate = try Self.predicate(text)
        }
        if let text = request.queryValue("sort") {
            sorts = try Self.sorts(text)
        }
        if allowed.contains("fetch"), let storeIdentifier,
           let template = try FetchTemplateQuery(request, entity: entity, model: model, storeIdentifier: storeIdentifier) {
            if let own = template.predicate { predicate = predicate.map { own && $0 } ?? own }
            if request.queryValue("sort") == nil { sorts = template.sorts }
            if let cap = template.limit { limit = min(cap, Self.maxLimit) }
        }
        if let text = request.queryValue("limit") {
            limit = try Self.limit(text)
        }
        if let text = request.queryValue("offset") {
            offset = try Self.offset(text)
        }
        if let text = request.queryValue("after") {
            guard let cursor = FetchCursor(token: text) else { throw Problem.badRequest("'after' is not a cursor this server made (use the 'next' of a page)") }
            after = cursor
        }
        if let text = request.queryValue("fields") {
            var names: Set<String> = []
            for name in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !name.isEmpty {
                guard entity.attribute(named: name) != nil || entity.relationship(named: name) != nil else {
                    throw Problem.unknownProperty(entity.name, name)
                }
                names.insert(name)
            }
            fields = names
        }
        if let text = request.queryValue("include") {
            include = try IncludeTree(text, entity: entity, model: model)
        }
        if let text = request.queryValue("count") {
            switch text {
            case "true", "1", "": wantsCount = true
            case "false", "0": wantsCount = false
            default: throw Problem.badRequest("count must be true or false")
            }
        }
    }

    /// 400 for a parameter not in `allowed`: a typo is never a silently ignored filter.
    static func refuseUnknownParameters(_ request: HTTPRequest, allowed: Set<String>) throws(Problem) {
        for (name, _) in request.query where !allowed.contains(name) {
            // A template's variables, checked against the template it names (`FetchTemplateQuery`).
            if allowed.contains("fetch") && name.hasPrefix(FetchTemplateQuery.variablePrefix) { continue }
            throw Problem.badRequest("unknown query parameter '\(name)' (known: \(allowed.sorted().joined(separator: ", ")))")
        }
    }

    /// A predicate in NSPredicate format; a malformed one is `invalid-predicate` with its column
    /// (its detail starting with `parameter` when given).
    static func predicate(_ text: String, parameter: String? = nil) throws(Problem) -> ObjectPredicate {
        do { return try ObjectPredicate(format: text) } catch {
            throw Problem.invalidPredicate((parameter.map { "\($0): " } ?? "") + "\(error.message) at column \(error.column)", position: error.column)
        }
    }

    /// `limit`: 1 to `maxLimit`.
    static func limit(_ text: String) throws(Problem) -> Int {
        guard let value = Int(text), value >= 1 else { throw Problem.badRequest("limit must be a whole number from 1 to \(Self.maxLimit)") }
        guard value <= Self.maxLimit else { throw Problem.badRequest("limit \(value) is over the maximum of \(Self.maxLimit)") }
        return value
    }

    /// `offset`: 0 or more.
    static func offset(_ text: String) throws(Problem) -> Int {
        guard let value = Int(text), value >= 0 else { throw Problem.badRequest("offset must be a whole number, 0 or more") }
        return value
    }

    /// `-priority,title[c]`: a minus for descending, an optional [c]/[d]/[cd] for folded order.
    static func sorts(_ text: String) throws(Problem) -> [ObjectSortDescriptor] {
        var result: [ObjectSortDescriptor] = []
        for raw in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !raw.isEmpty {
            var key = Substring(raw)
            let ascending = !key.hasPrefix("-")
            if key.hasPrefix("-") || key.hasPrefix("+") { key = key.dropFirst() }
            var options: ComparisonOptions = []
            if key.hasSuffix("]"), let open = key.lastIndex(of: "[") {
                for letter in key[key.index(after: open)..<key.index(before: key.endIndex)] {
                    switch letter {
                    case "c": options.insert(.caseInsensitive)
                    case "d": options.insert(.diacriticInsensitive)
                    default: throw Problem.badRequest("unknown sort option '\(letter)' in '\(raw)' (use [c], [d] or [cd])")
                    }
                }
                key = key[..<open]
            }
            guard !key.isEmpty else { throw Problem.badRequest("empty sort key in '\(text)'") }
            result.append(ObjectSortDescriptor(String(key), ascending: ascending, options: options))
        }
        return result
    }

    /// The library request for this query (one more than the limit, to know if a next page exists).
    /// The to-many relationships written out are read for the whole page in one query each.
    func fetchRequest(entity: EntityDescription, timeout: Duration) -> FetchRequest {
        var request = FetchRequest(entityName: entity.name, predicate: predicate, sortDescriptors: sorts, fetchLimit: limit + 1,
                                   fetchOffset: offset, includesPendingChanges: false, after: after)
        request.timeout = timeout
        request.relationshipKeyPathsForPrefetching = entity.relationships
            .filter { $0.isToMany && (fields?.contains($0.name) ?? true || include.children[$0.name] != nil) }.map(\.name)
        return request
    }
}

extension Problem {
    /// A fetch error as the contract's 400: unknown key paths name the path.
    static func fetch(_ error: FetchError, entity: String) -> Problem {
        switch error {
        case .unknownEntity(let name): return .unknownEntity(name)
        case let .unknownKeyPath(path, on):
            return Problem(status: 400, code: "unknown-property", title: "Unknown property", detail: "unknown key path '\(path)' on \(on)",
                           extra: [("entity", .string(on)), ("property", .string(path))])
        case .unsupportedKeyPath, .incompatibleTypes, .invalidPredicate:
            return .invalidPredicate(error.description)
        case .invalidRequest(let detail): return .badRequest(detail)
        case .timedOut(let limit): return .queryTimeout(limit)
        case .cancelled: return .unavailable("the fetch was cancelled")  // the server runs no asynchronous fetches
        case .store(let error):
            // SQLite's words and the SQL go to the log, never to the client.
            ServerLog.error("a fetch of \(entity) failed in the store: \(error)")
            return .internalError("the store failed to answer the fetch")
        }
    }
}
