import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A live query's stream leaves libmicrohttpd with its connection and is sent from a socket of
/// its own (`StreamHandOff`, `StreamPump`): what a client sees must be one plain HTTP answer, the
/// same events as through libmicrohttpd, counted against the client's connections, and ended
/// cleanly by a stop. Over real sockets, against a server process.
@Suite("Live streams on their own sockets", .serialized, .sqliteWhateverTheRun)
struct LiveStreamSocketTests {
    init() { LoopbackSocket.raiseFileLimit() }

    static let query = "/v1/objects/Task/live?sort=-priority,title&limit=3"

    /// Sends the head of a live query's GET on `client`.
    static func openLive(_ client: RawHTTPClient, _ path: String = query, version: String = "HTTP/1.1") throws {
        try client.send(Array("GET \(path) \(version)\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n".utf8))
    }

    static func contains(_ body: [UInt8], _ text: String) -> Bool {
        body.firstRange(of: Array(text.utf8)) != nil
    }

    /// The stream's events that do not depend on timing (snapshots and diffs; not progress
    /// events, sent once a second), each as its text.
    static func events(_ body: [UInt8]) -> [String] {
        String(decoding: body, as: UTF8.self).components(separatedBy: "\n\n")
            .filter { $0.hasPrefix("event: snapshot") || $0.hasPrefix("event: diff") }
    }

    /// Writes that each change the window of `query` (limit 3, highest priority first): inserts,
    /// one that pushes the last member out, a patch that brings it back, a patch in place, a
    /// delete that refills. After each, the stream is read until the write's History-Token.
    static func followWrites(server: ServerProcess) throws -> [String] {
        let reader = try RawHTTPClient(port: server.port)
        try openLive(reader)
        let head = try reader.readHead()
        #expect(head.status == 200)
        var body = try reader.readChunks { contains($0, "event: snapshot") }.body
        let writer = try RawHTTPClient(port: server.port)
        let writes: [(String, String, String?)] = [
            ("POST", "/v1/objects/Task", #"{"title":"a","priority":1}"#),
            ("POST", "/v1/objects/Task", #"{"title":"b","priority":2}"#),
            ("POST", "/v1/objects/Task", #"{"title":"c","priority":3}"#),
            ("POST", "/v1/objects/Task", #"{"title":"d","priority":4}"#),
            ("PATCH", "/v1/objects/Task/1", #"{"priority":5}"#),
            ("PATCH", "/v1/objects/Task/3", #"{"title":"cc"}"#),
            ("DELETE", "/v1/objects/Task/4", nil),
        ]
        for (method, path, json) in writes {
            let answer = try json.map { try writer.json(method, path, $0) } ?? writer.request(method, path)
            #expect((200..<300).contains(answer.status), "\(method) \(path): \(answer.status) \(answer.text)")
            let token = try #require(answer.header("History-Token"))
            let seen = body.count
            body += try reader.readChunks { contains($0, "id: \(token)\n") }.body
            #expect(body.count > seen)
        }
        return events(body)
    }

    @Test("A live query is one HTTP/1.1 answer: its head, a chunked body of events, the last chunk when the server stops, then the connection closes; its request is logged once it ends")
    func oneChunkedAnswer() throws {
        let server = try ServerProcess()
        let client = try RawHTTPClient(port: server.port)
        try Self.openLive(client, "/v1/objects/Task/live?sort=title", version: "HTTP/1.1")
        let head = try client.readHead()
        #expect(head.status == 200)
        #expect(head.headers["content-type"] == "text/event-stream")
        #expect(head.headers["transfer-encoding"] == "chunked")
        #expect(head.headers["connection"] == "close")
        #expect(head.headers["request-id"]?.isEmpty == false)
        #expect(head.headers["date"]?.hasSuffix(" GMT") == true)
        _ = try client.readChunks { Self.contains($0, "event: snapshot") }
        let answer = try RawHTTPClient(port: server.port).json("POST", "/v1/objects/Task", #"{"title":"one","priority":1}"#)
        #expect(answer.status == 201)
        let diff = try client.readChunks { Self.contains($0, "\"title\":\"one\"") }
        #expect(Self.contains(diff.body, "event: diff"))

        server.signal(SIGTERM)
        let rest = try client.readChunks(seconds: 15) { _ in false }
        #expect(rest.ended, "the stream ends with the last chunk")
        #expect(client.isClosedByServer())
        #expect(server.waitForExit(seconds: 20) == 0)
        let log = server.stderr
        #expect(log.contains("route=/v1/objects/{entity}/live status=200"), "\(log.suffix(1_500))")
        #expect(!log.contains("Application reported internal error"))
    }

    @Test("An HTTP/1.0 client gets the events as the body, not chunked, until the connection closes")
    func http10() throws {
        let server = try ServerProcess()
        let client = try RawHTTPClient(port: server.port)
        try Self.openLive(client, "/v1/objects/Task/live?sort=title", version: "HTTP/1.0")
        let head = try client.readHead()
        #expect(head.status == 200)
        #expect(head.headers["transfer-encoding"] == nil)
        let snapshot = try client.readUntilClosed { Self.contains($0, "event: snapshot") }
        #expect(String(decoding: snapshot.body, as: UTF8.self).hasPrefix("event: snapshot\n"))
        server.signal(SIGTERM)
        #expect(try client.readUntilClosed(seconds: 15) { _ in false }.ended)
        #expect(server.waitForExit(seconds: 20) == 0)
    }

    @Test("The same writes give the same events on a stream of its own socket as through libmicrohttpd")
    func twinOfTheStreamThroughLibmicrohttpd() throws {
        let ownSocket = try ServerProcess()
        let throughLibmicrohttpd = try ServerProcess(environment: ["MANAGEDSTORE_STREAMS_THROUGH_LIBMICROHTTPD": "1"])
        let fast = try Self.followWrites(server: ownSocket)
        let plain = try Self.followWrites(server: throughLibmicrohttpd)
        // A snapshot and a diff for each of the seven writes.
        #expect(fast.count == 8)
        #expect(fast == plain)
    }

    @Test("Streams count against their client's connection limit while open, and give their place back when the client goes away")
    func streamsHoldTheirClientsPlaces() throws {
        let server = try ServerProcess(arguments: ["--max-connections-per-client", "3"])
        var streams: [RawHTTPClient] = []
        for _ in 0..<3 {
            let client = try RawHTTPClient(port: server.port, from: "127.0.0.5")
            try Self.openLive(client)
            #expect(try client.readHead().status == 200)
            _ = try client.readChunks { Self.contains($0, "event: snapshot") }
            streams.append(client)
        }
        let refused = try LoopbackSocket(port: server.port, from: "127.0.0.5")
        #expect(refused.headStatus(of: "GET /v1/healthz HTTP/1.1\r\nHost: x\r\n\r\n", timeout: 2) == nil)
        let other = try LoopbackSocket(port: server.port, from: "127.0.0.6")
        #expect(other.headStatus(of: "GET /v1/healthz HTTP/1.1\r\nHost: x\r\n\r\n") == 200)
        #expect(try ConnectionLimitTests.metric(server, "managedstore_live_queries_open") == 3)

        streams.removeLast()  // closes its socket
        var admitted = false
        let deadline = Date().addingTimeInterval(10)
        while !admitted && Date() < deadline {
            let again = try LoopbackSocket(port: server.port, from: "127.0.0.5")
            admitted = again.headStatus(of: "GET /v1/healthz HTTP/1.1\r\nHost: x\r\n\r\n", timeout: 2) == 200
            if !admitted { usleep(50_000) }
        }
        #expect(admitted, "a place is given back once the stream's client has gone")
        #expect(try ConnectionLimitTests.metric(server, "managedstore_live_queries_open") == 2)
    }

    @Test("A client that stops reading has its stream ended once its socket has stayed full for the connection timeout")
    func stalledReaderIsEnded() throws {
        let server = try ServerProcess(arguments: ["--connection-timeout", "2"])
        // A receive buffer of a few KiB, never read: the server's socket fills soon.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var small: Int32 = 4_096
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = server.port.bigEndian
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        try #require(connected == 0)
        let request = Array("GET /v1/objects/Task/live?sort=title&limit=1000 HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
        #expect(request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == request.count)
        let deadlineToOpen = Date().addingTimeInterval(10)
        while try ConnectionLimitTests.metric(server, "managedstore_live_queries_open") != 1, Date() < deadlineToOpen { usleep(20_000) }

        // 100 inserts of 64 KiB titles: about 6.4 MiB of diffs, more than the kernel holds for the
        // socket (its send buffer grows to about 4 MiB here) and less than --max-live-lag-bytes
        // (8 MiB) held by the server besides, so only the stall can end the stream.
        let writer = try RawHTTPClient(port: server.port)
        let title = String(repeating: "x", count: 65_536)
        for i in 0..<100 {
            #expect(try writer.json("POST", "/v1/objects/Task", #"{"title":"\#(i)-\#(title)"}"#).status == 201)
        }
        var open = try ConnectionLimitTests.metric(server, "managedstore_live_queries_open")
        let deadline = Date().addingTimeInterval(15)
        while open != 0, Date() < deadline {
            usleep(100_000)
            open = try ConnectionLimitTests.metric(server, "managedstore_live_queries_open")
        }
        #expect(open == 0, "the stalled stream is still open")
    }
}
