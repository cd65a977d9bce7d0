import Foundation
import ManagedStoreTestSupport
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite
@testable import ManagedStoreHTTP
@testable import ManagedStoreOpenAPI
@testable import ManagedStoreServer

/// A real server on a free loopback port, over the task tracker (or `model`), for one test.
final class ServerHarness: @unchecked Sendable {
    // @unchecked Sendable: every stored property is a constant set in init.
    let server: ManagedStoreServer
    let coordinator: PersistentStoreCoordinator
    let directory: URL?

    /// `directory`: a store file there (kept when the harness goes: a restart on it), else in
    /// memory (a PostgreSQL schema of its own when the run is on PostgreSQL) or in a folder of its own; `keyLifetime`: the store's idempotency key lifetime.
    init(inMemory: Bool = true, model: ManagedObjectModel = .taskTracker(), directory given: URL? = nil, keyLifetime: Duration? = nil,
         configure: (inout ServiceConfiguration, inout HTTPServer.Configuration) -> Void = { _, _ in }) throws {
        var service = ServiceConfiguration()
        var http = HTTPServer.Configuration()
        http.port = 0
        http.connectionTimeout = 3
        configure(&service, &http)
        var store: StoreDescription
        if let given {
            directory = nil
            store = .sqlite(given.appendingPathComponent("store.sqlite"), durability: .normal)
        } else if inMemory {
            directory = nil
            // On PostgreSQL runs (`make test-postgres-store`), a schema of its own instead.
            store = PostgresTestDatabase.isActive ? try PostgresTestDatabase.freshStore(base: .inMemory) : .inMemory
        } else {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("managedstore-server-\(UUID().uuidString)")
            directory = folder
            store = .sqlite(folder.appendingPathComponent("store.sqlite"), durability: .normal)
        }
        if let keyLifetime { store.idempotencyKeyLifetime = keyLifetime }
        coordinator = try PersistentStoreCoordinator(model: model, store: store)
        server = ManagedStoreServer(coordinator: coordinator, service: service, http: http)
        try server.start()
    }

    deinit {
        server.stop()
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    var port: UInt16 { server.port }

    /// A started server (free loopback port, in-memory store) whose store opens only once `gate`
    /// is signalled: a slow start-up, held as long as a test needs.
    static func startedWhileLoading() throws -> (server: ManagedStoreServer, gate: DispatchSemaphore) {
        let gate = DispatchSemaphore(value: 0)
        var http = HTTPServer.Configuration()
        http.port = 0
        let server = ManagedStoreServer(opening: {
            gate.wait()
            return try PersistentStoreCoordinator(model: .taskTracker(), store: .inMemory)
        }, service: ServiceConfiguration(), http: http)
        try server.start()
        return (server, gate)
    }

    /// The service (a harness's store is open before its server starts, so it is always there).
    var service: ManagedStoreService {
        guard let service = server.service else { preconditionFailure("the harness's server started without its service") }
        return service
    }

    func client() throws -> RawHTTPClient { try RawHTTPClient(port: port) }

    /// One request on a fresh connection.
    func request(_ method: String, _ path: String, json: String? = nil, headers: [(String, String)] = []) throws -> RawHTTPClient.Response {
        let client = try client()
        if let json { return try client.json(method, path, json, headers: headers) }
        return try client.request(method, path, headers: headers)
    }

    /// Every task's title, read straight from the store.
    func taskTitles() throws -> Set<String> {
        let context = ManagedObjectContext(coordinator: coordinator, name: "check")
        return try context.performAndWait {
            Set(try context.fetch(FetchRequest(entityName: "Task")).compactMap { $0.value("title", as: String.self) })
        }
    }

    /// Row counts of every entity, read straight from the store: "the store is unchanged" checks.
    func counts() throws -> [String: Int] {
        let context = ManagedObjectContext(coordinator: coordinator, name: "check")
        return try context.performAndWait {
            var result: [String: Int] = [:]
            for entity in coordinator.model.entities.map(\.name) { result[entity] = try context.count(for: FetchRequest(entityName: entity)) }
            return result
        }
    }
}

extension String {
    /// Percent-encodes a query value (spaces as %20, and everything but unreserved characters).
    var queryEncoded: String {
        addingPercentEncoding(withAllowedCharacters: CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")) ?? self
    }
}

/// Polls `condition` every 10 ms for up to `seconds` (bounded); fails the test if it never holds.
func waitUntil(_ what: String, seconds: Double = 10, _ condition: () -> Bool) throws {
    let deadline = Date(timeIntervalSinceNow: seconds)
    while !condition() {
        guard Date() < deadline else {
            Issue.record("timed out waiting until \(what)")
            throw WaitTimedOut()
        }
        Thread.sleep(forTimeInterval: 0.01)
    }
}

struct WaitTimedOut: Error {}
