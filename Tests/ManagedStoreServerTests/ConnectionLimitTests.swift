import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// One client must not lock everyone out (issue 43): a limit of connections per client address,
/// refused as they are accepted; a deadline for each request's head; room made in a full server
/// by closing the connection that has waited longest for a request. Over real sockets: the
/// server listens on 127.0.0.1, and the clients connect from other loopback addresses.
@Suite("Connection floods and slow heads", .serialized, .sqliteWhateverTheRun)
struct ConnectionLimitTests {
    init() { LoopbackSocket.raiseFileLimit() }

    /// What a well-behaved client saw: each request's status and time, on a new connection.
    struct Probe {
        var statuses: [Int] = []
        var seconds: [Double] = []
        var failures: [String] = []

        var p99: Double {
            let sorted = seconds.sorted()
            return sorted.isEmpty ? .infinity : sorted[min(sorted.count - 1, Int(Double(sorted.count) * 0.99))]
        }
    }

    /// Requests from `source`, each on a connection of its own (the way a client that was locked
    /// out would come back), health checks and a read in turn, for `seconds` (at most 3,000).
    static func probe(_ server: ServerProcess, from source: String, seconds: Double) -> Probe {
        var probe = Probe()
        let paths = ["/v1/healthz", "/v1/readyz", "/v1/objects/Task?limit=1"]
        let end = Date().addingTimeInterval(seconds)
        while Date() < end && probe.statuses.count < 3_000 {
            let path = paths[probe.statuses.count % paths.count]
            let started = DispatchTime.now().uptimeNanoseconds
            do {
                let client = try RawHTTPClient(port: server.port, timeout: 10, from: source)
                let response = try client.request("GET", path)
                probe.statuses.append(response.status)
            } catch {
                probe.failures.append("\(path): \(error)")
                probe.statuses.append(0)
            }
            probe.seconds.append(Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9)
        }
        return probe
    }

    /// A metric's value in `/v1/metrics` (the sample line that starts with `sample`).
    static func metric(_ server: ServerProcess, _ sample: String) throws -> Double? {
        let text = try RawHTTPClient(port: server.port).request("GET", "/v1/metrics").text
        return text.split(separator: "\n").first { $0.hasPrefix(sample + " ") }.flatMap { Double($0.split(separator: " ").last!) }
    }

    @Test("A client that opens connections until refused holds at most its limit, while another client's requests are all answered, p99 within a few times normal")
    func floodFromOneAddress() throws {
        let server = try ServerProcess()
        _ = Self.probe(server, from: "127.0.0.3", seconds: 0.3)  // warm up
        let quiet = Self.probe(server, from: "127.0.0.3", seconds: 1.5)

        // The flood: as many connections as 127.0.0.2 can open for 3 s (at most 20,000), kept
        // open; those the server closes are counted refused.
        // `@unchecked Sendable`: written by the flooding thread only, read by the test after
        // `floodEnded` (the semaphore orders the two).
        final class FloodResult: @unchecked Sendable {
            var held = 0, refused = 0, attempts = 0
            var open: [LoopbackSocket] = []  // kept open until the test ends
        }
        let flood = FloodResult()
        let floodEnded = DispatchSemaphore(value: 0)
        let port = server.port
        Thread.detachNewThread {
            var open: [LoopbackSocket] = []
            let end = Date().addingTimeInterval(3)
            while Date() < end && flood.attempts < 20_000 {
                flood.attempts += 1
                if let socket = try? LoopbackSocket(port: port, from: "127.0.0.2") { open.append(socket) }
                if flood.attempts % 32 == 0 {
                    let before = open.count
                    open.removeAll { $0.isClosedByServer }
                    flood.refused += before - open.count
                }
            }
            usleep(300_000)  // the last refusals reach us
            let before = open.count
            open.removeAll { $0.isClosedByServer }
            flood.refused += before - open.count
            flood.held = open.count
            flood.open = open
            floodEnded.signal()
        }
        usleep(200_000)  // the flood is at its limit
        let flooded = Self.probe(server, from: "127.0.0.3", seconds: 2)
        floodEnded.wait()
        // The server's own count, the flood's connections held: its 64, the metrics request's, and
        // at most a probe's connection not yet reported closed.
        let openDuringFlood = try Self.metric(server, "managedstore_connections_open")

        #expect(flooded.failures.isEmpty, "\(flooded.failures.prefix(3))")
        #expect(Set(quiet.statuses + flooded.statuses) == [200])
        #expect(flood.held == 64)
        #expect(openDuringFlood.map { $0 >= 64 && $0 <= 67 } == true, "\(String(describing: openDuringFlood)) open during the flood")
        #expect(flood.refused > 0 && flood.refused + flood.held <= flood.attempts)
        let counted = try #require(try Self.metric(server, "managedstore_connections_refused_total{reason=\"per_client\"}"))
        #expect(counted >= Double(flood.refused) && counted <= Double(flood.attempts - flood.held))
        // Timing is the benchmarks' business; this bound only tells a flood that slows everyone
        // (without the limit, no answer came for 29 s) from one that does not.
        print("flood: \(flood.attempts) connections tried, \(flood.refused) refused; p99 quiet \(quiet.p99 * 1000) ms, flooded \(flooded.p99 * 1000) ms over \(flooded.seconds.count) requests")
        #expect(flooded.p99 <= max(5 * quiet.p99, quiet.p99 + 0.05), "p99 \(flooded.p99) s under the flood, \(quiet.p99) s without")
        // One log line for the flood's refusals (rate-limited to one per 10 s).
        #expect(server.stderr.components(separatedBy: "refusing connections from 127.0.0.2").count - 1 == 1)
    }

    @Test("Hundreds of connections sending a head one line at a time are closed at the header deadline; other clients are answered throughout")
    func slowHeads() throws {
        let server = try ServerProcess(arguments: ["--header-timeout", "2"])
        // 300 slow clients on five addresses (60 each, under the limit per client).
        var slow: [(socket: LoopbackSocket, firstByte: Date, closedAfter: Double?)] = []
        for index in 0..<300 {
            let socket = try LoopbackSocket(port: server.port, from: "127.0.0.\(10 + index % 5)")
            #expect(socket.send("GET /v1/healthz HTTP/1.1\r\n"))
            slow.append((socket, Date(), nil))
        }
        // `@unchecked Sendable`: written by the probing thread only, read after `probeEnded`.
        final class Probed: @unchecked Sendable { var probe = Probe() }
        let probed = Probed()
        let probeEnded = DispatchSemaphore(value: 0)
        let server2 = server
        Thread.detachNewThread {
            probed.probe = Self.probe(server2, from: "127.0.0.3", seconds: 4)
            probeEnded.signal()
        }
        // One header line every 0.6 s from each, for at most 6 s, until the server closes them.
        let end = Date().addingTimeInterval(6)
        var nextLine = Date().addingTimeInterval(0.6)
        while Date() < end && slow.contains(where: { $0.closedAfter == nil }) {
            for index in slow.indices where slow[index].closedAfter == nil && slow[index].socket.isClosedByServer {
                slow[index].closedAfter = Date().timeIntervalSince(slow[index].firstByte)
            }
            if Date() >= nextLine {
                for entry in slow where entry.closedAfter == nil { entry.socket.send("X-Slow: 1\r\n") }
                nextLine = nextLine.addingTimeInterval(0.6)
            }
            usleep(20_000)
        }
        probeEnded.wait()

        let closedAfter = slow.compactMap(\.closedAfter)
        #expect(closedAfter.count == 300, "\(300 - closedAfter.count) slow heads were not closed within 6 s")
        // The deadline is 2 s from the first byte, kept to within the guard's look every 0.1 s.
        let (earliest, latest) = (closedAfter.min() ?? 0, closedAfter.max() ?? 0)
        print("slow heads closed between \(earliest) and \(latest) s after their first byte")
        #expect(earliest >= 1.9 && latest <= 3.0, "closed between \(earliest) and \(latest) s after the first byte")
        #expect(probed.probe.failures.isEmpty, "\(probed.probe.failures.prefix(3))")
        #expect(Set(probed.probe.statuses) == [200] && probed.probe.statuses.count > 10)
        #expect(try Self.metric(server, "managedstore_connections_closed_total{reason=\"header_timeout\"}") == 300)
    }

    @Test("On a kept-alive connection, the wait for the next request is under the idle timeout; the head's deadline runs from its first byte")
    func keptAliveConnection() throws {
        let server = try ServerProcess(arguments: ["--header-timeout", "1"])
        let socket = try LoopbackSocket(port: server.port, from: "127.0.0.4")
        let request = "GET /v1/healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        #expect(socket.headStatus(of: request) == 200)
        usleep(1_600_000)  // longer than the head's deadline, well within the idle timeout
        #expect(socket.headStatus(of: request) == 200)
        // The next head, one line at a time: closed a second after its first byte.
        let firstByte = Date()
        #expect(socket.send("GET /v1/healthz HTTP/1.1\r\n"))
        while !socket.isClosedByServer && Date().timeIntervalSince(firstByte) < 5 {
            usleep(50_000)
            if Int(Date().timeIntervalSince(firstByte) * 20) % 6 == 0 { socket.send("X-Slow: 1\r\n") }
        }
        let closedAfter = Date().timeIntervalSince(firstByte)
        #expect(closedAfter >= 0.9 && closedAfter <= 2, "closed \(closedAfter) s after the head's first byte")
    }

    @Test("A full server makes room for a new connection by closing the one silent longest; health checks and reads get through")
    func fullServerMakesRoom() throws {
        let server = try ServerProcess(arguments: ["--max-connections", "40", "--max-connections-per-client", "0"])
        #expect(server.stderr.contains("connections 40 (no limit per client)"))
        let kept = try RawHTTPClient(port: server.port, from: "127.0.0.4")  // kept alive throughout
        var flood: [LoopbackSocket] = []
        for _ in 0..<200 {
            flood.append(try LoopbackSocket(port: server.port, from: "127.0.0.2"))
            if flood.count % 20 == 0 { #expect(try kept.request("GET", "/v1/healthz").status == 200) }
        }
        let probe = Self.probe(server, from: "127.0.0.3", seconds: 1)
        #expect(probe.failures.isEmpty, "\(probe.failures.prefix(3))")
        #expect(Set(probe.statuses) == [200])
        #expect(try kept.request("GET", "/v1/objects/Task?limit=1").status == 200)
        usleep(300_000)
        let stillOpen = flood.filter { !$0.isClosedByServer }.count
        #expect(stillOpen < 40, "\(stillOpen) of the flood's connections still open")
        // The newest of the flood are the ones kept: the oldest made room.
        #expect(flood.first!.isClosedByServer, "the oldest connection made room")
        let madeRoom = try #require(try Self.metric(server, "managedstore_connections_closed_total{reason=\"made_room\"}"))
        #expect(madeRoom >= 160)
        #expect(try Self.metric(server, "managedstore_connections_open").map { $0 <= 40 } == true)
    }

    @Test("--max-connections-per-client 0 turns the limit off: a hundred connections from one address are all served")
    func noLimitPerClient() throws {
        let server = try ServerProcess(arguments: ["--max-connections-per-client", "0"])
        let sockets = try (0..<100).map { _ in try LoopbackSocket(port: server.port, from: "127.0.0.2") }
        usleep(200_000)
        #expect(sockets.filter(\.isClosedByServer).isEmpty)
        let statuses = sockets.map { $0.headStatus(of: "GET /v1/healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n") }
        #expect(statuses.allSatisfy { $0 == 200 })
        #expect(try Self.metric(server, "managedstore_connections_refused_total{reason=\"per_client\"}") == 0)
    }

    @Test("A connection that sends nothing is closed by the idle timeout, and counted so")
    func idleConnectionCounted() throws {
        let server = try ServerProcess(arguments: ["--connection-timeout", "1", "--header-timeout", "1"])
        let socket = try LoopbackSocket(port: server.port, from: "127.0.0.5")
        let opened = Date()
        while !socket.isClosedByServer && Date().timeIntervalSince(opened) < 5 { usleep(50_000) }
        #expect(socket.isClosedByServer)
        #expect(Date().timeIntervalSince(opened) >= 0.9)
        // The server counts it once libmicrohttpd has cleaned the connection up, just after closing it.
        var counted: Double?
        for _ in 0..<30 where counted != 1 {
            usleep(100_000)
            counted = try Self.metric(server, "managedstore_connections_closed_total{reason=\"idle_timeout\"}")
        }
        #expect(counted == 1, "\(String(describing: counted)) idle closes counted")
        #expect(try Self.metric(server, "managedstore_connections_closed_total{reason=\"header_timeout\"}") == 0)
    }

    @Test("The start-up line says the connection limits; impossible limits are refused")
    func startupLineAndValidation() throws {
        let server = try ServerProcess()
        let first = server.stderr.split(separator: "\n").first.map(String.init) ?? ""
        #expect(first.contains(" connections ") && first.contains("(64 per client"), "\(first)")
        for arguments in [["--max-connections-per-client", "-1"], ["--max-connections", "0"], ["--header-timeout", "0"]] {
            let run = try ServerProcess.run(["serve", "--demo", "--store", ":memory:", "--port", "0"] + arguments)
            #expect(run.status != 0 && run.stderr.contains(arguments[0]), "\(arguments): \(run.stderr)")
        }
    }
}
