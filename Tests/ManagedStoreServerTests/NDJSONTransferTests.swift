import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite
@testable import ManagedStoreHTTP
@testable import ManagedStoreOpenAPI
@testable import ManagedStoreServer

@Suite("managedstore import and export (NDJSON files)")
struct NDJSONTransferTests {
    private func write(_ text: String, in store: TemporaryFolder) throws -> FileHandle {
        let url = store.url.appendingPathComponent("in-\(UUID().uuidString).ndjson")
        try Data(text.utf8).write(to: url)
        return try FileHandle(forReadingFrom: url)
    }

    @Test("an export imported into an empty store exports the same bytes again")
    func roundTrip() throws {
        let folder = TemporaryFolder()
        let first = try PersistentStoreCoordinator(model: .taskTracker(), store: .path(folder.url.appendingPathComponent("a.sqlite").path))
        let lines = (0..<2345).map { #"{"title": "t\#($0)", "priority": \#($0 % 6), "estimate": \#(Double($0) / 4), "due": "2026-01-0\#($0 % 9 + 1)T00:00:00Z"}"# }
        var progress: [Int] = []
        let imported = try NDJSONFileImport(coordinator: first, entityName: "Task")
            .run(from: try write(lines.joined(separator: "\n"), in: folder)) { progress.append($0.rows) }
        #expect(imported == 2345 && progress.last == 2345)
        var exported: [UInt8] = []
        #expect(try NDJSONExport(coordinator: first, entityName: "Task").run(write: { exported += $0 }) == 2345)
        let text = String(decoding: exported, as: UTF8.self)
        #expect(text.split(separator: "\n").count == 2345)
        #expect(text.hasPrefix(#"{"_id":"Task/1","_version":1,"title":"t0","priority":0"#))

        let second = try PersistentStoreCoordinator(model: .taskTracker(), store: .path(folder.url.appendingPathComponent("b.sqlite").path))
        #expect(try NDJSONFileImport(coordinator: second, entityName: "Task").run(from: try write(text, in: folder)) == 2345)
        var again: [UInt8] = []
        _ = try NDJSONExport(coordinator: second, entityName: "Task").run(write: { again += $0 })
        #expect(again == exported)
    }

    @Test("a bad line stops the import with its line and the rows stored before its chunk")
    func badLine() throws {
        let folder = TemporaryFolder()
        let coordinator = try PersistentStoreCoordinator(model: .taskTracker(), store: .path(folder.url.appendingPathComponent("s.sqlite").path))
        var lines = (0..<2500).map { #"{"title": "t\#($0)"}"# }
        lines[2100] = #"{"title": 5}"#
        #expect {
            try NDJSONFileImport(coordinator: coordinator, entityName: "Task").run(from: try write(lines.joined(separator: "\n"), in: folder))
        } throws: { error in
            guard let failure = error as? NDJSONFileImport.Failure else { return false }
            return failure.line == 2101 && failure.committed == 2000 && failure.code == "validation"
        }
        let context = ManagedObjectContext(coordinator: coordinator, name: "check")
        #expect(try context.performAndWait { try context.count(for: FetchRequest(entityName: "Task")) } == 2000)
        #expect(throws: NDJSONFileImport.Failure.self) { try NDJSONFileImport(coordinator: coordinator, entityName: "Nope") }
    }
}

/// A temporary folder removed when the value goes away.
final class TemporaryFolder: Sendable {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("managedstore-transfer-\(UUID().uuidString)")
    init() { try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true) }
    deinit { try? FileManager.default.removeItem(at: url) }
}
