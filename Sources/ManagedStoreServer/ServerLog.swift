import Foundation

/// Lines for the operator on stderr: what went wrong inside the server, in words a client
/// never sees (SQLite's messages, SQL). One write per line, so lines from several threads
/// never interleave.
enum ServerLog {
    static func error(_ message: String) {
        FileHandle.standardError.write(Data("managedstore: error: \(message)\n".utf8))
    }
}
