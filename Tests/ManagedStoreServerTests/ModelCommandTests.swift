import Foundation
import Testing
import ManagedStore

/// `managedstore model check|describe|convert`, run as the built executable.
@Suite("managedstore model", .sqliteWhateverTheRun)
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
        #expect(refused.status == 2 && refused.stderr.contains("does not follow the model format's schema"), "\(refused)")
        #expect(refused.stderr.contains("\n  /entities/0/attributes/0/type: must be one of") && refused.stderr.contains("\n  /entities/1/attributes/0/type:"),
                "every violation on a line of its own, with where it is: \(refused.stderr)")
        // Following the schema, and still wrong: the model's own checks say why.
        let dangling = folder.url.appendingPathComponent("dangling.json").path
        try Data(#"{"name": "D", "entities": [{"name": "A", "relationships": [{"name": "b", "destination": "B", "inverse": "a"}]}]}"#.utf8)
            .write(to: URL(fileURLWithPath: dangling))
        let unusable = try ServerProcess.run(["model", "check", "--model", dangling])
        #expect(unusable.status == 2 && unusable.stderr.contains("the model cannot be used:\n  A.b: "), "\(unusable)")

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
