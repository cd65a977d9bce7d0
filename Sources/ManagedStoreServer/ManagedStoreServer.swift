import ManagedStore

/// `managedstore serve` as a value: a store, the REST service over it, and the HTTP front.
public final class ManagedStoreServer: Sendable {
    public let service: ManagedStoreService
    public let http: HTTPServer

    public init(coordinator: PersistentStoreCoordinator, service configuration: ServiceConfiguration, http: HTTPServer.Configuration) {
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

    /// Stops listening (answering suspended requests), then drains and stops the write queue.
    public func stop() {
        http.stop()
        service.stop()
    }

    public var port: UInt16 { http.port }
}
