import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite
@testable import ManagedStoreHTTP
@testable import ManagedStoreOpenAPI
@testable import ManagedStoreServer

/// SIGTERM while writes are in flight: every request is answered with its true outcome (or its
/// connection closed, when the outcome is unknown), what was acknowledged is stored, and the
/// process exits 0. Run on the real executable: signals and exit statuses need a process.
@Suite("Shutdown", .sqliteWhateverTheRun)
struct ShutdownTests {
    /// What a client learned about one write.
    enum Outcome: Sendable {
        case answered(Int)
        /// The connection ended without an answer: the outcome is unknown to the client.
        case noAnswer
    }

    @Test("SIGTERM with 64 writes in flight: every 2xx stored, every stored write answered 2xx or its connection closed, exit 0")
    func sigtermWithWritesInFlight() throws {
        let server = try ServerProcess(arguments: ["--shutdown-timeout", "10"])
        let outcomes = LockedList<(title: String, outcome: Outcome)>()
        let started = DispatchGroup()
        let finished = DispatchGroup()
        let stop = Counter()
        for client in 0..<64 {
            started.enter()
            finished.enter()
            // A thread each: 64 clients blocked in recv would starve Dispatch's small pool.
            Thread {
                defer { finished.leave() }
                var entered = false
                defer { if !entered { started.leave() } }
                guard let connection = try? RawHTTPClient(port: server.port, timeout: 20) else { return }
                var n = 0
                let deadline = Date().addingTimeInterval(30)
                while Date() < deadline {
                    let title = "c\(client)-\(n)"
                    n += 1
                    do {
                        let response = try connection.json("POST", "/v1/objects/Task", #"{"title": "\#(title)"}"#)
                        outcomes.add((title, .answered(response.status)))
                        if !entered { entered = true; started.leave() }
                        if response.status != 201 || response.header("Connection")?.lowercased() == "close" { break }
                    } catch {
                        outcomes.add((title, .noAnswer))
                        break
                    }
                    if stop.value > 0 && n > 1_000 { break }
                }
            }.start()
        }
        #expect(started.wait(timeout: .now() + 30) == .success, "every client wrote once before the signal")
        usleep(200_000)
        server.signal(SIGTERM)
        let status = server.waitForExit(seconds: 30)
        stop.add()
        #expect(finished.wait(timeout: .now() + 60) == .success)
        #expect(status == 0, "exit status \(String(describing: status)); stderr: \(server.stderr.suffix(2000))")
        for word in ["Fatal error", "abort", "Aborted", "Backtrace", "Illegal instruction"] {
            #expect(!server.stderr.contains(word), "\(server.stderr.suffix(2000))")
        }

        let coordinator = try PersistentStoreCoordinator(model: .taskTracker(), store: .path(server.storePath))
        let context = ManagedObjectContext(coordinator: coordinator, name: "check")
        let stored: Set<String> = try context.performAndWait {
            Set(try context.fetch(FetchRequest(entityName: "Task")).compactMap { $0.value("title", as: String.self) })
        }
        let all = outcomes.all
        let acknowledged = Set(all.filter { if case .answered(let s) = $0.outcome { return (200..<300).contains(s) } else { return false } }.map(\.title))
        let unknown = Set(all.filter { if case .noAnswer = $0.outcome { return true } else { return false } }.map(\.title))
        let refused = Set(all.filter { if case .answered(let s) = $0.outcome { return !(200..<300).contains(s) } else { return false } }.map(\.title))
        #expect(acknowledged.count > 64)
        #expect(acknowledged.subtracting(stored).isEmpty, "acknowledged but not stored: \(acknowledged.subtracting(stored).sorted().prefix(10))")
        #expect(stored.subtracting(acknowledged).subtracting(unknown).isEmpty,
                "stored but answered otherwise: \(stored.subtracting(acknowledged).subtracting(unknown).sorted().prefix(10))")
        #expect(refused.intersection(stored).isEmpty, "answered with an error but stored: \(refused.intersection(stored).sorted().prefix(10))")
        #expect(try coordinator.checkIntegrity().isEmpty)
    }

    @Test("the start-up lines come at once through pipes (a container's log), and SIGTERM on an idle server exits 0")
    func startUpLinesUnbuffered() throws {
        // ServerProcess reads the stdout banner while the process runs: it would wait
        // forever for a block-buffered one. The first stderr line must come as soon.
        let server = try ServerProcess()
        var waited = 0
        while !server.stderr.contains("listening on") && waited < 100 {
            usleep(50_000)
            waited += 1
        }
        #expect(server.stderr.hasPrefix("managedstore "), "\(server.stderr)")
        #expect(server.stderr.contains("listening on http://127.0.0.1:\(server.port)"))
        #expect(server.stderr.contains("store \(server.storePath)"))
        server.signal(SIGTERM)
        #expect(server.waitForExit(seconds: 30) == 0)
    }
}
