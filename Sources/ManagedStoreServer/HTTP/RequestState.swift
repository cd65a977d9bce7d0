import CMicroHTTPD

/// What the server keeps for one request between libmicrohttpd's calls: the parts read so
/// far, and the response once there is one.
///
/// `@unchecked Sendable`: until suspension only the connection's MHD thread touches it; while
/// the connection is suspended MHD makes no callback for it, and only the thread that answers
/// (through `DeferredResponse`) writes `response`, before `MHD_resume_connection`, whose lock
/// publishes the write to the MHD thread that sends it. One thread at a time, always.
final class RequestState: @unchecked Sendable {
    let method: String
    let path: String
    var query: [(name: String, value: String)] = []
    var headers: [(name: String, value: String)] = []
    var body: [UInt8] = []
    /// The declared or received body is larger than allowed: answer 413 without reading more.
    var tooLarge = false
    var response: HTTPResponse?
    var isSuspended = false

    init(method: String, path: String) {
        self.method = method
        self.path = path
    }

    func header(_ name: String) -> String? { HTTPRequest.header(name, in: headers) }

    var request: HTTPRequest { HTTPRequest(method: method, path: path, query: query, headers: headers, body: body) }
}

/// The way to answer a suspended request from any thread, exactly once.
///
/// `@unchecked Sendable`: it holds the MHD connection handle only to pass it to
/// `MHD_resume_connection`, which libmicrohttpd allows from any thread (ITC is on).
public final class DeferredResponse: @unchecked Sendable {
    private let state: RequestState
    private let connection: OpaquePointer
    private unowned let server: HTTPServer

    init(state: RequestState, connection: OpaquePointer, server: HTTPServer) {
        self.state = state
        self.connection = connection
        self.server = server
    }

    /// Sends `response`: stores it and resumes the connection, whose MHD thread queues it.
    public func complete(_ response: HTTPResponse) {
        state.response = response
        server.resume(connection, state: state)
    }
}
