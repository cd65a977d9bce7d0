import Dispatch
import Foundation
import Logging
import ManagedStoreCore
import ManagedStoreHTTP

/// `managedstore serve` as a value: a store, the REST service over it, and the HTTP front.
///
/// The port opens first; the store is opened (and migrated) on a thread of its own, and the
/// service takes requests once it is (`ServiceFront`): a big migration never keeps a container's
/// liveness probe from answering.
public final class ManagedStoreServer: Sendable {
    public let front: ServiceFront
    public let http: HTTPServer
    private let open: @Sendable () throws -> PersistentStoreCoordinator
    private let configuration: ServiceConfiguration
    private let inBackground: Bool
    private let loaded = DispatchSemaphore(value: 0)

    /// A server over a store that is open already: ready from its first request.
    public convenience init(coordinator: PersistentStoreCoordinator, service: ServiceConfiguration, http: HTTPServer.Configuration) {
        self.init(opening: { coordinator }, service: service, http: http, inBackground: false)
    }

    /// A server whose store `open` opens (and migrates) after the port is open, when
    /// `inBackground`; `onFailure` hears why it could not, if it could not.
    public init(opening open: @escaping @Sendable () throws -> PersistentStoreCoordinator, service configuration: ServiceConfiguration,
                http: HTTPServer.Configuration, inBackground: Bool = true) {
        var configuration = configuration
        configuration.maxBodyBytes = http.maxBodyBytes  // one limit for bodies and NDJSON lines
        self.configuration = configuration
        self.open = open
        self.inBackground = inBackground
        self.front = ServiceFront(logger: configuration.logger, requestLog: configuration.requestLog)
        var http = http
        if http.warn == nil { http.warn = { ServerLog.warning($0) } }
        self.http = HTTPServer(configuration: http, handler: front)
        // Weakly: the front's metrics must not keep the server (and through it the store's
        // connections) alive.
        front.metrics.reportConnections(from: { [weak http = self.http] in http?.connectionStatistics ?? ConnectionStatistics() })
    }

    /// The service, once the store is loaded.
    public var service: ManagedStoreService? { front.service }

    /// Listens, and loads the store: first, or (`inBackground`) on a thread of its own while the
    /// port already answers. `failed` hears a store that could not be loaded, on that thread.
    /// `listening` is told the port as soon as it is open, before anything about the store is
    /// logged: the place for the first line of a server's log.
    public func start(listening: (UInt16) -> Void = { _ in }, failed: @escaping @Sendable (Error) -> Void = { _ in }) throws {
        guard inBackground else {
            do { try load() } catch {
                loaded.signal()
                throw error
            }
            do { try http.start() } catch {
                front.stop()?.stop()
                throw error
            }
            listening(http.port)
            return
        }
        try http.start()
        // Before the loading thread starts, so no line about the store can come first.
        listening(http.port)
        let thread = Thread { [self] in
            do { try load() } catch {
                front.fail("\(error)")
                loaded.signal()
                failed(error)
            }
        }
        thread.name = "managedstore-load"
        thread.start()
    }

    private func load() throws {
        let coordinator = try open()
        let service = ManagedStoreService(coordinator: coordinator, configuration: configuration, metrics: front.metrics)
        if front.install(service) {
            configuration.logger.info("ready", metadata: ["model": .string(coordinator.model.name)])
        }
        loaded.signal()
    }

    /// Waits until the store is loaded (or could not be); false when `timeout` passed first.
    public func waitUntilLoaded(timeout: Double) -> Bool {
        guard loaded.wait(timeout: .now() + timeout) == .success else { return false }
        loaded.signal()  // for the next to ask
        return true
    }

    /// Stops cleanly within `timeout` seconds: refuses new connections, lets the write queue
    /// answer every write it holds and commit them, waits for the answers to be sent, stops
    /// libmicrohttpd, and checkpoints the store (the WAL emptied into the database file).
    /// Whatever cannot finish by then has its connection closed without an answer. A store
    /// still loading is left to finish by itself (a migration is one transaction: if the
    /// process exits first, the file is as it was).
    public func stop(timeout: Double = 10) {
        let deadline = DispatchTime.now() + timeout
        http.stopAccepting()
        let service = front.stop()
        let drained = service?.stop(deadline: deadline) ?? false
        http.stop(deadline: deadline)
        if let service, drained {
            do { try service.coordinator.settle() } catch {
                ServerLog.error("the store could not settle at shutdown (nothing committed is lost: it stays in the store's log): \(error)")
            }
        }
    }

    public var port: UInt16 { http.port }
}
