import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite
@testable import ManagedStoreHTTP
@testable import ManagedStoreOpenAPI
@testable import ManagedStoreServer

/// Idempotent writes where they matter: a server that dies (SIGKILL) or stops (SIGTERM) in the
/// middle of keyed inserts, a restart on the same store, and clients that retry every insert
/// they were not told the outcome of, with its key. Each insert must then be stored exactly
/// once; a retry of an insert the store already holds must be a replay of its first answer.
/// Out of process: only a real process can be killed.
@Suite("Idempotent retries", .serialized, .sqliteWhateverTheRun)
struct IdempotentRetryTests {
    /// One logical write: an insert the client means to happen once, however often it is sent.
    struct LogicalWrite: Sendable {
        let key: String
        let title: String
        /// What the first try was told; nil when the connection broke without an answer.
        var first: Answer?

        var body: String { #"{"title": "\#(title)"}"# }
        var acknowledged: Bool { first?.isSuccess ?? false }
    }

    /// An answer to a keyed insert: what a replay must give again.
    struct Answer: Sendable {
        let status: Int
        let id: String?
        let body: [UInt8]
        let location: String?
        let etag: String?
        /// The `Idempotent-Replayed` header.
        let replayed: String?

        init(_ response: RawHTTPClient.Response) {
            status = response.status
            body = response.body
            id = (try? JSONParser().parse(response.body))?["_id"]?.stringValue
            location = response.header("Location")
            etag = response.header("ETag")
            replayed = response.header("Idempotent-Replayed")
        }

        var isSuccess: Bool { (200..<300).contains(status) }
        var text: String { String(decoding: body.prefix(300), as: UTF8.self) }
    }

    /// What a retry came to: its last answer (nil: never answered) after `tries` sends.
    struct Retry: Sendable {
        let write: LogicalWrite
        let answer: Answer?
        let tries: Int
    }

    /// The counts a run ends with.
    struct Summary: CustomStringConvertible {
        var sent = 0
        var acknowledged = 0
        var unknown = 0
        var refused = 0
        var replayedOnRetry = 0
        var performedOnRetry = 0
        var acknowledgedReplays = 0
        var description: String {
            "sent \(sent), acknowledged \(acknowledged), unknown \(unknown), refused \(refused); "
                + "on retry: \(replayedOnRetry) replayed (first try committed), \(performedOnRetry) performed afresh; "
                + "\(acknowledgedReplays) acknowledged writes replayed"
        }
    }

    static func insert(_ write: LogicalWrite, on connection: RawHTTPClient) throws -> Answer {
        Answer(try connection.json("POST", "/v1/objects/Task", write.body, headers: [("Idempotency-Key", write.key)]))
    }

    /// Sends `write` again with its key until it is answered 2xx or 4xx (bounded: 20 tries and
    /// 30 s), reconnecting after a broken connection and pausing after a 5xx.
    static func retry(_ write: LogicalWrite, port: UInt16, connection: inout RawHTTPClient?) -> Retry {
        var last: Answer?
        var tries = 0
        let deadline = Date().addingTimeInterval(30)
        while tries < 20 && Date() < deadline {
            tries += 1
            do {
                if connection == nil { connection = try RawHTTPClient(port: port, timeout: 10) }
                guard let open = connection else { continue }
                let answer = try insert(write, on: open)
                last = answer
                if answer.status < 500 { break }
            } catch {
                connection = nil
            }
            usleep(100_000)
        }
        return Retry(write: write, answer: last, tries: tries)
    }

    /// Every task's title and ID as the server serves them, page by page (bounded: 100 pages).
    static func servedTasks(port: UInt16) throws -> [(title: String, id: String)] {
        let connection = try RawHTTPClient(port: port, timeout: 20)
        var rows: [(title: String, id: String)] = []
        var after: String?
        for _ in 0..<100 {
            let path = "/v1/objects/Task?limit=1000" + (after.map { "&after=\($0.queryEncoded)" } ?? "")
            let response = try connection.request("GET", path)
            guard response.status == 200, let page = try? JSONParser().parse(response.body), let objects = page["objects"]?.arrayValue else {
                Issue.record("GET \(path): \(response.status) \(response.text.prefix(300))")
                return rows
            }
            for object in objects {
                rows.append((object["title"]?.stringValue ?? "", object["_id"]?.stringValue ?? ""))
            }
            guard let next = page["next"]?.stringValue else { return rows }
            after = next
        }
        Issue.record("more than 100 pages of tasks")
        return rows
    }

    /// After the restart on the store the writes were sent to: reads what the store holds,
    /// sends every write not acknowledged again with its key until 2xx, and every acknowledged
    /// one in `replayed` once more (a thread per client), then stops the server and checks the
    /// store file: every title stored exactly once, under the ID its client was told.
    static func retryAndCheck(_ clients: [[LogicalWrite]], on server: ServerProcess, replaying replayed: Set<String>) throws -> Summary {
        let all = clients.flatMap { $0 }
        var summary = Summary()
        summary.sent = all.count
        summary.acknowledged = all.count { $0.acknowledged }
        summary.unknown = all.count { $0.first == nil }
        summary.refused = all.count { $0.first.map { !$0.isSuccess } ?? false }
        #expect(Set(all.map(\.key)).count == all.count && Set(all.map(\.title)).count == all.count, "the test's keys and titles are unique")
        let sentTitles = Set(all.map(\.title))

        // What the store holds after the restart, before any retry.
        let before = Dictionary(grouping: try servedTasks(port: server.port), by: \.title).mapValues { $0.map(\.id) }
        let twiceBefore = before.filter { $0.value.count > 1 }
        #expect(twiceBefore.isEmpty, "stored twice before any retry: \(twiceBefore.sorted { $0.key < $1.key }.prefix(10))")
        let strangers = Set(before.keys).subtracting(sentTitles)
        #expect(strangers.isEmpty, "stored but never sent: \(strangers.sorted().prefix(10))")
        let lostAcknowledged = all.filter { $0.acknowledged && before[$0.title] != [$0.first?.id ?? "-"] }
        let lostText = lostAcknowledged.prefix(10).map { "\($0.title) told \($0.first?.id ?? "-"), stored \(before[$0.title] ?? [])" }
        #expect(lostAcknowledged.isEmpty, "acknowledged but not stored under the acknowledged ID: \(lostText)")
        let refusedButStored = all.filter { $0.first.map { !$0.isSuccess } ?? false }.filter { before[$0.title] != nil }
        #expect(refusedButStored.isEmpty, "answered with an error but stored: \(refusedButStored.prefix(10).map { "\($0.title) (\($0.first?.status ?? 0))" })")
        let wronglyReplayed = all.filter { $0.first?.replayed != nil }
        #expect(wronglyReplayed.isEmpty, "first tries answered as replays: \(wronglyReplayed.prefix(10).map(\.title))")

        // The retries (and replays of acknowledged writes), each client its own, at once.
        let retries = LockedList<Retry>()
        let finished = DispatchGroup()
        for writes in clients {
            let mine = writes.filter { !$0.acknowledged || replayed.contains($0.key) }
            guard !mine.isEmpty else { continue }
            finished.enter()
            Thread {
                defer { finished.leave() }
                var connection: RawHTTPClient?
                for write in mine { retries.add(retry(write, port: server.port, connection: &connection)) }
            }.start()
        }
        #expect(finished.wait(timeout: .now() + 300) == .success, "the retries end")
        let done = retries.all
        #expect(done.count == all.count { !$0.acknowledged || replayed.contains($0.key) }, "every retry came back")

        var failures: [String] = []
        var told: [String: String] = [:]  // title: the ID its client was last told
        for write in all where write.acknowledged { told[write.title] = write.first?.id }
        for retry in done {
            let write = retry.write
            guard let answer = retry.answer, answer.isSuccess, let id = answer.id else {
                failures.append("\(write.title): no 2xx after \(retry.tries) tries (last: \(retry.answer.map { "\($0.status) \($0.text)" } ?? "no answer"))")
                continue
            }
            told[write.title] = id
            if let first = write.first, first.isSuccess {
                summary.acknowledgedReplays += 1
                if answer.replayed != "true" || answer.status != first.status || answer.body != first.body || answer.id != first.id
                    || answer.location != first.location || answer.etag != first.etag {
                    failures.append("\(write.title): acknowledged \(first.status) \(first.text) (Location \(first.location ?? "-"), ETag \(first.etag ?? "-")), "
                                    + "replayed \(answer.status) \(answer.text) (Location \(answer.location ?? "-"), ETag \(answer.etag ?? "-"), "
                                    + "Idempotent-Replayed \(answer.replayed ?? "-"))")
                }
            } else if let stored = before[write.title] {
                // The first try was committed, though its client was never told: the retry is its replay.
                summary.replayedOnRetry += 1
                if answer.replayed != "true" || [id] != stored {
                    failures.append("\(write.title): stored as \(stored) before the retry, which answered \(answer.status) \(id) "
                                    + "(Idempotent-Replayed \(answer.replayed ?? "-"))")
                }
            } else {
                // The first try left nothing: the retry writes it, afresh.
                summary.performedOnRetry += 1
                if answer.replayed != nil || answer.status != 201 {
                    failures.append("\(write.title): not stored before the retry, which answered \(answer.status) \(id) "
                                    + "(Idempotent-Replayed \(answer.replayed ?? "-"))")
                }
            }
        }
        #expect(failures.isEmpty, "\(failures.count) retries answered wrongly: \(failures.prefix(10))")

        // The store file, the server stopped.
        server.signal(SIGTERM)
        #expect(server.waitForExit(seconds: 30) == 0, "\(server.stderr.suffix(2000))")
        let coordinator = try PersistentStoreCoordinator(model: .taskTracker(), store: .path(server.storePath))
        #expect(try coordinator.checkIntegrity().isEmpty, "PRAGMA integrity_check and the store's own checks")
        let context = ManagedObjectContext(coordinator: coordinator, name: "check")
        let stored: [(title: String, id: String)] = try context.performAndWait {
            try context.fetch(FetchRequest(entityName: "Task")).map { ($0.value("title", as: String.self) ?? "", $0.objectID.description) }
        }
        let byTitle = Dictionary(grouping: stored, by: \.title).mapValues { $0.map(\.id) }
        let twice = byTitle.filter { $0.value.count > 1 }
        #expect(twice.isEmpty, "\(twice.count) titles stored more than once: \(twice.sorted { $0.key < $1.key }.prefix(10))")
        let lost = sentTitles.subtracting(byTitle.keys)
        #expect(lost.isEmpty, "\(lost.count) titles sent and retried but not stored: \(lost.sorted().prefix(10))")
        #expect(Set(byTitle.keys).subtracting(sentTitles).isEmpty, "stored but never sent")
        let misplaced = told.filter { byTitle[$0.key] != [$0.value] }
        let misplacedText = misplaced.sorted { $0.key < $1.key }.prefix(10).map { "\($0.key) told \($0.value), stored \(byTitle[$0.key] ?? [])" }
        #expect(misplaced.isEmpty, "stored under another ID than the client was told: \(misplacedText)")
        #expect(try coordinator.idempotencyRecordCount() == all.count, "one idempotency record per logical write")
        return summary
    }

    @Test("SIGKILL during keyed inserts, restart, every unacknowledged insert retried with its key: each stored exactly once, acknowledged ones replayed as answered")
    func sigkillThenRetries() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("managedstore-idempotent-crash-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let run = UUID().uuidString.prefix(8)
        let server = try ServerProcess(arguments: ["--durability", "full"], directory: directory)
        let sent = LockedList<(client: Int, writes: [LogicalWrite])>()
        let acks = Counter()
        let finished = DispatchGroup()
        for client in 0..<8 {
            finished.enter()
            Thread {
                defer { finished.leave() }
                var mine: [LogicalWrite] = []
                defer { sent.add((client, mine)) }
                guard let connection = try? RawHTTPClient(port: server.port, timeout: 10) else { return }
                let deadline = Date().addingTimeInterval(30)
                // Bounded in count and time; ends at the kill, when the connection breaks.
                for n in 0..<2_000 where Date() < deadline {
                    var write = LogicalWrite(key: "crash-\(run)-c\(client)-\(n)", title: "c\(client)-\(n)")
                    do {
                        write.first = try Self.insert(write, on: connection)
                    } catch {
                        mine.append(write)  // sent, unanswered: its outcome is unknown
                        break
                    }
                    mine.append(write)
                    guard write.acknowledged else { break }
                    acks.add()
                }
            }.start()
        }
        try waitUntil("300 writes are acknowledged", seconds: 30) { acks.value >= 300 }
        server.signal(SIGKILL)
        #expect(server.waitForExit(seconds: 10) != nil)
        #expect(finished.wait(timeout: .now() + 30) == .success)

        let restarted = try ServerProcess(arguments: ["--durability", "full"], directory: directory)
        let clients = sent.all.sorted { $0.client < $1.client }.map(\.writes)
        let acknowledged = Set(clients.joined().filter(\.acknowledged).map(\.key))
        #expect(acknowledged.count >= 300)
        let summary = try Self.retryAndCheck(clients, on: restarted, replaying: acknowledged)
        print("idempotent retries after SIGKILL: \(summary)")
    }

    @Test("SIGTERM with 64 clients posting keyed inserts, restart, every write not answered 2xx retried with its key: zero duplicates, zero lost")
    func sigtermThenRetries() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("managedstore-idempotent-shutdown-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let run = UUID().uuidString.prefix(8)
        let server = try ServerProcess(arguments: ["--shutdown-timeout", "10"], directory: directory)
        let sent = LockedList<(client: Int, writes: [LogicalWrite])>()
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
                var mine: [LogicalWrite] = []
                defer { sent.add((client, mine)) }
                guard let connection = try? RawHTTPClient(port: server.port, timeout: 20) else { return }
                let deadline = Date().addingTimeInterval(30)
                for n in 0..<2_000 where Date() < deadline {
                    var write = LogicalWrite(key: "shutdown-\(run)-c\(client)-\(n)", title: "c\(client)-\(n)")
                    let response: RawHTTPClient.Response
                    do {
                        response = try connection.json("POST", "/v1/objects/Task", write.body, headers: [("Idempotency-Key", write.key)])
                    } catch {
                        mine.append(write)  // the connection ended without an answer: unknown
                        break
                    }
                    write.first = Answer(response)
                    mine.append(write)
                    if !entered { entered = true; started.leave() }
                    if response.status != 201 || response.header("Connection")?.lowercased() == "close" { break }
                    if stop.value > 0 { break }
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

        let restarted = try ServerProcess(arguments: ["--shutdown-timeout", "10"], directory: directory)
        let clients = sent.all.sorted { $0.client < $1.client }.map(\.writes)
        // A sample of the acknowledged writes (at most about 256) is replayed as well.
        let acknowledged = clients.joined().filter(\.acknowledged).map(\.key)
        #expect(acknowledged.count > 64)
        let every = max(1, (acknowledged.count + 255) / 256)
        let sample = Set(acknowledged.enumerated().filter { $0.offset % every == 0 }.map(\.element))
        let summary = try Self.retryAndCheck(clients, on: restarted, replaying: sample)
        print("idempotent retries after SIGTERM: \(summary)")
    }
}
