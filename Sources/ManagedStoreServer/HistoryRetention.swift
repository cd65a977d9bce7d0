import Foundation
import ManagedStoreCore

/// Keeps the persistent history to a period (`--history-retention`, default 7 days): on a
/// timer, the saves recorded before it are deleted, oldest first, a chunk per write so that
/// requests waiting for the writer are not held behind a long prune. A change feed reading
/// from before the pruned part is then answered 410 with the oldest token still kept, and a
/// merge policy that needs a pruned version counts every property as changed.
public final class HistoryRetention: Sendable {
    /// Saves deleted per write.
    static let chunk = 1_000
    public let period: Duration
    private let coordinator: PersistentStoreCoordinator
    /// Prunes every quarter of the period (at least every hour, at most four times a second).
    private let task: PeriodicTask

    public init(coordinator: PersistentStoreCoordinator, period: Duration) {
        self.coordinator = coordinator
        self.period = period
        self.task = PeriodicTask(label: "ManagedStore.history-retention", interval: Self.seconds(period) / 4) { [coordinator] in
            HistoryRetention.prune(coordinator, period: period)
        }
    }

    /// Prunes now and then every quarter of the period.
    public func start() { task.start() }

    public func stop() { task.stop() }

    /// Deletes the saves recorded before now minus the period; returns how many.
    @discardableResult
    public func prune() -> Int { Self.prune(coordinator, period: period) }

    @discardableResult
    private static func prune(_ coordinator: PersistentStoreCoordinator, period: Duration) -> Int {
        do {
            return try prune(coordinator, olderThan: Date(timeIntervalSinceNow: -seconds(period)))
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

        /// `--history-retention`'s value: a `DurationText` (`90m`, `7d`), or `forever`. Nil
        /// for anything else.
        public init?(_ text: String) {
            if text.trimmingCharacters(in: .whitespaces).lowercased() == "forever" {
                self = .forever
                return
            }
            guard let period = DurationText.parse(text) else { return nil }
            self = .period(period)
        }
    }
}
