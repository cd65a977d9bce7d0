import Foundation
import Logging
import ManagedStoreCore
import ManagedStoreHTTP
import ManagedStoreOpenAPI

/// The REST API (`openapi/openapi.yaml`; the README's "The HTTP API in five minutes") over one
/// store: the parts it is made of (read handlers, write parser and queue, change feed, history
/// retention, idempotency expiry, access control, metrics, the model's OpenAPI document), their
/// start and stop, and the HTTP handler's entry points. The router (`Router.swift`) sends each
/// request to the part that answers it.
public final class ManagedStoreService: HTTPRequestHandler {
    public let coordinator: PersistentStoreCoordinator
    let configuration: ServiceConfiguration
    let writes: WriteQueue
    let reads: ReadHandlers
    let parser: WriteRequestParser
    let changes: ChangeFeed
    let live: LiveQueryStreams
    let retention: HistoryRetention?
    /// Deletes idempotency records past the store's key lifetime.
    let idempotencyExpiry: IdempotencyExpiry
    /// Every entity's JSON keys, made once.
    let layouts: JSONLayouts
    let access: AccessControl
    let metrics: ServiceMetrics
    /// The OpenAPI document of this model (`ModelOpenAPI`), made once.
    let openAPIDocument: [UInt8]
    let openAPIYAML: [UInt8]
    let ready = ReadyFlag()

    public init(coordinator: PersistentStoreCoordinator, configuration: ServiceConfiguration, metrics: ServiceMetrics = ServiceMetrics()) {
        self.coordinator = coordinator
        self.configuration = configuration
        self.metrics = metrics
        let document = ModelOpenAPI.document(for: coordinator.model)
        self.openAPIDocument = document.serialized().utf8Array
        self.openAPIYAML = YAMLWriter.yaml(document).utf8Array
        self.layouts = JSONLayouts(coordinator.model)
        self.access = AccessControl(tokens: configuration.accessTokens)
        self.reads = ReadHandlers(coordinator: coordinator, configuration: configuration, layouts: layouts)
        self.changes = ChangeFeed(coordinator: coordinator, layouts: layouts)
        self.live = LiveQueryStreams(coordinator: coordinator, layouts: layouts, maxStreams: configuration.maxLiveQueries,
                                     maxLagBytes: configuration.maxLiveLagBytes)
        self.parser = WriteRequestParser(coordinator: coordinator, configuration: configuration)
        self.writes = WriteQueue(coordinator: coordinator, groupCommit: configuration.groupCommit)
        if case .period(let period) = configuration.historyRetention {
            self.retention = HistoryRetention(coordinator: coordinator, period: period)
        } else {
            self.retention = nil
        }
        self.idempotencyExpiry = IdempotencyExpiry(coordinator: coordinator)
    }

    public func start() {
        writes.start()
        retention?.start()
        idempotencyExpiry.start()
        ready.set(true)
    }

    /// Stops taking writes and waits until `deadline` for the queued ones to be answered and
    /// committed. Returns whether the queue finished by then.
    @discardableResult
    public func stop(deadline: DispatchTime = .distantFuture) -> Bool {
        ready.set(false)
        retention?.stop()
        idempotencyExpiry.stop()
        let finished = writes.stop(deadline: deadline)
        // After the last commit: long-polls are answered with what they have, streams end.
        changes.stop()
        live.stop()
        return finished
    }

    var model: ManagedObjectModel { coordinator.model }

    /// An NDJSON batch insert is read as it arrives (`NDJSONImport`). Anything about it that is
    /// wrong before the body (an unknown entity, a bad parameter) is left to `handle`, which
    /// answers it after the body.
    public func bodyStream(for request: HTTPRequest) -> HTTPBodyStream? {
        guard request.method == "POST", request.mediaType == "application/x-ndjson" else { return nil }
        let segments = request.pathSegments
        guard segments.count == 3, segments[0] == "v1", segments[1] == "objects", let entity = model.entity(named: segments[2]), !entity.isAbstract,
              // A request the token does not allow is answered by `handle`, never read.
              access.allows(request, .write, on: .entity(entity.name)),
              let policy = try? parser.mergePolicy(request, alsoAllowed: ["atomic"]), let atomic = try? WriteRequestParser.atomic(request)
        else { return nil }
        // A malformed Idempotency-Key is answered by `handle` too.
        let key: IdempotencyKey?
        do { key = try IdempotentWrite.key(of: request) } catch { return nil }
        return NDJSONImport(entity: entity, coordinator: coordinator, writes: writes, policy: policy, author: parser.author(request),
                            atomic: atomic, byteLimit: configuration.maxBodyBytes,
                            idempotency: key.map { ($0, IdempotentWrite.fingerprintStart(of: request, tokenName: (try? access.authenticate(request))??.name)) })
    }

    public func handle(_ request: HTTPRequest) -> HTTPHandlerOutcome {
        do {
            return try route(request)
        } catch let problem as Problem {
            return .respond(problem.response)
        } catch {
            return .respond(Problem.internalError("\(error)").response)
        }
    }
}

/// Whether the service accepts requests; read by /v1/readyz from any thread.
final class ReadyFlag: @unchecked Sendable {
    // @unchecked Sendable: `flag` is only touched under `lock`.
    private let lock = NSLock()
    private var flag = false
    var value: Bool { lock.lock(); defer { lock.unlock() }; return flag }
    func set(_ value: Bool) { lock.lock(); flag = value; lock.unlock() }
}

extension String {
    var utf8Array: [UInt8] { Array(utf8) }
}
