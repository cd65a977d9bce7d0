import ManagedStore

/// A write sent with `Idempotency-Key` (the contract's "Idempotent writes"): carried out once
/// per key; the answer is stored in the write's own transaction (the library's
/// `performOnce`), and a retry of the same request gets that answer again with
/// `Idempotent-Replayed: true` instead of writing twice.
///
/// The same request means the same fingerprint: a SHA-256 of the method, the path and query,
/// the headers that change what a write does (`Content-Type`, `If-Match`, `Merge-Policy`),
/// the name of the token it came with (so one client can neither replay nor block another's
/// answers), and the body, byte for byte.
struct IdempotentWrite: Sendable {
    let key: IdempotencyKey
    let fingerprint: [UInt8]

    static let header = "Idempotency-Key"

    /// The request's key with the fingerprint of everything but its body; nil without the
    /// header. A key that is not 1 to 255 visible ASCII characters is 400.
    static func key(of request: HTTPRequest) throws(Problem) -> IdempotencyKey? {
        guard let text = request.header(header) else { return nil }
        guard let key = IdempotencyKey(text) else {
            throw Problem.badRequest("Idempotency-Key must be 1 to \(IdempotencyKey.maxLength) visible ASCII characters (no spaces), "
                                     + "such as a UUID; got \(text.utf8.count) bytes")
        }
        return key
    }

    /// The fingerprint's hash with everything but the body taken: each part with its length
    /// before it, so that no two requests run together into the same bytes; the body is last.
    static func fingerprintStart(of request: HTTPRequest, tokenName: String?) -> SHA256 {
        var hash = SHA256()
        let query = request.query.map { "\($0.name)=\($0.value)" }.joined(separator: "&")
        for part in [request.method, request.path, query, request.mediaType, request.header("If-Match") ?? "",
                     request.header("Merge-Policy") ?? "", tokenName ?? ""] {
            hash.update(Array("\(part.utf8.count):".utf8))
            hash.update(Array(part.utf8))
        }
        return hash
    }

    /// The key and fingerprint of a request whose body is whole; nil without the header.
    init?(_ request: HTTPRequest) throws(Problem) {
        guard let key = try Self.key(of: request) else { return nil }
        var hash = Self.fingerprintStart(of: request, tokenName: request.notes.tokenName)
        hash.update(request.body)
        self.init(key: key, fingerprint: hash.finish())
    }

    init(key: IdempotencyKey, fingerprint: [UInt8]) {
        self.key = key
        self.fingerprint = fingerprint
    }

    /// What a keyed write came to on the write thread: its answer is made there, to be stored
    /// with the write.
    enum Result: Sendable {
        /// Carried out now (`write` is what the queue reports on, for metrics).
        case performed(WriteResult, HTTPResponse)
        /// Carried out before: the stored answer.
        case replayed(HTTPResponse)
    }

    /// Carries out `perform` once per key, on the write queue's context. An answer of 2xx is
    /// stored with the write; any other (it wrote nothing) is not, so a retry runs afresh.
    func perform(in context: ManagedObjectContext, layouts: JSONLayouts, _ perform: () -> WriteResult) -> Result {
        do {
            let outcome = try context.coordinator.performOnce(key: key, fingerprint: fingerprint) { () -> (result: (WriteResult, HTTPResponse), answer: [UInt8]?) in
                let result = perform()
                let response = WriteResponse.make(result, layouts: layouts)
                return ((result, response), (200..<300).contains(response.status) ? StoredAnswer.encode(response) : nil)
            }
            switch outcome {
            case .performed(let (result, response)):
                return .performed(result, response)
            case .replayed(let record):
                guard let response = StoredAnswer.decode(record.answer) else {
                    ServerLog.error("the stored answer of an idempotency key could not be read; answering 500")
                    return .replayed(Problem.internalError("the answer stored under this Idempotency-Key could not be read").response)
                }
                var replayed = response
                replayed.headers.append(("Idempotent-Replayed", "true"))
                return .replayed(replayed)
            case .keyReused:
                return .performed(.problem(.idempotencyKeyReused()), Problem.idempotencyKeyReused().response)
            }
        } catch {
            // The store failed around the write (the lookup, or storing the answer): the write's
            // savepoint is rolled back with it, but the context's objects took their saved state.
            context.reset()
            ServerLog.error("an idempotent write failed in the store: \(error)")
            let problem = Problem.unavailable("the store could not record the write under its Idempotency-Key; nothing was written")
            return .performed(.problem(problem), problem.response)
        }
    }
}

/// A write's answer as an idempotency record stores it: one line of JSON with the status and
/// the headers (`{"status":201,"headers":[["Location","/v1/objects/Task/7"],...]}`), a newline,
/// then the body's bytes. (JSON writes a newline inside a string as `\n`: the first newline
/// ends the head.)
enum StoredAnswer {
    static func encode(_ response: HTTPResponse) -> [UInt8] {
        let head = JSONValue.object([
            ("status", .number(String(response.status))),
            ("headers", .array(response.headers.map { .array([.string($0.name), .string($0.value)]) })),
        ])
        return Array(head.serialized().utf8) + [UInt8(ascii: "\n")] + response.body
    }

    static func decode(_ bytes: [UInt8]) -> HTTPResponse? {
        guard let newline = bytes.firstIndex(of: UInt8(ascii: "\n")),
              let head = try? JSONParser().parse(bytes[..<newline]),
              let status = head["status"]?.int64Value, (100...599).contains(status),
              let headers = head["headers"]?.arrayValue else { return nil }
        var fields: [(name: String, value: String)] = []
        for field in headers {
            guard let pair = field.arrayValue, pair.count == 2, let name = pair[0].stringValue, let value = pair[1].stringValue else { return nil }
            fields.append((name, value))
        }
        return HTTPResponse(status: Int(status), headers: fields, body: Array(bytes[(newline + 1)...]))
    }
}
