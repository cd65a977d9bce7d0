import Dispatch
import ManagedStore

/// `managedstore serve` as a value: a store, the REST service over it, and the HTTP front.
public final class ManagedStoreServer: Sendable {
    public let service: ManagedStoreService
    public let http: HTTPServer

    public init(coordinator: PersistentStoreCoordinator, service configuration: ServiceConfiguration, http: HTTPServer.Configuration) {
        var configuration = configuration
        configuration.maxBodyBytes = http.maxBodyBytes  // one limit for bodies and NDJSON lines
        self.service = ManagedStoreService(coordinator: coordinator, configuration: configuration)
        self.http = HTTPServer(configuration: http, handler: service)
    }

    /// Starts the write queue, then listens.
    public func start() throws {
        service.start()
        do { try http.start() } catch {
            service.stop()
            throw error
        }
    }

    /// Stops cleanly within `timeout` seconds: refuses new connections, lets the write queue
    /// answer every write it holds and commit them, waits for the answers to be sent, stops
    /// libmicrohttpd, and checkpoints the store (the WAL emptied into the database file).
    /// Whatever cannot finish by then has its connection closed without an answer.
    public func stop(timeout: Double = 10) {
        let deadline = DispatchTime.now() + timeout
        http.stopAccepting()
        let drained = service.stop(deadline: deadline)
        http.stop(deadline: deadline)
        if drained {
            do { try service.coordinator.checkpoint() } catch {
                ServerLog.error("the checkpoint at shutdown failed (the WAL keeps the changes; they are safe): \(error)")
            }
        }
    }

    public var port: UInt16 { http.port }
}
