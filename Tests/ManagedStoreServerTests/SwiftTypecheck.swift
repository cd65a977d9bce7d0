import Foundation

/// `swiftc -typecheck` of source files against the package's built modules (and the C modules
/// they import): for tests that show what compiles and what does not.
enum SwiftTypecheck {
    /// The compiler's status and its diagnostics for `sources`.
    static func run(_ sources: [String]) throws -> (status: Int32, output: String) {
        let root = TypedGenerationTests.root
        let modules = try ServerProcess.executable.deletingLastPathComponent().appendingPathComponent("Modules").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["swiftc", "-typecheck", "-swift-version", "6", "-I", modules]
            + ["CSQLite", "CPostgreSQL", "CMicroHTTPD", "CCrypto"].flatMap { ["-I", root.appendingPathComponent("Sources/\($0)").path] }
            + ["-Xcc", "-I/usr/include/postgresql"] + sources
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, text)
    }
}
