import Foundation
import Testing
import ManagedStore

/// `managedstore model check|describe|convert`, run as the built executable.
@Suite("managedstore model")
struct ModelCommandTests {
    @Test("check says ok or lists every problem (exit 2); describe prints the tables; convert goes to Xcode's format and back unchanged")
    func modelCommands() throws {
        let folder = TemporaryFolder()
        let json = folder.url.appendingPathComponent("tracker.json").path
        try Data(ManagedObjectModel.taskTracker().jsonValue.serialized().utf8).write(to: URL(fileURLWithPath: json))

        let ok = try ServerProcess.run(["model", "check", "--model", json])
        let tracker = ManagedObjectModel.taskTracker()
        let counts = "\(tracker.entities.count) entities, \(tracker.entities.reduce(0) { $0 + $1.attributes.count }) attributes, "
            + "\(tracker.entities.reduce(0) { $0 + $1.relationships.count }) relationships"
        #expect(ok.status == 0 && ok.stdout == "ok: Tracker version 1: \(counts)\n", "\(ok)")

        let bad = folder.url.appendingPathComponent("bad.json").path
        try Data(#"{"name": "Bad", "version": 1, "entities": [{"name": "A", "attributes": [{"name": "x", "type": "money"}]}, {"name": "B", "attributes": [{"name": "y", "type": "cash"}]}]}"#.utf8)
            .write(to: URL(fileURLWithPath: bad))
        let refused = try ServerProcess.run(["model", "check", "--model", bad])
        #expect(refused.status == 2 && refused.stderr.contains("the model cannot be used:\n  "), "\(refused)")
        #expect(refused.stderr.components(separatedBy: "\n  ").count >= 3, "every problem on a line of its own: \(refused.stderr)")

        let described = try ServerProcess.run(["model", "describe", "--model", json])
        #expect(described.status == 0)
        #expect(described.stdout.contains("Task\n  property  kind       type       optional  default  rules\n  title     attribute  string     no"), "\(described.stdout)")
        #expect(described.stdout.contains("unique (name)") && described.stdout.contains("index (done, priority)"))

        let xcode = folder.url.appendingPathComponent("Tracker.xcdatamodel").path
        let toXcode = try ServerProcess.run(["model", "convert", "--model", json, "--output", xcode])
        #expect(toXcode.status == 0 && FileManager.default.fileExists(atPath: xcode + "/contents"), "\(toXcode)")
        let back = folder.url.appendingPathComponent("back.json").path
        let toJSON = try ServerProcess.run(["model", "convert", "--model", xcode, "--output", back])
        #expect(toJSON.status == 0, "\(toJSON)")
        let original = ManagedObjectModel.taskTracker()
        let roundTripped = try ManagedObjectModel(contentsOf: URL(fileURLWithPath: back))
        #expect(roundTripped.versionHash == original.versionHash && roundTripped.entities == original.entities)
        let served = try ServerProcess(model: xcode)
        #expect(try RawHTTPClient(port: served.port).json("POST", "/v1/objects/Project", #"{"name": "From Xcode"}"#).status == 201)
    }
}
