import Foundation
import ManagedStoreCore
import ManagedStoreHTTP

/// `GET /v1/objects/{Entity}/live`: a fetch kept current, as server-sent events (`snapshot`,
/// then `diff`, `progress` and `reset`; each `id:` the history token the answer holds at). The
/// store's live-query engine keeps the answers (one window per distinct query, shared by
/// every stream of it); this part turns its events into SSE, holds the streams, and keeps to
/// the limits: streams per server, and bytes a client may leave unread.
///
/// `@unchecked Sendable`: `open` and `stopped` are only touched under `lock`.
final class LiveQueryStreams: @unchecked Sendable {
    static let parameters: Set<String> = ["where", "sort", "limit", "fields", "since"]
    /// Fetch parameters that have no meaning on a live answer (it is always the first page).
    static let refusedParameters: Set<String> = ["offset", "after", "include", "count", "fetch"]
    /// Unread bytes above which a stream's changes are held back and later sent as one
    /// (squashed) diff: a slow reader is sent less, not more.
    static let squashAboveBytes = 64 << 10

    private let coordinator: PersistentStoreCoordinator
    private let layouts: JSONLayouts
    private let maxStreams: Int
    private let maxLagBytes: Int
    private let lock = NSLock()
    private var open: [ObjectIdentifier: (stream: ResponseStream, subscription: LiveSubscription?)] = [:]
    private var stopped = false
    private var keepAlive: DispatchSourceTimer?

    init(coordinator: PersistentStoreCoordinator, layouts: JSONLayouts, maxStreams: Int, maxLagBytes: Int) {
        self.coordinator = coordinator
        self.layouts = layouts
        self.maxStreams = maxStreams
        self.maxLagBytes = maxLagBytes
        // A comment line every 15 s keeps idle streams open through proxies, and finds clients
        // that left (the write fails and the stream ends).
        let timer = DispatchSource.makeTimerSource(queue: .global())
        timer.schedule(deadline: .now() + 15, repeating: 15)
        timer.setEventHandler { [weak self] in self?.ping() }
        timer.resume()
        keepAlive = timer
    }

    deinit { keepAlive?.cancel() }

    /// Streams open now.
    var count: Int {
        lock.lock()
        defer { lock.unlock() }
        return open.count
    }

    // MARK: Requests

    /// The parameters of a live query, checked (400 for anything a fetch would refuse, and for
    /// the fetch parameters a live answer does not take).
    func query(_ request: HTTPRequest, entity: EntityDescription, model: ManagedObjectModel) throws -> (FetchQuery, since: PersistentHistoryToken?) {
        for (name, _) in request.query where Self.refusedParameters.contains(name) {
            throw Problem.badRequest("'\(name)' does not apply to a live query: its answer is the first page of the fetch, kept current "
                + "(known: \(Self.parameters.sorted().joined(separator: ", ")))")
        }
        let query = try FetchQuery(request, entity: entity, model: model, allowed: Self.parameters)
        var since: PersistentHistoryToken?
        if let text = request.queryValue("since") {
            guard let token = PersistentHistoryToken(text) else { throw Problem.badRequest("since must be a token: a whole number, 0 or more") }
            since = token
        }
        if let text = request.header("Last-Event-ID") {
            // A reconnecting EventSource sends the last event's id: it wins over a `since` kept in the URL.
            guard let token = PersistentHistoryToken(text.trimmingCharacters(in: .whitespaces)) else {
                throw Problem.badRequest("Last-Event-ID must be a token: a whole number, 0 or more")
            }
            since = token
        }
        return (query, since)
    }

    /// The library request of a live query (its limit is the window's, not the request's).
    func fetchRequest(_ query: FetchQuery, entity: EntityDescription) -> FetchRequest {
        FetchRequest(entityName: entity.name, predicate: query.predicate, sortDescriptors: query.sorts, includesPendingChanges: false)
    }

    /// Opens the stream: its first event (the answer, or what a resume needs) comes once the
    /// engine has it.
    func open(_ query: FetchQuery, since: PersistentHistoryToken?, entity: EntityDescription) throws -> HTTPHandlerOutcome {
        guard coordinator.storeDescription.recordsHistory else {
            throw Problem.badRequest("this server records no persistent history (--no-history), which live queries follow")
        }
        let stream = ResponseStream(headers: [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"), ("X-Accel-Buffering", "no")])
        lock.lock()
        guard !stopped else {
            lock.unlock()
            throw Problem.unavailable("the server is shutting down")
        }
        guard open.count < maxStreams else {
            lock.unlock()
            throw Problem.unavailable("this server holds its limit of \(maxStreams) live queries (--max-live-queries); try again later or on another server")
        }
        // Held until the subscription is made (just below), so that `stop` sees it.
        open[ObjectIdentifier(stream)] = (stream, nil)
        lock.unlock()

        let encoder = ObjectJSONEncoder(layouts: layouts, fields: query.fields)
        let spec = LiveQuerySpec(request: fetchRequest(query, entity: entity), limit: query.limit,
                                 renderingKey: "json:" + (query.fields.map { $0.sorted().joined(separator: ",") } ?? "*")) { object in
            try encoder.body(object)
        }
        let subscription: LiveSubscription
        do {
            subscription = try coordinator.liveQueries.subscribe(
                spec, since: since, isReady: { stream.pendingBytes < Self.squashAboveBytes },
                deliver: { [weak self] event in self?.send(event, to: stream) })
        } catch {
            forget(stream)
            throw Problem.fetch(error, entity: entity.name)
        }
        lock.lock()
        let kept = !stopped && open[ObjectIdentifier(stream)] != nil
        if kept { open[ObjectIdentifier(stream)] = (stream, subscription) }
        lock.unlock()
        guard kept else {
            subscription.cancel()
            throw Problem.unavailable("the server is shutting down")
        }
        stream.onEnd { [weak self] in
            subscription.cancel()
            self?.forget(stream)
        }
        return .stream(stream)
    }

    /// Streams open now.
    var openCount: Int {
        lock.lock()
        defer { lock.unlock() }
        return open.count
    }

    private func forget(_ stream: ResponseStream) {
        lock.lock()
        open[ObjectIdentifier(stream)] = nil
        lock.unlock()
    }

    // MARK: Events

    /// One engine event as SSE (on the engine's queue, in order).
    private func send(_ event: LiveEvent, to stream: ResponseStream) {
        var writer = JSONWriter(reservingCapacity: 256)
        switch event {
        case let .snapshot(token, members, more, isReset):
            writer.writeRaw(isReset ? "event: reset\nid: " : "event: snapshot\nid: ")
            writer.writeInteger(token.rawValue)
            writer.writeRaw("\ndata: {\"token\":")
            writer.writeString(token.description)
            writer.writeRaw(",\"objects\":[")
            for (i, member) in members.enumerated() {
                if i > 0 { writer.writeRaw(",") }
                writer.writeRaw(member.payload)
            }
            writer.writeRaw("],\"more\":")
            writer.writeRaw(more ? "true" : "false")
            writer.writeRaw("}\n\n")
        case let .diff(from, to, ops, more):
            writer.writeRaw("event: diff\nid: ")
            writer.writeInteger(to.rawValue)
            writer.writeRaw("\ndata: {\"from\":")
            writer.writeString(from.description)
            writer.writeRaw(",\"to\":")
            writer.writeString(to.description)
            writer.writeRaw(",\"ops\":[")
            for (i, op) in ops.enumerated() {
                if i > 0 { writer.writeRaw(",") }
                Self.write(op, into: &writer)
            }
            writer.writeRaw("],\"more\":")
            writer.writeRaw(more ? "true" : "false")
            writer.writeRaw("}\n\n")
        case .progress(let token):
            writer.writeRaw("event: progress\nid: ")
            writer.writeInteger(token.rawValue)
            writer.writeRaw("\ndata: {\"token\":")
            writer.writeString(token.description)
            writer.writeRaw("}\n\n")
        case .failed(let error):
            ServerLog.error("a live query stopped: \(error)")
            writer.writeRaw("event: error\ndata: ")
            writer.writeString("the live query could not be kept current; reconnect to start again")
            writer.writeRaw("\n\n")
            stream.write(writer.bytes)
            return stream.close()
        }
        stream.write(writer.bytes)
        // A client that reads nothing while its changes keep coming (squashing holds most of
        // them back, but a reset is whole): closed, it resumes with Last-Event-ID.
        if stream.pendingBytes > maxLagBytes { stream.close() }
    }

    private static func write(_ op: LiveOp, into writer: inout JSONWriter) {
        switch op {
        case .delete(let index):
            writer.writeRaw("{\"op\":\"delete\",\"index\":")
            writer.writeInteger(Int64(index))
            writer.writeRaw("}")
        case let .insert(index, member):
            writer.writeRaw("{\"op\":\"insert\",\"index\":")
            writer.writeInteger(Int64(index))
            writer.writeRaw(",\"object\":")
            writer.writeRaw(member.payload)
            writer.writeRaw("}")
        case let .move(from, to):
            writer.writeRaw("{\"op\":\"move\",\"from\":")
            writer.writeInteger(Int64(from))
            writer.writeRaw(",\"to\":")
            writer.writeInteger(Int64(to))
            writer.writeRaw("}")
        case let .update(index, member):
            writer.writeRaw("{\"op\":\"update\",\"index\":")
            writer.writeInteger(Int64(index))
            writer.writeRaw(",\"object\":")
            writer.writeRaw(member.payload)
            writer.writeRaw("}")
        }
    }

    private func ping() {
        lock.lock()
        let streams = open.values.map(\.stream)
        lock.unlock()
        for stream in streams { stream.write(Array(": keep-alive\n\n".utf8)) }
    }

    /// The server is stopping (after its last commit): every stream ends; its client resumes
    /// elsewhere, or here after the restart, with Last-Event-ID.
    func stop() {
        lock.lock()
        stopped = true
        let all = Array(open.values)
        open.removeAll()
        lock.unlock()
        for (stream, subscription) in all {
            subscription?.cancel()
            stream.close()
        }
    }
}
