import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite
@testable import ManagedStoreHTTP
@testable import ManagedStoreOpenAPI
@testable import ManagedStoreServer

/// SIGKILL in the middle of a write storm, then a restart on the same store: every write the
/// server acknowledged is there as it was acknowledged, nothing is there twice, and the file
/// passes SQLite's integrity check. Out of process: only a real process can be killed.
@Suite("Crash recovery", .serialized, .sqliteWhateverTheRun)
struct CrashRecoveryTests {
    /// What the clients were told, per task title.
    struct Acknowledged: Sendable {
        let key: String
        /// The priority of the last PATCH acknowledged (0: none).
        var priority: Int
        /// The priority of a PATCH sent and not answered (it may or may not have been written).
        var inFlightPriority: Int?
    }

    @Test("SIGKILL during a write storm: after a restart every acknowledged insert and update is stored, once, and integrity_check is ok")
    func sigkillDuringWriteStorm() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("managedstore-crash-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try ServerProcess(arguments: ["--durability", "full"], directory: directory)
        let acknowledged = LockedList<(title: String, state: Acknowledged)>()
        let acks = Counter()
        let finished = DispatchGroup()
        for client in 0..<8 {
            finished.enter()
            Thread {
                defer { finished.leave() }
                guard let connection = try? RawHTTPClient(port: server.port, timeout: 10) else { return }
                var mine: [String: Acknowledged] = [:]
                defer { mine.forEach { acknowledged.add(($0.key, $0.value)) } }
                let deadline = Date().addingTimeInterval(30)
                // Bounded in count and time; ends at the kill, when the connection breaks.
                for n in 0..<2_000 where Date() < deadline {
                    do {
                        if n % 3 == 2, let title = mine.keys.randomElement(), var state = mine[title] {
                            // Update an acknowledged task: the stored priority must be this one or a later.
                            let priority = state.priority % 5 + 1
                            state.inFlightPriority = priority
                            mine[title] = state
                            let response = try connection.json("PATCH", "/v1/objects/\(state.key)", #"{"priority": \#(priority)}"#)
                            guard response.status == 200 else { break }
                            mine[title] = Acknowledged(key: state.key, priority: priority, inFlightPriority: nil)
                        } else {
                            let title = "c\(client)-\(n)"
                            let response = try connection.json("POST", "/v1/objects/Task", #"{"title": "\#(title)"}"#)
                            guard response.status == 201, let id = (try? JSONParser().parse(response.body))?["_id"]?.stringValue else { break }
                            mine[title] = Acknowledged(key: id, priority: 0)
                        }
                        acks.add()
                    } catch {
                        break  // the server is gone: what was sent last has an unknown outcome
                    }
                }
            }.start()
        }
        try waitUntil("300 writes are acknowledged", seconds: 30) { acks.value >= 300 }
        server.signal(SIGKILL)
        #expect(server.waitForExit(seconds: 10) != nil)
        #expect(finished.wait(timeout: .now() + 30) == .success)

        // A restart on the same store: it opens, and serves what was acknowledged.
        let restarted = try ServerProcess(directory: directory)
        #expect(try RawHTTPClient(port: restarted.port).request("GET", "/v1/readyz").status == 200)
        let sample = try #require(acknowledged.all.first)
        let read = try RawHTTPClient(port: restarted.port).request("GET", "/v1/objects/\(sample.state.key)")
        #expect(read.status == 200)
        #expect((try? JSONParser().parse(read.body))?["title"]?.stringValue == sample.title)
        restarted.signal(SIGTERM)
        #expect(restarted.waitForExit(seconds: 30) == 0)

        let coordinator = try PersistentStoreCoordinator(model: .taskTracker(), store: .path(restarted.storePath))
        #expect(try coordinator.checkIntegrity().isEmpty, "PRAGMA integrity_check and the store's own checks")
        let context = ManagedObjectContext(coordinator: coordinator, name: "check")
        let stored: [(title: String, key: String, priority: Int)] = try context.performAndWait {
            try context.fetch(FetchRequest(entityName: "Task")).map {
                ($0.value("title", as: String.self) ?? "", $0.objectID.description, Int($0.value("priority", as: Int64.self) ?? 0))
            }
        }
        let byTitle = Dictionary(stored.map { ($0.title, $0) }, uniquingKeysWith: { first, _ in first })
        #expect(byTitle.count == stored.count, "no title is stored twice")
        let all = acknowledged.all
        #expect(all.count >= 200)
        for (title, state) in all {
            guard let row = byTitle[title] else {
                Issue.record("acknowledged \(title) (\(state.key)) is not stored")
                continue
            }
            #expect(row.key == state.key, "\(title) is stored under the ID it was acknowledged with")
            let allowed = Set([state.priority] + (state.inFlightPriority.map { [$0] } ?? []))
            #expect(allowed.contains(row.priority), "\(title): priority \(row.priority), acknowledged \(state.priority)")
        }
    }
}
