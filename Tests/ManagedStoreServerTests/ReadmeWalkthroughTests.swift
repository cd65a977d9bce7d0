import Foundation
import Testing
@testable import ManagedStoreHTTP
@testable import ManagedStoreOpenAPI
@testable import ManagedStoreServer

/// Runs every command of the README's curl walkthrough against a fresh server and compares
/// what it prints with what the README shows, so the README stays true. Only the times
/// differ (the change feed's timestamps), and blank lines (between server-sent events) are
/// left out on both sides.
@Suite("README walkthrough")
struct ReadmeWalkthroughTests {
    struct Step {
        let command: String
        let expected: String
    }

    static func steps() throws -> [Step] {
        let readme = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("README.md")
        let text = try String(contentsOf: readme, encoding: .utf8)
        guard let start = text.range(of: "<!-- walkthrough:start -->"), let end = text.range(of: "<!-- walkthrough:end -->") else {
            throw CocoaError(.fileReadCorruptFile)
        }
        let block = text[start.upperBound..<end.lowerBound].split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            .filter { !$0.hasPrefix("```") }
        var steps: [Step] = []
        var command: String?
        // A command goes on while its single quotes are open (JSON bodies over several lines).
        var continuing = false
        func open(_ text: String) -> Bool { text.filter { $0 == "'" }.count % 2 == 1 }
        var output: [String] = []
        func flush() {
            if let command { steps.append(Step(command: command, expected: output.joined(separator: "\n"))) }
            output = []
        }
        for line in block {
            if continuing {
                command! += "\n" + line
                continuing = open(command!)
            } else if line.hasPrefix("$ ") {
                flush()
                command = String(line.dropFirst(2))
                continuing = open(command!)
            } else if command != nil && !line.isEmpty {
                output.append(line)
            }
        }
        flush()
        return steps
    }

    @Test("every command prints what the README shows")
    func walkthrough() throws {
        let steps = try Self.steps()
        #expect(steps.count >= 5)
        let harness = try ServerHarness()
        for step in steps {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/bash")
            process.arguments = ["-c", step.command]
            process.environment = ProcessInfo.processInfo.environment.merging(["MS": "http://127.0.0.1:\(harness.port)"]) { $1 }
            let pipe = Pipe()
            process.standardOutput = pipe
            try process.run()
            let data = pipe.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            let printed = String(decoding: data, as: UTF8.self).split(separator: "\n").joined(separator: "\n")
            #expect(Self.timeless(printed) == Self.timeless(step.expected), "\(step.command)")
        }
    }

    /// `text` with every RFC 3339 time replaced by one placeholder: the change feed's
    /// timestamps differ from run to run, nothing else may.
    static func timeless(_ text: String) -> String {
        text.replacing(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z/, with: "<time>")
    }
}
