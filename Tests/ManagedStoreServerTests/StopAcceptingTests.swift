import Foundation
import Testing
@testable import ManagedStoreHTTP
@testable import ManagedStoreOpenAPI
@testable import ManagedStoreServer

/// What a client sees while a server stops: new connections are closed unanswered, a request on
/// a connection already open is answered 503, and stopping while clients keep connecting never
/// takes the process down.
@Suite("Stop accepting", .serialized)
struct StopAcceptingTests {
    @Test("after stopAccepting, a new connection is closed unanswered and a request on an open one is answered 503 with Connection: close")
    func refusesNewWork() throws {
        let harness = try ServerHarness()
        let open = try harness.client()
        #expect(try open.request("GET", "/v1/healthz").status == 200)

        harness.server.http.stopAccepting()

        // The kernel may still complete the handshake (the socket listens until MHD stops);
        // the server then closes the connection without a byte of answer.
        if let late = try? harness.client() {
            try? late.send(Array("GET /v1/healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8))
            #expect(late.isClosedByServer(), "a connection made after stopAccepting was served")
        }
        let answer = try open.request("GET", "/v1/healthz")
        #expect(answer.status == 503)
        #expect(answer.header("Connection")?.lowercased() == "close")
    }

    @Test("stopping while clients keep connecting, 30 times over, never aborts the process")
    func stopsUnderConnectingClients() throws {
        for _ in 0..<30 {
            let harness = try ServerHarness()
            let port = harness.port
            let done = DispatchSemaphore(value: 0)
            let connector = Thread {
                // Bounded: at most 200 connections, and it ends once the server is gone.
                for _ in 0..<200 {
                    guard let client = try? RawHTTPClient(port: port, timeout: 1) else { break }
                    _ = try? client.request("GET", "/v1/healthz")
                }
                done.signal()
            }
            connector.start()
            Thread.sleep(forTimeInterval: 0.01)
            harness.server.stop(timeout: 2)
            #expect(done.wait(timeout: .now() + 30) == .success, "the connecting client never finished")
        }
    }
}
