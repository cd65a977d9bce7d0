/// One HTTP request as the handlers see it: everything copied out of libmicrohttpd, so it
/// outlives the C callback that produced it.
public struct HTTPRequest: Sendable {
    public let method: String
    /// The path without the query, percent-decoded by libmicrohttpd.
    public let path: String
    /// Query parameters in order, decoded.
    public let query: [(name: String, value: String)]
    /// Header fields in the order received. A request has a handful: finding one by a scan
    /// costs less than hashing every name into a dictionary, which a GET paid for each field.
    public let headers: [(name: String, value: String)]
    public let body: [UInt8]
    /// The request's ID, echoed in its `Request-Id` header and written in its log line.
    public let id: String
    /// What the handler learns about the request for its log line.
    public let notes: RequestNotes
    /// The body's media type without parameters, lower-cased and trimmed: `application/json`
    /// for `Application/JSON; charset=utf-8`; "" without a Content-Type. Worked out once per
    /// request (a keyed write read it three times).
    public let mediaType: String

    /// `mediaType` is worked out from `headers` unless the caller already did.
    public init(method: String, path: String, query: [(name: String, value: String)] = [],
                headers: [(name: String, value: String)] = [], body: [UInt8] = [],
                id: String = "", notes: RequestNotes = RequestNotes(), mediaType: String? = nil) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.id = id
        self.notes = notes
        self.mediaType = mediaType ?? Self.mediaType(in: headers)
    }

    /// The value of header `name`, compared without regard to ASCII case (the last one wins
    /// for repeated fields).
    public func header(_ name: String) -> String? { Self.header(name, in: headers) }

    /// The same lookup for the fields as they are gathered (`RequestState`).
    static func header(_ name: String, in headers: [(name: String, value: String)]) -> String? {
        headers.last { equalIgnoringASCIICase($0.name, name) }?.value
    }

    /// The media type of `headers`' Content-Type, as `mediaType` holds it. (Byte by byte:
    /// Foundation's trimming cost a write a sixth of its front-end time.)
    static func mediaType(in headers: [(name: String, value: String)]) -> String {
        guard var value = header("Content-Type", in: headers) else { return "" }
        return value.withUTF8 { bytes in
            func isBlank(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
            var start = 0, end = bytes.firstIndex(of: UInt8(ascii: ";")) ?? bytes.count
            while start < end && isBlank(bytes[start]) { start += 1 }
            while end > start && isBlank(bytes[end - 1]) { end -= 1 }
            return String(unsafeUninitializedCapacity: end - start) { text in
                for i in start..<end { text[i - start] = bytes[i] >= 0x41 && bytes[i] <= 0x5A ? bytes[i] | 0x20 : bytes[i] }
                return end - start
            }
        }
    }

    private static func equalIgnoringASCIICase(_ a: String, _ b: String) -> Bool {
        let a = a.utf8, b = b.utf8
        guard a.count == b.count else { return false }
        // Setting bit 5 lower-cases ASCII letters; for other bytes equality is still required.
        func same(_ x: UInt8, _ y: UInt8) -> Bool { x == y || (x | 0x20 == y | 0x20 && (x | 0x20) >= 0x61 && (x | 0x20) <= 0x7A) }
        // Byte by byte in place: every request looks up several headers, and walking two
        // UTF-8 views in step cost more than the rest of the lookup.
        let fast = a.withContiguousStorageIfAvailable { x in
            b.withContiguousStorageIfAvailable { y in
                for i in 0..<x.count where !same(x[i], y[i]) { return false }
                return true
            }
        }
        if let fast, let fast { return fast }
        return zip(a, b).allSatisfy(same)
    }

    /// The value of query parameter `name` (the first one, if repeated).
    public func queryValue(_ name: String) -> String? { query.first { $0.name == name }?.value }

    /// The path's non-empty segments: `/v1/objects/Task/42` gives `v1`, `objects`, `Task`, `42`.
    /// Split on bytes: `String.split` walks Characters, and cost a tenth of a GET.
    public var pathSegments: [String] { Self.segments(of: path) }

    static func segments(of path: String) -> [String] {
        var segments: [String] = []
        segments.reserveCapacity(4)
        var path = path
        path.withUTF8 { bytes in
            var start = 0
            for i in 0...bytes.count where i == bytes.count || bytes[i] == UInt8(ascii: "/") {
                if i > start { segments.append(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self)) }
                start = i + 1
            }
        }
        return segments
    }
}

/// A response to send: status, header fields and body.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A JSON body.
    public static func json(_ status: Int, _ body: [UInt8], headers: [(name: String, value: String)] = []) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "application/json")] + headers, body: body)
    }

    /// One object's JSON body with its ETag (`"3"` for version 3).
    public static func json(_ status: Int, _ body: [UInt8], version: Int64) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "application/json"), ("ETag", "\"\(version)\"")], body: body)
    }
}

/// What a handler does with a request: answer now, or suspend the connection and answer
/// later from another thread. The server suspends the connection before calling `start`, so
/// the answer can never arrive before the suspension.
public enum HTTPHandlerOutcome: Sendable {
    case respond(HTTPResponse)
    case suspend(@Sendable (DeferredResponse) -> Void)
    /// An answer whose body is written while it is sent (server-sent events).
    case stream(ResponseStream)
}

/// What a handler notes about a request while handling it, for the line the request's end
/// logs: the name of the token it came with.
///
/// `@unchecked Sendable`: written while the request is handled and read when it has ended, both
/// on the connection's libmicrohttpd thread (a suspended request is resumed under the server's
/// lock before that thread reads anything), never from two threads at once.
public final class RequestNotes: @unchecked Sendable {
    // Written once by the handler and read once by the log, never at once (unchecked
    // exclusivity: the runtime check cost more than the access).
    @exclusivity(unchecked) public var tokenName: String?
    public init() {}
}

/// A request that has ended: answered and sent, or its connection closed without an answer.
public struct CompletedRequest: Sendable {
    public let method: String
    public let path: String
    public let id: String
    /// The status sent; nil when the connection closed before an answer was queued.
    public let status: Int?
    /// Body bytes of the answer (a stream's: those sent).
    public let bytes: Int
    /// From the request's headers to its end, in seconds.
    public let seconds: Double
    public let notes: RequestNotes
}

/// What the HTTP layer answers by itself, before or instead of the handler.
public enum HTTPRefusal: Sendable {
    /// The body is larger than `maxBodyBytes` (413).
    case bodyTooLarge(limit: Int)
    /// Request bodies held across connections would pass `maxInflightBodyBytes` (503).
    case bodiesBusy
    /// The server is shutting down; the request was not carried out (503).
    case shuttingDown
}

/// Answers requests. Called on libmicrohttpd's threads; must not block for long.
public protocol HTTPRequestHandler: Sendable {
    func handle(_ request: HTTPRequest) -> HTTPHandlerOutcome
    /// The answer to a request the HTTP layer refuses by itself, in the handler's words (its
    /// error format); asked on libmicrohttpd's threads.
    func answer(_ refusal: HTTPRefusal) -> HTTPResponse
    /// Hears of every request once it has ended, answered or not (for logs and metrics), on a
    /// libmicrohttpd thread.
    func requestCompleted(_ request: CompletedRequest)
    /// A consumer for this request's body, to be read as it arrives instead of gathered whole
    /// (then `handle` is not called for it); nil for the ordinary way. Asked once the headers
    /// are in (`request.body` is empty).
    func bodyStream(for request: HTTPRequest) -> HTTPBodyStream?
}

extension HTTPRequestHandler {
    public func bodyStream(for request: HTTPRequest) -> HTTPBodyStream? { nil }

    /// Plain text answers, for a handler without an error format of its own.
    public func answer(_ refusal: HTTPRefusal) -> HTTPResponse {
        let (status, text): (Int, String)
        switch refusal {
        case .bodyTooLarge(let limit): (status, text) = (413, "the body is larger than \(limit) bytes")
        case .bodiesBusy: (status, text) = (503, "too many request bodies are held at once; retry")
        case .shuttingDown: (status, text) = (503, "the server is shutting down; nothing was done")
        }
        var headers = [("Content-Type", "text/plain; charset=utf-8")]
        if status == 503 { headers.append(("Retry-After", "1")) }
        return HTTPResponse(status: status, headers: headers, body: Array(text.utf8))
    }
    public func requestCompleted(_ request: CompletedRequest) {}
}

/// A request body read piece by piece as it arrives, with flow control: when the consumer has
/// no room, the upload pauses (the connection is suspended, and the piece on offer is left
/// unread, so nothing more is read from the socket and the client's sends block) until the
/// consumer says there is room again.
///
/// libmicrohttpd calls `receive` and `finish` on the connection's thread, one call at a time;
/// `cancel` comes from there too. The size limit of gathered bodies does not apply: the
/// consumer bounds what it holds itself.
public protocol HTTPBodyStream: AnyObject, Sendable {
    /// Whether the consumer takes another piece now.
    var hasRoom: Bool { get }
    /// The next piece of the body, taken whole.
    func receive(_ bytes: UnsafeBufferPointer<UInt8>)
    /// After `hasRoom` answered false: call `resume` (from any thread) when there is room
    /// again; at once if there is already. Calling it more than once, or late, is harmless.
    func whenRoom(_ resume: @escaping @Sendable () -> Void)
    /// The body has ended: the answer.
    func finish() -> HTTPHandlerOutcome
    /// The connection ended before the body did (the client went away, or the server stopped).
    func cancel()
}

extension String {
    /// The text without the spaces and tabs around it (HTTP's optional whitespace, RFC 9110
    /// 5.6.3), on every write (Content-Length, If-Match): Foundation's
    /// `trimmingCharacters(in: .whitespaces)` goes through Unicode scalars and a character set,
    /// where two bytes are all there is to look for.
    package var trimmingHTTPWhitespace: Substring {
        func isWhitespace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }
        let bytes = utf8
        var start = bytes.startIndex, end = bytes.endIndex
        while start < end, isWhitespace(bytes[start]) { start = bytes.index(after: start) }
        while start < end {
            let last = bytes.index(before: end)
            guard isWhitespace(bytes[last]) else { break }
            end = last
        }
        return self[start..<end]
    }
}
