/// One HTTP request as the handlers see it: everything copied out of libmicrohttpd, so it
/// outlives the C callback that produced it.
public struct HTTPRequest: Sendable {
    public let method: String
    /// The path without the query, percent-decoded by libmicrohttpd.
    public let path: String
    /// Query parameters in order, decoded.
    public let query: [(name: String, value: String)]
    /// Header fields by lower-cased name (the last one wins for repeated fields).
    public let headers: [String: String]
    public let body: [UInt8]

    public init(method: String, path: String, query: [(name: String, value: String)] = [], headers: [String: String] = [:], body: [UInt8] = []) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
    }

    public func header(_ name: String) -> String? { headers[name.lowercased()] }

    /// The value of query parameter `name` (the first one, if repeated).
    public func queryValue(_ name: String) -> String? { query.first { $0.name == name }?.value }

    /// The path's non-empty segments: `/v1/objects/Task/42` gives `v1`, `objects`, `Task`, `42`.
    /// Split on bytes: `String.split` walks Characters, and cost a tenth of a GET.
    public var pathSegments: [String] {
        var segments: [String] = []
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
}

/// What a handler does with a request: answer now, or suspend the connection and answer
/// later from another thread. The server suspends the connection before calling `start`, so
/// the answer can never arrive before the suspension.
public enum HTTPHandlerOutcome: Sendable {
    case respond(HTTPResponse)
    case suspend(@Sendable (DeferredResponse) -> Void)
}

/// Answers requests. Called on libmicrohttpd's threads; must not block for long.
public protocol HTTPRequestHandler: Sendable {
    func handle(_ request: HTTPRequest) -> HTTPHandlerOutcome
}
