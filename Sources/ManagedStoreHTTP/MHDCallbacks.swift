// The C callbacks libmicrohttpd calls. Each is thin: it copies what it needs into Swift values
// and returns; nothing in here throws, and handlers answer errors with responses, so no Swift
// error can reach C. They live in their own file on purpose: a @convention(c) function in
// main.swift would be main-actor isolated, and trap (SIGILL) when MHD calls it from its thread.

import CMicroHTTPD
import Foundation

/// Every request passes through here, several times: once with the headers, once per piece
/// of body, once more when the body is complete, and once after a suspended request resumes.
func mhdAccessHandler(_ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?, _ url: UnsafePointer<CChar>?,
                      _ method: UnsafePointer<CChar>?, _ version: UnsafePointer<CChar>?, _ uploadData: UnsafePointer<CChar>?,
                      _ uploadDataSize: UnsafeMutablePointer<Int>?, _ requestContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>?) -> MHD_Result {
    guard let cls, let connection, let requestContext, let uploadDataSize else { return .NO }
    let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
    let configuration = server.configuration

    guard let existing = requestContext.pointee else {
        // First call: headers only. Answering now would make MHD send "Connection: close" and
        // lose keep-alive (throughput fell about 7x when it did), so remember the request and
        // answer on a later call.
        let state = RequestState(method: method.map { String(cString: $0) } ?? "GET", path: url.map { String(cString: $0) } ?? "/")
        let statePointer = Unmanaged.passUnretained(state).toOpaque()
        MHD_get_connection_values(connection, .HEADER_KIND, mhdCollectHeader, statePointer)
        MHD_get_connection_values(connection, .GET_ARGUMENT_KIND, mhdCollectArgument, statePointer)
        state.id = RequestID.pick(from: state.headers)
        state.mediaType = HTTPRequest.mediaType(in: state.headers)
        if let version, strcmp(version, "HTTP/1.0") == 0 { state.isHTTP10 = true }
        requestContext.pointee = Unmanaged.passRetained(state).toOpaque()
        server.requestBegan()
        // The head is in: its deadline no longer applies.
        if let record = managedstore_connection_context(connection) {
            Unmanaged<ConnectionRecord>.fromOpaque(record).takeUnretainedValue().headReceived()
        }
        if let stream = server.handler.bodyStream(for: state.request) {
            state.bodyStream = stream  // read as it arrives: no body limit or reservation
            return .YES
        }
        if let declared = state.header("Content-Length").flatMap({ Int($0.trimmingHTTPWhitespace) }), declared > 0 {
            // Refuse before reading any of it. (Answering on this first call makes MHD close the
            // connection afterwards, which is what a refused upload wants.)
            if declared > configuration.maxBodyBytes {
                return mhdQueue(connection, server.handler.answer(.bodyTooLarge(limit: configuration.maxBodyBytes)), state: state)
            }
            if !server.reserveBody(declared, for: state) {
                return mhdQueue(connection, server.handler.answer(.bodiesBusy), state: state)
            }
        }
        return .YES
    }
    let state = Unmanaged<RequestState>.fromOpaque(existing).takeUnretainedValue()
    if state.abandoned { return .NO }  // closes the connection: see DeferredResponse.abandon
    if let make = state.makeResponse {
        state.makeResponse = nil
        state.response = make()
    }
    if let response = state.response { return mhdQueue(connection, response, state: state) }
    if let stream = state.bodyStream {
        return mhdStreamBody(connection, state: state, stream: stream, server: server, uploadData, uploadDataSize)
    }

    let size = uploadDataSize.pointee
    if size > 0 {
        uploadDataSize.pointee = 0
        // However slowly it trickles in, a body has a time limit to arrive; past it the
        // connection is closed (MHD takes no answer in the middle of an upload).
        let limit = UInt64(clamping: configuration.bodyTimeout).multipliedReportingOverflow(by: 1_000_000_000)
        if !limit.overflow, DispatchTime.now().uptimeNanoseconds - state.started.uptimeNanoseconds > limit.partialValue {
            server.connections?.count(.bodyTimeout)
            return .NO
        }
        guard state.refusal == nil else { return .YES }  // being discarded
        if state.body.count + size > configuration.maxBodyBytes {
            state.refusal = server.handler.answer(.bodyTooLarge(limit: configuration.maxBodyBytes))
        } else if state.body.count + size > state.reservedBodyBytes, !server.reserveBody(state.body.count + size - state.reservedBodyBytes, for: state) {
            state.refusal = server.handler.answer(.bodiesBusy)
        } else if let uploadData {
            uploadData.withMemoryRebound(to: UInt8.self, capacity: size) { state.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: size)) }
        }
        if state.refusal != nil {
            // A body without a declared length (chunked) that is refused is discarded as it
            // arrives, never buffered, and refused once it ends: MHD does not take a response in
            // the middle of an upload.
            state.body = []
            server.releaseBody(of: state)
        }
        return .YES
    }
    if let refusal = state.refusal { return mhdQueue(connection, refusal, state: state) }
    if server.isStopping {
        var response = server.handler.answer(.shuttingDown)
        response.headers.append(("Connection", "close"))
        return mhdQueue(connection, response, state: state)
    }

    let outcome = server.handler.handle(state.request)
    // Parsed: the handler keeps what it needs, so the raw body's share of the budget goes back.
    state.body = []
    server.releaseBody(of: state)
    return mhdAnswer(connection, outcome, state: state, server: server)
}

/// Queues a handler's outcome: a response now, a stream, or a suspension until the answer.
private func mhdAnswer(_ connection: OpaquePointer, _ outcome: HTTPHandlerOutcome, state: RequestState, server: HTTPServer) -> MHD_Result {
    switch outcome {
    case .respond(let response):
        return mhdQueue(connection, response, state: state)
    case .stream(let stream):
        return mhdQueueStream(connection, stream, state: state, server: server)
    case .suspend(let start):
        state.isSuspended = true
        let deferred = DeferredResponse(state: state, connection: connection, server: server)
        server.noteSuspended(connection, deferred, state: state)
        MHD_suspend_connection(connection)
        start(deferred)
        return .YES
    }
}

/// A piece of a body read as it arrives, or its end. A consumer without room pauses the upload:
/// the piece stays unread (libmicrohttpd offers it again after the resume, and cannot reach the
/// end of the body before), and while paused nothing is taken, however often MHD asks.
private func mhdStreamBody(_ connection: OpaquePointer, state: RequestState, stream: HTTPBodyStream, server: HTTPServer,
                           _ uploadData: UnsafePointer<CChar>?, _ uploadDataSize: UnsafeMutablePointer<Int>) -> MHD_Result {
    let size = uploadDataSize.pointee
    if size > 0 {
        guard let uploadData else { return .YES }
        if server.isUploadPaused(state) { return .YES }
        guard stream.hasRoom else {
            // Suspended first, then told how to resume: a resume never comes before its pause.
            server.pauseUpload(connection, state: state)
            stream.whenRoom { server.resumeUpload(state: state) }
            return .YES
        }
        uploadDataSize.pointee = 0
        uploadData.withMemoryRebound(to: UInt8.self, capacity: size) { stream.receive(UnsafeBufferPointer(start: $0, count: size)) }
        return .YES
    }
    // The body has ended. (During a shutdown too: what was written of it is answered truthfully.)
    state.bodyStream = nil
    return mhdAnswer(connection, stream.finish(), state: state, server: server)
}

/// Decides whether a connection MHD has just accepted is served: not once the server stops
/// accepting, nor past the connection limits (`ConnectionGuard`). MHD closes a refused connection
/// at once; the client sees it closed before any answer, and may retry.
func mhdAcceptPolicy(_ cls: UnsafeMutableRawPointer?, _ address: UnsafePointer<sockaddr>?, _ length: socklen_t) -> MHD_Result {
    guard let cls else { return .NO }
    let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
    guard let connections = server.connections else { return .NO }
    if server.isStopping {
        connections.count(.stopping)
        return .NO
    }
    return connections.admit(ClientAddress(address)) ? .YES : .NO
}

/// A connection has started or is closing: its record is made, kept as the connection's
/// context, and handed back (its socket is still open when MHD says it closes).
func mhdConnectionNotice(_ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?,
                         _ socketContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ code: MHD_ConnectionNotificationCode) {
    guard let cls, let connection, let socketContext,
          let connections = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue().connections else { return }
    if code == .CONNECTION_NOTIFY_STARTED {
        let record = connections.started(socket: managedstore_connection_socket(connection),
                                         address: ClientAddress(managedstore_connection_address(connection)))
        socketContext.pointee = Unmanaged.passRetained(record).toOpaque()
    } else if code == .CONNECTION_NOTIFY_CLOSED, let pointer = socketContext.pointee {
        socketContext.pointee = nil
        connections.closed(Unmanaged<ConnectionRecord>.fromOpaque(pointer).takeRetainedValue())
    }
}

/// Releases a request's state once MHD is done with it (sent, failed or timed out).
func mhdRequestCompleted(_ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?,
                         _ requestContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ code: MHD_RequestTerminationCode) {
    guard let cls, let requestContext, let pointer = requestContext.pointee else { return }
    let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
    let state = Unmanaged<RequestState>.fromOpaque(pointer)
    let now = DispatchTime.now().uptimeNanoseconds
    // The connection waits for its next head from here.
    if let connection, let record = managedstore_connection_context(connection) {
        Unmanaged<ConnectionRecord>.fromOpaque(record).takeUnretainedValue().requestEnded(at: now)
    }
    state.takeUnretainedValue().bodyStream?.cancel()
    server.requestEnded(state.takeUnretainedValue())
    // A stream handed off is logged when it ends (`mhdHandOff`).
    if !state.takeUnretainedValue().handedOff {
        server.handler.requestCompleted(state.takeUnretainedValue().completed(at: now))
    }
    state.release()
    requestContext.pointee = nil
}

func mhdCollectHeader(_ cls: UnsafeMutableRawPointer?, _ kind: MHD_ValueKind, _ key: UnsafePointer<CChar>?, _ value: UnsafePointer<CChar>?) -> MHD_Result {
    guard let cls, let key else { return .YES }
    let state = Unmanaged<RequestState>.fromOpaque(cls).takeUnretainedValue()
    state.headers.append((String(cString: key), value.map { String(cString: $0) } ?? ""))
    return .YES
}

func mhdCollectArgument(_ cls: UnsafeMutableRawPointer?, _ kind: MHD_ValueKind, _ key: UnsafePointer<CChar>?, _ value: UnsafePointer<CChar>?) -> MHD_Result {
    guard let cls, let key else { return .YES }
    let state = Unmanaged<RequestState>.fromOpaque(cls).takeUnretainedValue()
    state.query.append((String(cString: key), value.map { String(cString: $0) } ?? ""))
    return .YES
}

/// Adds headers to a response. libmicrohttpd refuses an empty value, so one is sent as a
/// single space: an empty field value to every parser (RFC 9110 5.5 trims it), which a header
/// such as `Merge-Conflicts` with nothing to list needs.
func mhdAddHeaders(_ headers: [(name: String, value: String)], to response: OpaquePointer) {
    for (name, value) in headers {
        // withCString lends the string's own bytes; passing a String directly copies it.
        name.withCString { name in
            (value.isEmpty ? " " : value).withCString { value in _ = MHD_add_response_header(response, name, value) }
        }
    }
}

/// Queues `response` on the connection (MHD copies the body), with the request's ID.
func mhdQueue(_ connection: OpaquePointer, _ response: HTTPResponse, state: RequestState) -> MHD_Result {
    let made = response.body.withUnsafeBytes { bytes in
        MHD_create_response_from_buffer(bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress), .RESPMEM_MUST_COPY)
    }
    guard let made else { return .NO }
    mhdAddHeaders(response.headers, to: made)
    mhdAddHeaders([("Request-Id", state.id)], to: made)
    let result = MHD_queue_response(connection, UInt32(response.status), made)
    MHD_destroy_response(made)
    if result == .YES {
        state.sentStatus = response.status
        state.sentBytes = response.body.count
    }
    return result
}

/// Queues a streaming answer: its headers now, its body pulled through `mhdStreamRead`.
func mhdQueueStream(_ connection: OpaquePointer, _ stream: ResponseStream, state: RequestState, server: HTTPServer) -> MHD_Result {
    // Its own socket if it can (StreamHandOff.swift): MHD_NO closes libmicrohttpd's copy only.
    if mhdHandOff(connection, stream, state: state, server: server) { return .NO }
    stream.attach(connection, server: server)
    server.noteStream(stream)
    let context = Unmanaged.passRetained(stream).toOpaque()
    guard let made = MHD_create_response_from_callback(UInt64.max, 4096, mhdStreamRead, context, mhdStreamEnded) else {
        Unmanaged<ResponseStream>.fromOpaque(context).release()
        server.streamEnded(stream)
        return .NO
    }
    mhdAddHeaders(stream.headers, to: made)
    mhdAddHeaders([("Request-Id", state.id)], to: made)
    let result = MHD_queue_response(connection, UInt32(stream.status), made)
    MHD_destroy_response(made)
    if result == .YES {
        state.sentStatus = stream.status
        state.sentStream = stream
    }
    return result
}

/// The content reader of a streaming answer (see `ResponseStream.read`).
func mhdStreamRead(_ cls: UnsafeMutableRawPointer?, _ position: UInt64, _ buffer: UnsafeMutablePointer<CChar>?, _ max: Int) -> Int {
    guard let cls, let buffer else { return -1 }
    return Unmanaged<ResponseStream>.fromOpaque(cls).takeUnretainedValue().read(into: buffer, max: max)
}

/// libmicrohttpd is done with a streaming answer: the stream ends and its reference goes.
func mhdStreamEnded(_ cls: UnsafeMutableRawPointer?) {
    guard let cls else { return }
    Unmanaged<ResponseStream>.fromOpaque(cls).takeRetainedValue().mhdEnded()
}
