import ManagedStoreCore
import ManagedStoreHTTP

/// The query parameters of `GET /v1/objects/{Entity}/aggregate`, checked and turned into the
/// library's `AggregateRequest`: select, where, having, sort, limit, offset.
struct AggregateQuery {
    static let parameters: Set<String> = ["select", "where", "having", "sort", "limit", "offset"]
    /// The most items a `select` takes (the library's limit on properties; the OpenAPI
    /// document's pattern says the same).
    static let maxSelectItems = PreparedAggregate.maxProperties

    let request: AggregateRequest

    init(_ request: HTTPRequest, entity: EntityDescription, timeout: Duration) throws(Problem) {
        try FetchQuery.refuseUnknownParameters(request, allowed: Self.parameters)
        guard let select = request.queryValue("select") else {
            throw Problem.badRequest("select is required: the group keys and aggregates to answer, e.g. select=author,books:count()")
        }
        var aggregate = AggregateRequest(entityName: entity.name, properties: try Self.properties(select))
        aggregate.predicate = try request.queryValue("where").map { text throws(Problem) in try FetchQuery.predicate(text) }
        aggregate.havingPredicate = try request.queryValue("having").map { text throws(Problem) in
            try FetchQuery.predicate(text, parameter: "having")
        }
        aggregate.sortDescriptors = try request.queryValue("sort").map { text throws(Problem) in try FetchQuery.sorts(text) } ?? []
        aggregate.fetchLimit = try request.queryValue("limit").map { text throws(Problem) in try FetchQuery.limit(text) } ?? FetchQuery.defaultLimit
        aggregate.fetchOffset = try request.queryValue("offset").map { text throws(Problem) in try FetchQuery.offset(text) } ?? 0
        aggregate.timeout = timeout
        self.request = aggregate
    }

    /// PostgREST's select: comma-separated items, each `[name:]keyPath` (a group key) or
    /// `[name:][keyPath.]function()` (an aggregate; `count()` alone counts rows).
    static func properties(_ select: String) throws(Problem) -> [AggregateProperty] {
        let items = select.split(separator: ",", omittingEmptySubsequences: false)
        guard items.count <= maxSelectItems else { throw Problem.badRequest("select has \(items.count) items; at most \(maxSelectItems)") }
        return try items.map { item throws(Problem) in try property(String(item)) }
    }

    private static func property(_ item: String) throws(Problem) -> AggregateProperty {
        func malformed(_ why: String) -> Problem {
            Problem.badRequest("select item '\(item.prefix(100))' \(why) (write key.path, key.path.sum(), count(), or name:… for either)")
        }
        var body = Substring(item.trimmingCharacters(in: .whitespaces))
        var alias: String?
        if let colon = body.firstIndex(of: ":") {
            let name = body[..<colon].trimmingCharacters(in: .whitespaces)
            guard !name.isEmpty, name.allSatisfy(isNameCharacter) else { throw malformed("has a name that is not letters, digits and _") }
            alias = name
            body = Substring(body[body.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        guard !body.isEmpty else { throw malformed("is empty") }
        guard !body.contains(":") else { throw malformed("has a second ':' (casts are not supported)") }
        guard body.hasSuffix("()") else {
            guard body.allSatisfy({ isNameCharacter($0) || $0 == "." }) else { throw malformed("is not a key path") }
            return .groupKey(String(body), as: alias)
        }
        let call = body.dropLast(2)
        let dot = call.lastIndex(of: ".")
        let functionName = String(dot.map { call[call.index(after: $0)...] } ?? call)
        guard let function = AggregateFunction(rawValue: functionName) else {
            throw malformed("calls '\(functionName.prefix(40))()', which is none of count(), sum(), avg(), min(), max()")
        }
        let keyPath = dot.map { String(call[..<$0]) }
        if let keyPath {
            guard !keyPath.isEmpty, keyPath.allSatisfy({ isNameCharacter($0) || $0 == "." }) else { throw malformed("has no key path before .\(function.rawValue)()") }
        } else if function != .count {
            throw malformed("needs a key path: \(function.rawValue)() of what, as in pages.\(function.rawValue)()")
        }
        return AggregateProperty(name: alias ?? function.rawValue, expression: .function(function, keyPath: keyPath))
    }

    /// Letters, digits and `_`: what names in a model and aliases are made of.
    private static func isNameCharacter(_ character: Character) -> Bool {
        character == "_" || character.isLetter || character.isNumber
    }
}

extension Problem {
    /// An aggregate error as the contract's answer: a malformed or duplicate result, or a sum
    /// of what is not a number, is `bad-request`; a name that is no result, `unknown-property`;
    /// an exact sum that overflows, 422 `validation` (`too-large`, naming the result); the rest
    /// as a fetch's error.
    static func aggregate(_ error: AggregateError, entity: String) -> Problem {
        switch error {
        case .fetch(let fetchError):
            return .fetch(fetchError, entity: entity)
        case .duplicateName, .notNumeric, .invalidProperty:
            return .badRequest(error.description)
        case .unknownName(let name, _):
            return Problem(status: 400, code: "unknown-property", title: "Unknown property", detail: error.description,
                           extra: [("entity", .string(entity)), ("property", .string(name))])
        case .overflow(let name):
            return .validation([(object: entity, property: name, code: "too-large", message: error.description)],
                               detail: "the exact value of '\(name)' does not fit its type; narrow the groups or the where")
        }
    }
}
