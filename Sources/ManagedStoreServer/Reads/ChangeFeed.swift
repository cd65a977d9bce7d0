import Foundation
import ManagedStoreCore
import ManagedStoreHTTP

/// `GET /v1/changes`: the persistent history after a token, as pages (`wait` long-polls with
/// the connection suspended, no thread held) or as server-sent events that go on as saves
/// commit. The store tells the feed of every commit (`addCommitObserver`); the feed then
/// answers the waiting requests and writes to the open streams, on a queue of its own.
///
/// `@unchecked Sendable`: `waiters` and `streams` are only touched under `lock`.
final class ChangeFeed: @unchecked Sendable {
    static let defaultLimit = 100
    static let maxLimit = 1000
    static let maxWait = 60
    /// Bytes a stream may hold unsent (a client that stopped reading) before it is closed.
    static let maxUnsentStreamBytes = 8 << 20
    private static let parameters: Set<String> = ["since", "limit", "wait", "objects", "entity"]

    /// What a request asks for.
    struct Query: Sendable, Hashable {
        var since: PersistentHistoryToken = .zero
        var limit = ChangeFeed.defaultLimit
        var wait = 0
        var objects = false
        var entities: Set<String>?
    }

    private struct Waiter {
        let id: Int
        let query: Query
        let deferred: DeferredResponse
    }

    private final class Subscriber: @unchecked Sendable {
        // @unchecked Sendable: `query.since` is only touched on the feed's queue.
        var query: Query
        let stream: ResponseStream
        init(query: Query, stream: ResponseStream) {
            self.query = query
            self.stream = stream
        }
    }

    private let coordinator: PersistentStoreCoordinator
    private let layouts: JSONLayouts
    private let queue = DispatchQueue(label: "ManagedStore.change-feed")
    private let lock = NSLock()
    private var waiters: [Waiter] = []
    private var streams: [Subscriber] = []
    private var nextWaiter = 0
    /// Set by `stop`: long-polls are answered at once and no stream is kept open.
    private var stopped = false
    private var keepAlive: DispatchSourceTimer?

    init(coordinator: PersistentStoreCoordinator, layouts: JSONLayouts) {
        self.coordinator = coordinator
        self.layouts = layouts
        coordinator.addCommitObserver { [weak self] in self?.committed() }
        // A comment line every 15 s keeps idle streams open through proxies and finds clients
        // that left (the write fails).
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + 15, repeating: 15)
        timer.setEventHandler { [weak self] in self?.pingStreams() }
        timer.resume()
        keepAlive = timer
    }

    deinit { keepAlive?.cancel() }

    // MARK: Requests

    /// Answers `request` with the changes to `readable` entities (nil: all) only: a token
    /// narrowed to some entities sees theirs, and is refused the others by name.
    func handle(_ request: HTTPRequest, readable: Set<String>?) throws -> HTTPHandlerOutcome {
        var query = try Self.query(request, model: coordinator.model)
        if let readable {
            if let asked = query.entities, let refused = asked.subtracting(readable).sorted().first {
                throw Problem.forbidden("the token may not read \(refused)")
            }
            query.entities = query.entities ?? readable
        }
        let wantsStream = request.header("Accept")?.lowercased().contains("text/event-stream") ?? false
        if let last = request.header("Last-Event-ID") {
            // Checked also where it is not used (no stream): a malformed token is refused rather
            // than silently replaced by `since`, which would replay or skip changes.
            guard let token = PersistentHistoryToken(last.trimmingCharacters(in: .whitespaces)) else {
                throw Problem.badRequest("Last-Event-ID must be a token: a whole number, 0 or more")
            }
            if wantsStream { query.since = token }  // a reconnecting client resumes after the last event it saw
        }
        let (transactions, oldest) = try page(query)
        if wantsStream {
            let stream = ResponseStream(headers: [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"),
                                                  ("Oldest-Token", oldest.description)])
            let subscriber = Subscriber(query: query, stream: stream)
            queue.async { [self] in
                write(transactions, to: subscriber)
                lock.lock()
                let joined = !stopped
                if joined { streams.append(subscriber) }
                lock.unlock()
                guard joined else { return stream.close() }
                // Saves committed between the first page and joining are sent now.
                catchUp(subscriber)
            }
            stream.onEnd { [weak self] in self?.dropStream(stream) }
            return .stream(stream)
        }
        if transactions.isEmpty && query.wait > 0 {
            let parked = query
            return .suspend { [self] deferred in park(parked, deferred) }
        }
        return .respond(response(transactions, query: query, oldest: oldest))
    }

    /// The request's parameters, checked.
    static func query(_ request: HTTPRequest, model: ManagedObjectModel) throws(Problem) -> Query {
        var query = Query()
        for (name, _) in request.query where !parameters.contains(name) {
            throw Problem.badRequest("unknown query parameter '\(name.prefix(100))' (known: \(parameters.sorted().joined(separator: ", ")))")
        }
        if let text = request.queryValue("since") {
            guard let token = PersistentHistoryToken(text) else { throw Problem.badRequest("since must be a token: a whole number, 0 or more") }
            query.since = token
        }
        if let text = request.queryValue("limit") {
            guard let value = Int(text), value >= 1, value <= maxLimit else { throw Problem.badRequest("limit must be a whole number from 1 to \(maxLimit)") }
            query.limit = value
        }
        if let text = request.queryValue("wait") {
            guard let value = Int(text), value >= 0, value <= maxWait else { throw Problem.badRequest("wait must be a whole number of seconds from 0 to \(maxWait)") }
            query.wait = value
        }
        if let text = request.queryValue("objects") {
            switch text {
            case "true", "1", "": query.objects = true
            case "false", "0": query.objects = false
            default: throw Problem.badRequest("objects must be true or false")
            }
        }
        if let text = request.queryValue("entity") {
            var names: Set<String> = []
            for name in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !name.isEmpty {
                guard model.entity(named: name) != nil else { throw Problem.badRequest("entity: the model has no entity '\(name.prefix(100))'") }
                names.insert(name)
                // A parent entity's changes are its sub-entities' too, as a fetch of it returns their objects.
                names.formUnion(model.kindNames(of: name))
            }
            query.entities = names
        }
        return query
    }

    /// Transactions after `query.since`, and the oldest token the history still takes; 410
    /// when it no longer reaches `since`.
    private func page(_ query: Query) throws -> ([PersistentHistoryTransaction], PersistentHistoryToken) {
        do throws(StoreError) {
            let transactions = try coordinator.history(after: query.since, limit: query.limit, entities: query.entities)
            return (transactions, try coordinator.oldestHistoryToken())
        } catch {
            if case let .historyPruned(_, oldest) = error {
                throw Problem(status: 410, code: "gone", title: "Gone",
                              detail: "the history no longer reaches token \(query.since): it was pruned up to token \(oldest); "
                                + "read again from \(oldest) (some changes were missed)",
                              extra: [("oldestToken", .string(oldest.description))], headers: [("Oldest-Token", oldest.description)])
            }
            ServerLog.error("reading the history failed: \(error)")
            throw Problem.internalError("the store failed to read its history")
        }
    }

    // MARK: Answers

    private func response(_ transactions: [PersistentHistoryTransaction], query: Query, oldest: PersistentHistoryToken) -> HTTPResponse {
        var writer = JSONWriter(reservingCapacity: 256 + 256 * transactions.count)
        writer.writeRaw("{\"transactions\":[")
        let values = query.objects ? currentValues(of: transactions) : nil
        for (i, transaction) in transactions.enumerated() {
            if i > 0 { writer.writeRaw(",") }
            write(transaction, values: values, into: &writer)
        }
        writer.writeRaw("],\"next\":")
        writer.writeString((transactions.last?.token ?? query.since).description)
        writer.writeRaw("}")
        return .json(200, writer.bytes, headers: [("Oldest-Token", oldest.description)])
    }

    /// One transaction as the contract writes it; with `values` (objects=true), each change's
    /// object as a GET answers it now (null when it no longer exists).
    private func write(_ transaction: PersistentHistoryTransaction, values: [ManagedObjectID: [UInt8]]?, into writer: inout JSONWriter) {
        writer.writeRaw("{\"token\":")
        writer.writeString(transaction.token.description)
        writer.writeRaw(",\"timestamp\":")
        writer.writeString(RFC3339.string(from: transaction.timestamp))
        writer.writeRaw(",\"author\":")
        if let author = transaction.author { writer.writeString(author) } else { writer.writeRaw("null") }
        writer.writeRaw(",\"changes\":[")
        for (i, change) in transaction.changes.enumerated() {
            if i > 0 { writer.writeRaw(",") }
            writer.writeRaw("{\"object\":")
            writer.writeString(change.objectID.description)
            writer.writeRaw(",\"type\":")
            writer.writeString(change.changeType.rawValue)
            writer.writeRaw(",\"properties\":")
            writer.write(.array(change.updatedProperties.map(JSONValue.string)))
            if let values {
                writer.writeRaw(",\"value\":")
                if let value = values[change.objectID] { writer.writeRaw(value) } else { writer.writeRaw("null") }
            }
            writer.writeRaw("}")
        }
        writer.writeRaw("]}")
    }

    /// The objects the changes of `transactions` name, as a GET answers them now, read in one
    /// snapshot for the whole page; missing ones are absent.
    private func currentValues(of transactions: [PersistentHistoryTransaction]) -> [ManagedObjectID: [UInt8]] {
        let encoder = ObjectJSONEncoder(layouts: layouts)
        return (try? coordinator.withReadContext { context in
            var result: [ManagedObjectID: [UInt8]] = [:]
            for id in transactions.lazy.flatMap({ $0.changes.lazy.map(\.objectID) }) where result[id] == nil {
                if let body = try context.withStoredObject(id, { row in try encoder.body(row) }) { result[id] = body }
            }
            return result
        }) ?? [:]
    }

    /// The server is stopping (after its last commit): every long-poll is answered with what
    /// it has now, and every stream ends; later requests get a page and no wait.
    func stop() {
        lock.lock()
        stopped = true
        let waiting = waiters
        waiters.removeAll()
        let open = streams
        streams.removeAll()
        lock.unlock()
        for waiter in waiting { waiter.deferred.complete(answer(waiter.query)) }
        for subscriber in open { subscriber.stream.close() }
    }

    // MARK: Waiting

    /// Holds a long-poll until a save commits after its `since`, or its `wait` runs out.
    private func park(_ query: Query, _ deferred: DeferredResponse) {
        lock.lock()
        guard !stopped else {
            lock.unlock()
            deferred.complete(answer(query))
            return
        }
        nextWaiter += 1
        let id = nextWaiter
        waiters.append(Waiter(id: id, query: query, deferred: deferred))
        lock.unlock()
        // A save may have committed between the empty page and parking: look once more.
        queue.async { [self] in serveWaiters() }
        queue.asyncAfter(deadline: .now() + .seconds(query.wait)) { [self] in
            lock.lock()
            let index = waiters.firstIndex { $0.id == id }
            let waiter = index.map { waiters.remove(at: $0) }
            lock.unlock()
            guard let waiter else { return }
            waiter.deferred.complete(answer(waiter.query))
        }
    }

    /// A save committed: answer the waiting requests that now have something, and write to
    /// the streams. (On the committing thread: the work goes to the feed's queue.)
    private func committed() {
        queue.async { [self] in
            serveWaiters()
            lock.lock()
            let open = streams
            lock.unlock()
            open.forEach(catchUp)
        }
    }

    private func serveWaiters() {
        lock.lock()
        let waiting = waiters
        lock.unlock()
        // Long-polls that ask the same (clients following the feed from the same token) share
        // one read of the history and one answer.
        var answers: [Query: HTTPResponse?] = [:]
        for waiter in waiting {
            let found = answers[waiter.query] ?? answer(waiter.query, unlessEmpty: true)
            answers[waiter.query] = found
            guard let answer = found else { continue }
            lock.lock()
            let taken = waiters.firstIndex { $0.id == waiter.id }.map { waiters.remove(at: $0) }
            lock.unlock()
            taken?.deferred.complete(answer)
        }
    }

    /// The page `query` asks for as an answer (a problem answer if the history cannot be
    /// read); nil for an empty page when `unlessEmpty`.
    private func answer(_ query: Query, unlessEmpty: Bool = false) -> HTTPResponse? {
        do {
            let (transactions, oldest) = try page(query)
            if unlessEmpty && transactions.isEmpty { return nil }
            return response(transactions, query: query, oldest: oldest)
        } catch let problem as Problem {
            return problem.response
        } catch {
            return Problem.internalError("the store failed to read its history").response
        }
    }

    private func answer(_ query: Query) -> HTTPResponse {
        answer(query, unlessEmpty: false) ?? Problem.internalError("the store failed to read its history").response
    }

    // MARK: Streams

    /// Writes every transaction after the subscriber's last, page by page (on the feed's queue).
    private func catchUp(_ subscriber: Subscriber) {
        while !subscriber.stream.isClosed {
            guard let (transactions, _) = try? page(subscriber.query) else {
                subscriber.stream.close()  // pruned past it: end, the client reconnects
                return
            }
            guard !transactions.isEmpty else { return }
            write(transactions, to: subscriber)
            if transactions.count < subscriber.query.limit { return }
        }
    }

    /// Sends transactions as events: `id` the token (a reconnecting client's Last-Event-ID),
    /// `data` the transaction's JSON.
    private func write(_ transactions: [PersistentHistoryTransaction], to subscriber: Subscriber) {
        guard !transactions.isEmpty else { return }
        var writer = JSONWriter(reservingCapacity: 256 * transactions.count)
        let values = subscriber.query.objects ? currentValues(of: transactions) : nil
        for transaction in transactions {
            // No `event:` line: the default "message" event, what EventSource's onmessage gets.
            writer.writeRaw(Array("id: \(transaction.token)\ndata: ".utf8))
            write(transaction, values: values, into: &writer)
            writer.writeRaw("\n\n")
            subscriber.query.since = transaction.token
        }
        subscriber.stream.write(writer.bytes)
        if subscriber.stream.pendingBytes > Self.maxUnsentStreamBytes { subscriber.stream.close() }
    }

    private func pingStreams() {
        lock.lock()
        let open = streams
        lock.unlock()
        for subscriber in open { subscriber.stream.write(Array(": keep-alive\n\n".utf8)) }
    }

    private func dropStream(_ stream: ResponseStream) {
        lock.lock()
        streams.removeAll { $0.stream === stream }
        lock.unlock()
    }

    /// Long-polls waiting now (for tests and metrics).
    var waitingCount: Int {
        lock.lock()
        defer { lock.unlock() }
        return waiters.count
    }
}
