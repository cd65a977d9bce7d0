import Logging

/// Lines for the operator: what went wrong inside the server, in words a client never sees
/// (SQLite's messages, SQL). Through swift-log, so `serve --log-format` decides their form.
enum ServerLog {
    private static let logger = Logger(label: "managedstore")

    static func error(_ message: String) {
        logger.error("\(message)")
    }

    static func warning(_ message: String) {
        logger.warning("\(message)")
    }
}
