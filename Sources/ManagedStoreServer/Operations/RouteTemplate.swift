/// The route a request took, as its template (`/v1/objects/{entity}/{pk}`), and its method, as
/// they are written in logs and metric labels: never a raw path, an object key or a predicate,
/// so a label's values stay few however many objects and clients there are.
enum RouteTemplate {
    static func of(_ request: HTTPRequest) -> String { of(segments: request.pathSegments) }

    static func of(segments: [String]) -> String {
        guard segments.first == "v1" else { return "unmatched" }
        switch (segments.count, segments.count > 1 ? segments[1] : "") {
        case (2, let name) where fixed.contains(name): return "/v1/" + name
        case (3, "objects"): return "/v1/objects/{entity}"
        case (4, "objects"): return segments[3] == "aggregate" ? "/v1/objects/{entity}/aggregate" : "/v1/objects/{entity}/{pk}"
        default: return "unmatched"
        }
    }

    /// The method, or `other` for one the API has no use for (a client may send any token).
    static func method(_ method: String) -> String {
        methods.contains(method) ? method : "other"
    }

    private static let fixed: Set<String> = ["model", "transactions", "changes", "healthz", "readyz", "metrics", "openapi.json", "openapi.yaml"]
    private static let methods: Set<String> = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
}
