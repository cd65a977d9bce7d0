import ManagedStoreCore
import ManagedStoreHTTP

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
        func take(_ part: String) {
            hash.update(String(part.utf8.count))
            hash.update(":")
            hash.update(part)
        }
        take(request.method)
        take(request.path)
        take(request.query.isEmpty ? "" : request.query.map { "\($0.name)=\($0.value)" }.joined(separator: "&"))
        take(request.mediaType)
        take(request.header("If-Match") ?? "")
        take(request.header("Merge-Policy") ?? "")
        take(tokenName ?? "")
        return hash
    }

    /// The fingerprint of a request whose body is whole.
    static func fingerprint(of request: HTTPRequest) -> [UInt8] {
        var hash = fingerprintStart(of: request, tokenName: request.notes.tokenName)
        hash.update(request.body)
        return fingerprint(hash)
    }

    /// The first 16 bytes of the digest: 128 bits tell requests apart as well as the whole
    /// would (a collision takes 2^64 tries), and every keyed write stores one.
    static func fingerprint(_ hash: SHA256) -> [UInt8] {
        var hash = hash
        return Array(hash.finish().prefix(16))
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
            let outcome = try context.performOnce(key: key, fingerprint: fingerprint) { () -> (result: (WriteResult, HTTPResponse), answer: [UInt8]?) in
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
                let problem = Problem.idempotencyKeyReused()
                return .performed(.problem(problem), problem.response)
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

/// A write's answer as an idempotency record stores it, small because every keyed write stores
/// one: the status on the first line, then a line per header (`Name: value`; the usual
/// `Content-Type: application/json` as `J`), an empty line, then the body's bytes. (A header
/// value holds no line break: the server writes them all.)
enum StoredAnswer {
    private static let json = (name: "Content-Type", value: "application/json")

    static func encode(_ response: HTTPResponse) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(response.body.count + 16 + response.headers.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 3 })
        bytes.append(contentsOf: String(response.status).utf8)
        bytes.append(UInt8(ascii: "\n"))
        for (name, value) in response.headers {
            if name == json.name && value == json.value {
                bytes.append(UInt8(ascii: "J"))
            } else {
                bytes.append(contentsOf: name.utf8)
                bytes.append(contentsOf: ": ".utf8)
                bytes.append(contentsOf: value.utf8)
            }
            bytes.append(UInt8(ascii: "\n"))
        }
        bytes.append(UInt8(ascii: "\n"))
        bytes.append(contentsOf: response.body)
        return bytes
    }

    static func decode(_ bytes: [UInt8]) -> HTTPResponse? {
        var lines: [String] = []
        var start = 0
        var index = 0
        var headEnded = false
        while index < bytes.count && !headEnded {
            guard bytes[index] == UInt8(ascii: "\n") else { index += 1; continue }
            let line = String(decoding: bytes[start..<index], as: UTF8.self)
            index += 1
            start = index
            if line.isEmpty { headEnded = true } else { lines.append(line) }
        }
        guard headEnded, let statusLine = lines.first, let status = Int(statusLine), (100...599).contains(status) else { return nil }
        var headers: [(name: String, value: String)] = []
        for line in lines.dropFirst() {
            if line == "J" { headers.append(json); continue }
            guard let colon = line.range(of: ": ") else { return nil }
            headers.append((String(line[..<colon.lowerBound]), String(line[colon.upperBound...])))
        }
        return HTTPResponse(status: status, headers: headers, body: Array(bytes[start...]))
    }
}
