import Foundation
import ManagedStore

/// Keeps the persistent history to a period (`--history-retention`, default 7 days): on a
/// timer, the saves recorded before it are deleted, oldest first, a chunk per write so that
/// requests waiting for the writer are not held behind a long prune. A change feed reading
/// from before the pruned part is then answered 410 with the oldest token still kept, and a
/// merge policy that needs a pruned version counts every property as changed.
///
/// `@unchecked Sendable`: `timer` is set in `start` and `stop`, which the server calls once
/// each from one thread; the timer's handler runs on `queue` only.
public final class HistoryRetention: @unchecked Sendable {
    /// Saves deleted per write.
    static let chunk = 1_000
    public let period: Duration
    private let coordinator: PersistentStoreCoordinator
    private let queue = DispatchQueue(label: "ManagedStore.history-retention", qos: .utility)
    private var timer: DispatchSourceTimer?

    public init(coordinator: PersistentStoreCoordinator, period: Duration) {
        self.coordinator = coordinator
        self.period = period
    }

    /// Prunes now and then every quarter of the period (at least every hour, at most four
    /// times a second).
    public func start() {
        let interval = min(3_600, max(0.25, Self.seconds(period) / 4))
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now(), repeating: interval)
        timer.setEventHandler { [weak self] in self?.prune() }
        timer.resume()
        self.timer = timer
    }

    public func stop() {
        timer?.cancel()
        timer = nil
        queue.sync {}  // a prune under way ends first
    }

    /// Deletes the saves recorded before now minus the period; returns how many.
    @discardableResult
    public func prune() -> Int {
        do {
            return try Self.prune(coordinator, olderThan: Date(timeIntervalSinceNow: -Self.seconds(period)))
        } catch {
            ServerLog.error("pruning the history failed (it is tried again later; the store is unaffected): \(error)")
            return 0
        }
    }

    /// Deletes the saves recorded before `cutoff`, a chunk per write; returns how many. A
    /// failure stops it with what was deleted so far kept deleted.
    static func prune(_ coordinator: PersistentStoreCoordinator, olderThan cutoff: Date) throws(StoreError) -> Int {
        var total = 0
        while true {
            let deleted = try coordinator.deleteHistory(olderThan: cutoff, limit: chunk)
            total += deleted
            if deleted < chunk { return total }
        }
    }

    static func seconds(_ period: Duration) -> Double {
        Double(period.components.seconds) + Double(period.components.attoseconds) / 1e18
    }

    /// How long history is kept.
    public enum Setting: Sendable, Equatable {
        case forever
        case period(Duration)

        public static let sevenDays = Setting.period(.seconds(7 * 86_400))

        /// `--history-retention`'s value: a whole number with a unit, `s`, `m`, `h` or `d`
        /// (`90m`, `7d`; a bare number is seconds), at least one second and at most 100
        /// years; or `forever`. Nil for anything else.
        public init?(_ text: String) {
            let text = text.trimmingCharacters(in: .whitespaces).lowercased()
            if text == "forever" {
                self = .forever
                return
            }
            guard let period = Self.period(text) else { return nil }
            self = .period(period)
        }

        private static func period(_ text: String) -> Duration? {
            let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3_600, "d": 86_400]
            var digits = Substring(text)
            var unit: Int64 = 1
            if let last = text.last, let scale = units[last] {
                unit = scale
                digits = digits.dropLast()
            }
            guard !digits.isEmpty, digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber), digits.count <= 12,
                  let count = Int64(digits) else { return nil }
            let (seconds, overflow) = count.multipliedReportingOverflow(by: unit)
            guard !overflow, seconds >= 1, seconds <= 36_500 * 86_400 else { return nil }
            return .seconds(seconds)
        }
    }
}
