import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite
@testable import ManagedStoreHTTP
@testable import ManagedStoreOpenAPI
@testable import ManagedStoreServer

/// `managedstore healthcheck`, the image's HEALTHCHECK: 0 only when the server is ready.
@Suite("healthcheck command", .sqliteWhateverTheRun)
struct HealthcheckCommandTests {
    @Test("exit 0 when /v1/readyz is 200; 1 while the store loads, and with nothing listening; a bad --url is a usage error")
    func healthcheck() throws {
        let (server, gate) = try ServerHarness.startedWhileLoading()
        defer { server.stop(timeout: 5) }
        let url = "http://127.0.0.1:\(server.port)"

        let loading = try ServerProcess.run(["healthcheck", "--url", url])
        #expect(loading.status == 1)
        #expect(loading.stderr.contains("503"))
        gate.signal()
        #expect(server.waitUntilLoaded(timeout: 10))
        #expect(try ServerProcess.run(["healthcheck", "--url", url]).status == 0)
        #expect(try ServerProcess.run(["healthcheck", "--url", url + "/"]).status == 0)
        #expect(try ServerProcess.run(["healthcheck"], environment: ["MANAGEDSTORE_URL": url]).status == 0)
        #expect(try ServerProcess.run(["healthcheck"], environment: ["MANAGEDSTORE_PORT": String(server.port)]).status == 0)

        // A port nobody listens on: the one just freed by a socket of our own.
        let free = TransactionCrashTests.freePort()
        let nobody = try ServerProcess.run(["healthcheck", "--url", "http://127.0.0.1:\(free)", "--timeout", "2"])
        #expect(nobody.status == 1)
        #expect(nobody.stderr.contains("no answer"))
        for bad in ["https://127.0.0.1:1", "127.0.0.1:8080", "http://127.0.0.1:99999", "http://127.0.0.1:80/v1"] {
            #expect(try ServerProcess.run(["healthcheck", "--url", bad]).status == 64, "\(bad)")
        }
    }
}
