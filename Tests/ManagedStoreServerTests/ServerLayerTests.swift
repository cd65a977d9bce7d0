import Foundation
import Testing

/// The server's layer (issue 38): code that imports what the server target depends on (the
/// core, the HTTP front, the OpenAPI document, the service) sees the store protocol's users but
/// no store. `scripts/check-layers.sh` (`make test-layers`) checks the other half: that the
/// server target cannot import a store module it does not declare.
@Suite("The server's layer")
struct ServerLayerTests {
    /// Type-checks `code` under the server target's imports against the built modules.
    static func typecheck(_ code: String) throws -> (status: Int32, output: String) {
        let folder = TemporaryFolder()
        let source = folder.url.appendingPathComponent("server.swift")
        let imports = ["ManagedStoreCore", "ManagedStoreHTTP", "ManagedStoreOpenAPI", "ManagedStoreServer"].map { "import \($0)\n" }.joined()
        try Data((imports + code).utf8).write(to: source)
        return try SwiftTypecheck.run([source.path])
    }

    @Test("Server code names the coordinator and the service, and cannot name the SQLite or PostgreSQL store")
    func serverCannotNameAStore() throws {
        let plain = try Self.typecheck("""
            func serve(_ coordinator: PersistentStoreCoordinator, _ configuration: ServiceConfiguration) -> ManagedStoreService {
                ManagedStoreService(coordinator: coordinator, configuration: configuration)
            }
            """)
        #expect(plain.status == 0, "the server's own names must compile: \(plain.output)")
        for store in ["SQLiteStore", "PostgreSQLStore"] {
            let naming = try Self.typecheck("func open(_ store: \(store)) {}\n")
            #expect(naming.status != 0 && naming.output.contains("cannot find type '\(store)' in scope"), "\(store): \(naming.output)")
        }
    }
}
