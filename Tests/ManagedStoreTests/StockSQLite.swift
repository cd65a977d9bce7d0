import Foundation
import Testing

/// The stock `sqlite3` command-line shell, to check that store files stay readable by plain
/// SQLite (no custom collation or function in any definition). scripts/install-deps.sh
/// installs it; tests that need it are skipped, saying so, only where it is absent.
enum StockSQLite {
    static let path = "/usr/bin/sqlite3"
    static var isInstalled: Bool { FileManager.default.isExecutableFile(atPath: path) }
    static let missing: Comment = "/usr/bin/sqlite3 is not installed (scripts/install-deps.sh installs it): the stock-SQLite check is skipped"

    struct Output {
        let status: Int32
        let stdout: String
        let stderr: String
        /// Standard output, one row per line.
        var lines: [String] { stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init) }
    }

    /// Runs `sql` on the database `file` in the stock shell, without any ~/.sqliterc.
    static func run(_ file: URL, _ sql: String) throws -> Output {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = ["-batch", "-init", "/dev/null", file.path, sql]
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        // Read both before waiting: a full pipe would otherwise block the shell for ever.
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Output(status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
                      stderr: String(decoding: stderr, as: UTF8.self))
    }
}
