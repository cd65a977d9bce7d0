import Foundation
import Logging
import ManagedStoreCore
import ManagedStoreHTTP

/// The handler libmicrohttpd calls: it counts (and logs, when the request log is on) every request, and answers for the
/// service while the store is still loading (or migrating) on a background thread. `/v1/healthz`
/// answers 200 from the moment the port is open; `/v1/readyz` and everything else answer 503
/// with `Retry-After` until the service is installed, then everything goes to it.
public final class ServiceFront: HTTPRequestHandler, @unchecked Sendable {
    // @unchecked Sendable: `state` is only touched under `lock`; the rest is constant.
    private enum State {
        case loading
        case ready(ManagedStoreService)
        case failed(String)
        case stopped
    }

    public let metrics: ServiceMetrics
    let logger: Logger
    /// The line per request, when it is on.
    let requestLog: RequestLog?
    private let lock = NSLock()
    private var state = State.loading

    public init(metrics: ServiceMetrics = ServiceMetrics(), logger: Logger, requestLog: RequestLog? = nil) {
        self.metrics = metrics
        self.logger = logger
        self.requestLog = requestLog
    }

    /// The service, once the store is loaded.
    public var service: ManagedStoreService? {
        lock.lock()
        defer { lock.unlock() }
        if case .ready(let service) = state { return service }
        return nil
    }

    /// Hands requests to `service` from now on, and starts it. False (and the service is not
    /// started) when the server stopped while the store was loading.
    func install(_ service: ManagedStoreService) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard case .loading = state else { return false }
        service.start()
        state = .ready(service)
        return true
    }

    /// The store could not be loaded: `/v1/readyz` says why, for as long as the process runs.
    func fail(_ message: String) {
        lock.lock()
        defer { lock.unlock() }
        if case .loading = state { state = .failed(message) }
    }

    /// No service will be installed any more; returns the one that was, to stop.
    func stop() -> ManagedStoreService? {
        lock.lock()
        defer { lock.unlock() }
        let installed: ManagedStoreService?
        if case .ready(let service) = state { installed = service } else { installed = nil }
        if case .loading = state { state = .stopped }
        return installed
    }

    // MARK: HTTPRequestHandler

    public func bodyStream(for request: HTTPRequest) -> HTTPBodyStream? {
        service?.bodyStream(for: request)
    }

    public func handle(_ request: HTTPRequest) -> HTTPHandlerOutcome {
        lock.lock()
        let current = state
        lock.unlock()
        switch current {
        case .ready(let service):
            return service.handle(request)
        case .loading, .stopped:
            return .respond(notReady(request, detail: "the store is loading (or migrating); try again shortly"))
        case .failed(let message):
            return .respond(notReady(request, detail: "the store could not be loaded: \(message)"))
        }
    }

    /// Before the service is there: the liveness probe is alive; every other request is 503.
    private func notReady(_ request: HTTPRequest, detail: String) -> HTTPResponse {
        let segments = request.pathSegments
        if request.method == "GET" || request.method == "HEAD", segments == ["v1", "healthz"] {
            return .json(200, Array(#"{"status":"starting"}"#.utf8))
        }
        return Problem.unavailable(detail).response
    }

    /// The HTTP layer's own refusals, as problem+json.
    public func answer(_ refusal: HTTPRefusal) -> HTTPResponse {
        switch refusal {
        case .bodyTooLarge(let limit): return Problem.payloadTooLarge(limit: limit).response
        case .bodiesBusy: return Problem.bodiesBusy().response
        case .shuttingDown: return Problem.unavailable("the server is shutting down; nothing was done").response
        }
    }

    public func requestCompleted(_ request: CompletedRequest) {
        let route = RouteTemplate.of(path: request.path)
        metrics.record(request, route: route)
        requestLog?.record(request, route: route.text)
    }
}
