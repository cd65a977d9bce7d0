// The C callbacks libmicrohttpd calls. Each is thin: it copies what it needs into Swift values
// and returns; nothing in here throws, and handlers answer errors with responses, so no Swift
// error can reach C. They live in their own file on purpose: a @convention(c) function in
// main.swift would be main-actor isolated and trap when MHD calls it (platform notes).

import CMicroHTTPD

/// Every request passes through here, several times: once with the headers, once per piece
/// of body, once more when the body is complete, and once after a suspended request resumes.
func mhdAccessHandler(_ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?, _ url: UnsafePointer<CChar>?,
                      _ method: UnsafePointer<CChar>?, _ version: UnsafePointer<CChar>?, _ uploadData: UnsafePointer<CChar>?,
                      _ uploadDataSize: UnsafeMutablePointer<Int>?, _ requestContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>?) -> MHD_Result {
    guard let cls, let connection, let requestContext, let uploadDataSize else { return .NO }
    let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
    let limit = server.configuration.maxBodyBytes

    guard let existing = requestContext.pointee else {
        // First call: headers only. Answering now would make MHD send "Connection: close" and
        // lose keep-alive (platform notes), so remember the request and answer on a later call.
        let state = RequestState(method: method.map { String(cString: $0) } ?? "GET", path: url.map { String(cString: $0) } ?? "/")
        let statePointer = Unmanaged.passUnretained(state).toOpaque()
        MHD_get_connection_values(connection, .HEADER_KIND, mhdCollectHeader, statePointer)
        MHD_get_connection_values(connection, .GET_ARGUMENT_KIND, mhdCollectArgument, statePointer)
        requestContext.pointee = Unmanaged.passRetained(state).toOpaque()
        if let declared = state.header("Content-Length"), let length = Int(declared), length > limit {
            // Refuse before reading any of it. (Answering on this first call makes MHD close the
            // connection afterwards, which is what a refused upload wants.)
            state.tooLarge = true
            return mhdQueue(connection, Problem.payloadTooLarge(limit: limit).response)
        }
        return .YES
    }
    let state = Unmanaged<RequestState>.fromOpaque(existing).takeUnretainedValue()
    if let response = state.response { return mhdQueue(connection, response) }

    let size = uploadDataSize.pointee
    if size > 0 {
        if !state.tooLarge {
            if state.body.count + size > limit {
                state.tooLarge = true
                state.body = []
            } else if let uploadData {
                uploadData.withMemoryRebound(to: UInt8.self, capacity: size) { state.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: size)) }
            }
        }
        uploadDataSize.pointee = 0
        // A body without a declared length (chunked) that passes the limit is discarded as it
        // arrives, never buffered, and refused once it ends: MHD does not take a response in
        // the middle of an upload.
        return .YES
    }
    if state.tooLarge { return mhdQueue(connection, Problem.payloadTooLarge(limit: limit).response) }
    if server.isStopping { return mhdQueue(connection, Problem.unavailable("the server is shutting down").response) }

    switch server.handler.handle(state.request) {
    case .respond(let response):
        return mhdQueue(connection, response)
    case .suspend(let start):
        state.isSuspended = true
        server.noteSuspended(connection, state)
        MHD_suspend_connection(connection)
        start(DeferredResponse(state: state, connection: connection, server: server))
        return .YES
    }
}

/// Releases a request's state once MHD is done with it (sent, failed or timed out).
func mhdRequestCompleted(_ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?,
                         _ requestContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ code: MHD_RequestTerminationCode) {
    guard let requestContext, let state = requestContext.pointee else { return }
    Unmanaged<RequestState>.fromOpaque(state).release()
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

/// Queues `response` on the connection (MHD copies the body).
func mhdQueue(_ connection: OpaquePointer, _ response: HTTPResponse) -> MHD_Result {
    let made = response.body.withUnsafeBytes { bytes in
        MHD_create_response_from_buffer(bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress), .RESPMEM_MUST_COPY)
    }
    guard let made else { return .NO }
    for (name, value) in response.headers {
        // withCString lends the string's own bytes; passing a String directly copies it.
        name.withCString { name in value.withCString { value in _ = MHD_add_response_header(made, name, value) } }
    }
    let result = MHD_queue_response(connection, UInt32(response.status), made)
    MHD_destroy_response(made)
    return result
}
