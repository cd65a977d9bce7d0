import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// What `serve` prints when it starts: on stderr the version line first, always; on stdout the
/// commands to try, on the model being served, that work when pasted into a shell.
@Suite("Start-up lines", .sqliteWhateverTheRun)
struct StartupLinesTests {
    /// A model without `Project`, whose first entity cannot be inserted by a made-up value (a
    /// mandatory attribute with a pattern), and whose second has only optional attributes.
    static let laboratoryJSON = #"""
    {
      "name": "Laboratory", "version": 1,
      "entities": [
        { "name": "Sample",
          "attributes": [{"name": "code", "type": "string", "optional": false, "pattern": "[A-Z]{3}-[0-9]{4}"}] },
        { "name": "Note",
          "attributes": [
            {"name": "weight", "type": "double", "min": 0},
            {"name": "body", "type": "string", "maxLength": 500}
          ] }
      ]
    }
    """#

    /// A started `serve` process: its stdout until the example lines are out, and stderr as it comes.
    final class Started {
        let process = Process()
        private var outputDrain: PipeDrain?, errorsDrain: PipeDrain?
        var output: String { outputDrain?.text ?? "" }
        var errors: String { errorsDrain?.text ?? "" }

        init(_ arguments: [String]) throws {
            process.executableURL = try ServerProcess.executable
            process.arguments = arguments
            let out = Pipe(), err = Pipe()
            process.standardOutput = out
            process.standardError = err
            try process.run()
            outputDrain = PipeDrain(out)
            errorsDrain = PipeDrain(err)
        }

        /// Waits until `done` holds for (stdout, stderr), at most 30 s.
        func wait(until done: (String, String) -> Bool) -> Bool {
            let deadline = Date().addingTimeInterval(30)
            while Date() < deadline {
                if done(output, errors) { return true }
                guard process.isRunning else { return done(output, errors) }
                usleep(5_000)
            }
            return false
        }

        deinit {
            if process.isRunning {
                process.terminate()
                process.waitUntilExit()
            }
        }
    }

    static func temporaryDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("managedstore-startup-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    /// Runs `command` with bash, as a user pasting it would; its stdout.
    static func shell(_ command: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = ["-c", command]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    @Test("the commands to try use the served model's own entity and property, and work as printed")
    func examplesOfTheServedModel() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let model = directory.appendingPathComponent("laboratory.json")
        try Data(Self.laboratoryJSON.utf8).write(to: model)
        let server = try Started(["serve", "--model", model.path, "--store", directory.appendingPathComponent("lab.sqlite").path, "--port", "0"])
        #expect(server.wait { out, _ in out.components(separatedBy: "curl ").count >= 4 }, "\(server.output)\n\(server.errors)")
        #expect(server.wait { _, err in err.contains("msg=ready") }, "\(server.errors)")

        let commands = server.output.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { $0.hasPrefix("curl ") }
        #expect(commands.count == 3, "\(server.output)")
        #expect(!server.output.contains("Project"), "no entity of another model: \(server.output)")
        let insert = try #require(commands.first { $0.contains("-X POST") })
        #expect(insert.contains("/v1/objects/Note "), "Sample needs a value matching its pattern; Note is the first that can be inserted: \(insert)")
        #expect(insert.contains(#""body""#), "the example sets a property of Note: \(insert)")

        // As pasted: the insert is stored, the fetch finds it, the model answers.
        let inserted = try JSONSerialization.jsonObject(with: Data(try Self.shell(insert).utf8)) as? [String: Any]
        #expect((inserted?["_id"] as? String)?.hasPrefix("Note/") == true, "\(String(describing: inserted))")
        let fetch = try #require(commands.first { $0.contains("where=") })
        let fetched = try JSONSerialization.jsonObject(with: Data(try Self.shell(fetch).utf8)) as? [String: Any]
        let ids = (fetched?["objects"] as? [[String: Any]])?.compactMap { $0["_id"] as? String }
        #expect(ids == [inserted?["_id"] as? String].compactMap { $0 }, "\(fetch) → \(String(describing: fetched))")
        let described = try JSONSerialization.jsonObject(with: Data(try Self.shell(commands[0]).utf8)) as? [String: Any]
        #expect(described?["name"] as? String == "Laboratory")
    }

    @Test("the version line is the first line on stderr, before anything about the store: 50 starts of 50")
    func versionLineFirst() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = directory.appendingPathComponent("store.sqlite").path
        var firstLines: [String] = []
        for _ in 0..<50 {
            let server = try Started(["serve", "--demo", "--store", store, "--port", "0"])
            // Until the store's own lines are out too: they are the ones that could come first.
            #expect(server.wait { _, err in err.contains("msg=ready") }, "\(server.errors)")
            firstLines.append(server.errors.split(separator: "\n", maxSplits: 1).first.map(String.init) ?? "")
            server.process.terminate()
            server.process.waitUntilExit()
        }
        let wrong = firstLines.filter { !$0.hasPrefix("managedstore ") || !$0.contains(" listening on http://127.0.0.1:") || !$0.contains(" model Tracker store ") }
        #expect(wrong.isEmpty, "\(wrong.count) of 50 starts began otherwise, e.g. \(wrong.first ?? "")")
    }
}
