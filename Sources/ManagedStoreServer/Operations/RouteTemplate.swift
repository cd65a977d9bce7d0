import ManagedStoreHTTP

/// The route a request took, as its template (`/v1/objects/{entity}/{pk}`), and its method, as
/// they are written in logs and metric labels: never a raw path, an object key or a predicate,
/// so a label's values stay few however many objects and clients there are.
///
/// Found from the path's bytes, without splitting it into strings: every request is counted and
/// logged by its route.
enum RouteTemplate: Int, CaseIterable {
    case model, transactions, changes, healthz, readyz, metrics, openapiJSON, openapiYAML
    case objects, object, aggregate, live, fetchedProperty
    case unmatched

    /// The template as logs and labels write it.
    var text: String {
        switch self {
        case .model: return "/v1/model"
        case .transactions: return "/v1/transactions"
        case .changes: return "/v1/changes"
        case .healthz: return "/v1/healthz"
        case .readyz: return "/v1/readyz"
        case .metrics: return "/v1/metrics"
        case .openapiJSON: return "/v1/openapi.json"
        case .openapiYAML: return "/v1/openapi.yaml"
        case .objects: return "/v1/objects/{entity}"
        case .object: return "/v1/objects/{entity}/{pk}"
        case .aggregate: return "/v1/objects/{entity}/aggregate"
        case .live: return "/v1/objects/{entity}/live"
        case .fetchedProperty: return "/v1/objects/{entity}/{pk}/{fetchedProperty}"
        case .unmatched: return "unmatched"
        }
    }

    static func of(_ request: HTTPRequest) -> RouteTemplate { of(path: request.path) }

    /// The route of `path` (`/v1/objects/Task/42`), as the router reads it: segments between
    /// slashes, empty ones skipped.
    static func of(path: String) -> RouteTemplate {
        var path = path
        return path.withUTF8 { bytes in
            // The first segments' bounds, on the stack: a route has at most five.
            var bounds: (Range<Int>, Range<Int>, Range<Int>, Range<Int>) = (0..<0, 0..<0, 0..<0, 0..<0)
            var count = 0
            var start = 0
            for i in 0...bytes.count where i == bytes.count || bytes[i] == UInt8(ascii: "/") {
                if i > start {
                    switch count {
                    case 0: bounds.0 = start..<i
                    case 1: bounds.1 = start..<i
                    case 2: bounds.2 = start..<i
                    case 3: bounds.3 = start..<i
                    case 4: break  // a fetched property's name: its route needs no more
                    default: return .unmatched
                    }
                    count += 1
                }
                start = i + 1
            }
            func segment(_ range: Range<Int>, is text: StaticString) -> Bool {
                text.withUTF8Buffer { expected in
                    expected.count == range.count && expected.indices.allSatisfy { expected[$0] == bytes[range.lowerBound + $0] }
                }
            }
            guard count >= 2, segment(bounds.0, is: "v1") else { return .unmatched }
            switch count {
            case 2:
                for (name, route) in fixed where segment(bounds.1, is: name) { return route }
                return .unmatched
            case 3:
                return segment(bounds.1, is: "objects") ? .objects : .unmatched
            case 4:
                guard segment(bounds.1, is: "objects") else { return .unmatched }
                if segment(bounds.3, is: "aggregate") { return .aggregate }
                return segment(bounds.3, is: "live") ? .live : .object
            default:
                return segment(bounds.1, is: "objects") ? .fetchedProperty : .unmatched
            }
        }
    }

    private static let fixed: [(StaticString, RouteTemplate)] = [
        ("model", .model), ("transactions", .transactions), ("changes", .changes), ("healthz", .healthz), ("readyz", .readyz),
        ("metrics", .metrics), ("openapi.json", .openapiJSON), ("openapi.yaml", .openapiYAML),
    ]
}

/// A request's method as labels write it: one the API uses, or `other` (a client may send any token).
enum RouteMethod: Int, CaseIterable {
    case get, head, post, put, patch, delete, options, other

    init(_ method: String) {
        switch method {
        case "GET": self = .get
        case "HEAD": self = .head
        case "POST": self = .post
        case "PUT": self = .put
        case "PATCH": self = .patch
        case "DELETE": self = .delete
        case "OPTIONS": self = .options
        default: self = .other
        }
    }

    var text: String {
        switch self {
        case .get: return "GET"
        case .head: return "HEAD"
        case .post: return "POST"
        case .put: return "PUT"
        case .patch: return "PATCH"
        case .delete: return "DELETE"
        case .options: return "OPTIONS"
        case .other: return "other"
        }
    }
}
