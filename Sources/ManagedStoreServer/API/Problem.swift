import ManagedStoreCore
import ManagedStoreHTTP

/// An error answer in RFC 9457 problem+json, with the contract's stable `code`.
struct Problem: Error, Sendable {
    let status: Int
    let code: String
    let title: String
    let detail: String
    /// Members added after the standard ones (`errors`, `conflicts`, `position`, ...).
    var extra: [(String, JSONValue)] = []
    var headers: [(name: String, value: String)] = []

    var response: HTTPResponse {
        var members: [(String, JSONValue)] = [
            ("type", .string("urn:managedstore:\(code)")), ("title", .string(title)), ("status", .number(String(status))),
            ("code", .string(code)), ("detail", .string(detail)),
        ]
        members += extra
        var writer = JSONWriter(reservingCapacity: 256)
        writer.write(.object(members))
        return HTTPResponse(status: status, headers: [("Content-Type", "application/problem+json")] + headers, body: writer.bytes)
    }

    /// The same problem about one part of the request (an item of an array, a line of a
    /// stream): its detail begins with `part`, and `member` is added to the body.
    func about(_ part: String, _ member: (String, JSONValue)) -> Problem {
        Problem(status: status, code: code, title: title, detail: "\(part): \(detail)", extra: extra + [member], headers: headers)
    }

    static func badRequest(_ detail: String) -> Problem { Problem(status: 400, code: "bad-request", title: "Bad request", detail: detail) }
    static func invalidJSON(_ detail: String) -> Problem { Problem(status: 400, code: "invalid-json", title: "Invalid JSON", detail: detail) }
    static func unknownEntity(_ name: String) -> Problem {
        Problem(status: 404, code: "unknown-entity", title: "Unknown entity", detail: "the model has no entity '\(name)'",
                extra: [("entity", .string(name))])
    }
    /// An insert of an abstract entity, which has no objects of its own.
    static func abstractEntity(_ name: String, subentities: [String]) -> Problem {
        let choice = subentities.isEmpty ? "it has no sub-entities" : "insert one of its sub-entities (\(subentities.joined(separator: ", ")))"
        return Problem(status: 400, code: "bad-request", title: "Abstract entity", detail: "\(name) is abstract: \(choice)",
                       extra: [("entity", .string(name))])
    }
    static func unknownProperty(_ entity: String, _ property: String) -> Problem {
        Problem(status: 400, code: "unknown-property", title: "Unknown property", detail: "\(entity) has no property '\(property)'",
                extra: [("entity", .string(entity)), ("property", .string(property))])
    }
    /// A write naming a transient attribute: part of the model, but never stored or served.
    static func transientProperty(_ entity: String, _ property: String) -> Problem {
        Problem(status: 400, code: "unknown-property", title: "Unknown property",
                detail: "\(entity).\(property) is transient: it is never stored, so a write cannot set it",
                extra: [("entity", .string(entity)), ("property", .string(property))])
    }
    static func invalidPredicate(_ detail: String, position: Int? = nil) -> Problem {
        Problem(status: 400, code: "invalid-predicate", title: "Invalid predicate", detail: detail,
                extra: position.map { [("position", .number(String($0)))] } ?? [])
    }
    static func notFound(_ detail: String) -> Problem { Problem(status: 404, code: "not-found", title: "Not found", detail: detail) }
    static func preconditionRequired() -> Problem {
        Problem(status: 428, code: "precondition-required", title: "Precondition required",
                detail: "this server requires the base version of every change: send If-Match: \"<version>\" or \"_version\" in the body")
    }
    static func payloadTooLarge(limit: Int) -> Problem {
        Problem(status: 413, code: "payload-too-large", title: "Payload too large", detail: "the request body is larger than \(limit) bytes",
                headers: [("Connection", "close")])
    }
    static func unsupportedMediaType(_ detail: String) -> Problem {
        Problem(status: 415, code: "unsupported-media-type", title: "Unsupported media type", detail: detail)
    }
    static func methodNotAllowed(_ method: String, allowed: [String]) -> Problem {
        Problem(status: 405, code: "method-not-allowed", title: "Method not allowed", detail: "\(method) is not allowed here",
                headers: [("Allow", allowed.joined(separator: ", "))])
    }
    static func notImplemented(_ detail: String) -> Problem {
        Problem(status: 501, code: "not-implemented", title: "Not implemented", detail: detail)
    }
    static func unavailable(_ detail: String) -> Problem {
        Problem(status: 503, code: "unavailable", title: "Service unavailable", detail: detail, headers: [("Retry-After", "1")])
    }
    /// A fetch or count ran past `--query-timeout` and was stopped.
    static func queryTimeout(_ limit: Duration) -> Problem {
        Problem(status: 503, code: "query-timeout", title: "Query timeout",
                detail: "the query ran past the server's time limit (\(limit)) and was stopped; narrow it (a more selective where, a smaller limit) or retry",
                headers: [("Retry-After", "1")])
    }
    /// Request bodies held in memory across all connections are at their cap.
    static func bodiesBusy() -> Problem {
        Problem(status: 503, code: "unavailable", title: "Service unavailable",
                detail: "the server holds as many request bodies as it may at once; retry shortly", headers: [("Retry-After", "1")])
    }
    /// An `Idempotency-Key` that an earlier write used for another request.
    static func idempotencyKeyReused() -> Problem {
        Problem(status: 422, code: "idempotency-key-reused", title: "Idempotency key reused",
                detail: "this Idempotency-Key was used before for another request (another method, path, body, or one of the "
                    + "If-Match, Merge-Policy and Content-Type headers, or another token); nothing was written: send a new key with a new request")
    }
    static func internalError(_ detail: String) -> Problem {
        Problem(status: 500, code: "internal", title: "Internal server error", detail: detail)
    }
    /// 422 with every broken rule: each error's object (as the client knows it), property,
    /// code and message; `detail` says what it is about (by default, a write that wrote nothing).
    static func validation(_ errors: [(object: String, property: String?, code: String, message: String)], detail: String? = nil) -> Problem {
        Problem(status: 422, code: "validation", title: "Validation failed",
                detail: detail ?? "\(errors.count) validation error\(errors.count == 1 ? "" : "s"); nothing was written",
                extra: [("errors", .array(errors.map { error in
                    .object([("object", .string(error.object)), ("property", error.property.map(JSONValue.string) ?? .null),
                             ("code", .string(error.code)), ("message", .string(error.message))])
                }))])
    }
}
