import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite
@testable import ManagedStoreHTTP
@testable import ManagedStoreOpenAPI
@testable import ManagedStoreServer

/// The model-based walk of `ModelBasedHTTPTests`, by four clients at once against one server
/// with a store file, so that the write queue's group commit (many requests in one SQLite
/// transaction, a savepoint each, a refused request rolled back alone) is exercised. Each
/// client owns its objects (every string it writes starts with its prefix, and its objects
/// only point at its own), so each keeps a reference model of its own and checks its own
/// objects after every step, as the single walk does; listings are filtered by the prefix.
///
/// 1,500 steps per client, or 25 seconds; the environment variables of `ModelBasedHTTPTests`
/// apply (the step count is per client).
@Suite("Model-based HTTP test, concurrent clients (group commit)", .sqliteWhateverTheRun)
struct ModelBasedGroupCommitTests {
    static let clients = 4

    /// Set once a client fails, so that the others stop.
    final class StopFlag: @unchecked Sendable {
        // @unchecked Sendable: `value` is only touched under `lock`.
        private let lock = NSLock()
        private var flag = false
        var value: Bool { lock.lock(); defer { lock.unlock() }; return flag }
        func set() { lock.lock(); flag = true; lock.unlock() }
    }

    static func walk(model: ManagedObjectModel, name: String, seed: UInt64) throws {
        let base = WalkSettings.fromEnvironment(defaultSteps: 1_500, defaultSeconds: 25, defaultSeed: seed)
        let harness = try ServerHarness(inMemory: false, model: model) { _, http in http.threads = 4 }
        let failures = LockedList<String>()
        let summaries = LockedList<String>()
        let ids = LockedList<(Int, Set<String>)>()
        let stop = StopFlag()
        let group = DispatchGroup()
        let started = Date()
        for client in 0..<clients {
            group.enter()
            Thread {
                defer { group.leave() }
                var settings = base
                settings.seed = base.seed &+ UInt64(client)
                settings.replay = "MANAGEDSTORE_MODEL_SEED=\(base.seed) replays the walk; the clients' interleaving, and with it the IDs, may differ"
                let walk = ModelWalk(port: harness.port, model: model, name: "\(name), client \(client) of \(clients)", settings: settings,
                                     owner: "c\(client)-", cap: 15, shouldStop: { stop.value })
                do {
                    let steps = try walk.run()
                    summaries.add("client \(client): \(steps) steps, \(walk.requests) requests, seed \(settings.seed); \(walk.summary)")
                } catch {
                    stop.set()
                    failures.add("\(error)")
                }
                ids.add((client, walk.insertedIDs))
            }.start()
        }
        guard group.wait(timeout: .now() + .seconds(Int(min(3_600, base.deadline.timeIntervalSinceNow + 120)))) == .success else {
            stop.set()
            Issue.record("the concurrent walk did not finish in time")
            return
        }
        for failure in failures.all { Issue.record(Comment(rawValue: failure)) }
        guard failures.all.isEmpty else { return }
        // No ID was given to two clients.
        var owners: [String: Int] = [:]
        for (client, inserted) in ids.all {
            for id in inserted {
                if let other = owners[id] { Issue.record("\(id) was handed to client \(other) and to client \(client)") }
                owners[id] = client
            }
        }
        let health = try harness.request("GET", "/v1/healthz").json
        let requests = health?["writeRequests"] as? Int ?? 0, transactions = health?["writeTransactions"] as? Int ?? 0
        print("concurrent model-based walk over \(name) in \(String(format: "%.1f", Date().timeIntervalSince(started))) s: "
              + "\(requests) write requests in \(transactions) write transactions\n  " + summaries.all.joined(separator: "\n  "))
        #expect(transactions < requests, "group commit put several requests in one transaction at least once")
    }

    @Test("four clients on the task tracker agree with their reference models")
    func taskTracker() throws {
        try Self.walk(model: .taskTracker(), name: "task tracker", seed: 7_700)
    }

    @Test("four clients on the library model agree with their reference models")
    func library() throws {
        try Self.walk(model: try ModelBasedHTTPTests.library(), name: "library", seed: 8_800)
    }
}
