import Foundation
import Testing
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite

/// A store written by the last build of format 6 (Tests/Fixtures/format6: every kind of change
/// through the server, and the change feed with objects as that build answered it; make.sh
/// says how). Today's server opens it, upgrades it to format 7 and must answer the same.
@Suite("A store of format 6, from the previous release", .serialized, .sqliteWhateverTheRun)
struct StoreFormat6FixtureTests {
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/format6")

    static func json(_ bytes: [UInt8]) throws -> NSDictionary {
        try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? NSDictionary)
    }

    @Test("opened, upgraded to format 7, its change feed with objects answers as format 6's server did; a batch written after is listed object by object")
    func upgradedAndRead() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("managedstore-format6-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = directory.appendingPathComponent("store.sqlite")
        try FileManager.default.copyItem(at: Self.fixture.appendingPathComponent("store.sqlite"), to: store)
        let recorded = try Self.json(Array(try Data(contentsOf: Self.fixture.appendingPathComponent("changes.json"))))

        let server = try ServerProcess(directory: directory)
        let client = try RawHTTPClient(port: server.port)
        let changes = try client.request("GET", "/v1/changes?since=0&limit=100&objects=true")
        #expect(changes.status == 200)
        #expect(try Self.json(changes.body) == recorded)

        let batch = try client.json("POST", "/v1/objects/Task", #"[{"title":"a"},{"title":"b"},{"title":"c"}]"#)
        #expect((200..<300).contains(batch.status), "\(batch.text)")
        let token = try #require(batch.header("History-Token"))
        let after = try Self.json(try client.request("GET", "/v1/changes?since=\(Int(token)! - 1)").body)
        let listed = ((after["transactions"] as? [NSDictionary])?.first?["changes"] as? [NSDictionary])?.compactMap { $0["object"] as? String }
        #expect(listed?.count == 3 && listed?.allSatisfy { $0.hasPrefix("Task/") } == true, "\(after)")

        server.signal(SIGTERM)
        #expect(server.waitForExit(seconds: 20) == 0)
        let connection = try SQLiteConnection(path: store.path)
        let format = try connection.withStatement(#"SELECT "value" FROM "_metadata" WHERE "key" = 'format'"#) { s throws(StoreError) in
            try s.step() ? s.text(0) : ""
        }
        #expect(format == StoreFormatMigration.currentFormat)
        #expect(try connection.scalarInt(#"SELECT count(*) FROM "_history_change" WHERE "through" IS NOT NULL"#) == 1, "the batch is one run")
    }
}
