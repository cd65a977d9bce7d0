import CMicroHTTPD
import Foundation

/// What the server keeps for one request between libmicrohttpd's calls: the parts read so
/// far, and the response once there is one.
///
/// `@unchecked Sendable`: until suspension only the connection's MHD thread touches it; while
/// the connection is suspended MHD makes no callback for it, and only the thread that answers
/// (through `DeferredResponse`, once) writes `response`, before `MHD_resume_connection`, whose
/// lock publishes the write to the MHD thread that sends it. One thread at a time, always.
///
/// The parts every request reads are `@exclusivity(unchecked)`: each access is a plain read,
/// append or assignment that calls nothing that could touch the same property, so no two
/// accesses overlap, and the runtime check on each cost more than the access itself.
final class RequestState: @unchecked Sendable {
    let method: String
    let path: String
    @exclusivity(unchecked) var query: [(name: String, value: String)] = []
    @exclusivity(unchecked) var headers: [(name: String, value: String)] = []
    @exclusivity(unchecked) var body: [UInt8] = []
    /// Body bytes this request holds against the server's in-flight budget.
    @exclusivity(unchecked) var reservedBodyBytes = 0
    /// When the first call for this request came: receiving its body has a time limit.
    let started = DispatchTime.now()
    /// The answer to a body being discarded as it arrives, sent once it has ended.
    var refusal: HTTPResponse?
    @exclusivity(unchecked) var response: HTTPResponse?
    /// Makes the answer of a suspended request, on the MHD thread that sends it, once the
    /// connection resumes (`DeferredResponse`); `response` then holds it.
    var makeResponse: (@Sendable () -> HTTPResponse)?
    /// Resumed without an answer: close the connection (a shutdown that could not wait for
    /// the request's outcome says nothing rather than something untrue).
    var abandoned = false
    var isSuspended = false
    /// The consumer of a body read as it arrives (`HTTPBodyStream`), until the body has ended.
    var bodyStream: HTTPBodyStream?
    /// The upload is paused for the body stream (only touched under the server's lock).
    var uploadPaused = false
    /// Set once the headers are in (`RequestID.pick`), then sent back on every answer.
    @exclusivity(unchecked) var id = ""
    /// Set once the headers are in (`HTTPRequest.mediaType(in:)`).
    @exclusivity(unchecked) var mediaType = ""
    let notes = RequestNotes()
    /// What was queued as the answer: its status and body size (a stream counts as it sends).
    @exclusivity(unchecked) var sentStatus: Int?
    @exclusivity(unchecked) var sentBytes = 0
    var sentStream: ResponseStream?
    /// The request came as HTTP/1.0 (a stream handed off is then not chunked).
    @exclusivity(unchecked) var isHTTP10 = false
    /// Its stream left libmicrohttpd with the connection (`mhdHandOff`): the request is logged
    /// when the stream ends, not when libmicrohttpd lets the connection go.
    var handedOff = false

    init(method: String, path: String) {
        self.method = method
        self.path = path
    }

    func header(_ name: String) -> String? { HTTPRequest.header(name, in: headers) }

    var request: HTTPRequest { HTTPRequest(method: method, path: path, query: query, headers: headers, body: body, id: id, notes: notes, mediaType: mediaType) }

    /// The request as it ended at `now` (uptime nanoseconds), for logs and metrics.
    func completed(at now: UInt64) -> CompletedRequest {
        CompletedRequest(method: method, path: path, id: id, status: sentStatus, bytes: sentStream?.bytesSent ?? sentBytes,
                         seconds: Double(now &- started.uptimeNanoseconds) / 1e9, notes: notes)
    }
}

/// The way to answer a suspended request from any thread, exactly once: a second answer (the
/// write queue's, racing a shutdown that gave up waiting for it) is dropped.
///
/// `@unchecked Sendable`: it holds the MHD connection handle only to pass it to
/// `MHD_resume_connection` through the server, which serializes that call; `answered` is
/// only touched under `lock`.
public final class DeferredResponse: @unchecked Sendable {
    private let state: RequestState
    private let connection: OpaquePointer
    private unowned let server: HTTPServer
    private let lock = NSLock()
    private var answered = false

    init(state: RequestState, connection: OpaquePointer, server: HTTPServer) {
        self.state = state
        self.connection = connection
        self.server = server
    }

    /// Sends `response`: resumes the connection, whose MHD thread queues it. Returns false when
    /// the request was answered (or abandoned) already.
    @discardableResult
    public func complete(_ response: HTTPResponse) -> Bool {
        complete { response }
    }

    /// Resumes the connection and has its MHD thread call `make` for the response (false when
    /// the request was answered or abandoned already). For an
    /// answerer whose own thread is the bottleneck (the write queue): building and encoding the
    /// answer moves to the front threads, with no hop through another queue in between.
    @discardableResult
    public func complete(making make: @escaping @Sendable () -> HTTPResponse) -> Bool {
        guard claim() else { return false }
        state.makeResponse = make
        server.resume(connection, state: state)
        return true
    }

    /// Closes the connection without an answer, unless one was given already.
    func abandon() {
        guard claim() else { return }
        state.abandoned = true
        server.resume(connection, state: state)
    }

    private func claim() -> Bool {
        lock.lock()
        defer { lock.unlock() }
        if answered { return false }
        answered = true
        return true
    }
}
