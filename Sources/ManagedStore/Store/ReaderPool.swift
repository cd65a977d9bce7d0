import Foundation

/// A fixed set of read-only connections, lent one at a time.
///
/// In WAL mode each reader sees a consistent snapshot and neither waits for the writer nor
/// makes it wait. `@unchecked Sendable` because `idle` is only touched while holding
/// `condition`'s lock, and a borrowed connection is used by exactly one caller until returned.
final class ReaderPool: @unchecked Sendable {
    private var idle: [SQLiteConnection]
    private let condition = NSCondition()

    init(_ connections: [SQLiteConnection]) { self.idle = connections }

    /// Runs `body` with a reader of its own, waiting while all are lent out.
    func withReader<T>(_ body: (SQLiteConnection) throws -> T) rethrows -> T {
        condition.lock()
        while idle.isEmpty { condition.wait() }
        let connection = idle.removeLast()
        condition.unlock()
        defer {
            condition.lock()
            idle.append(connection)
            condition.signal()
            condition.unlock()
        }
        return try body(connection)
    }
}
