import Foundation
import ManagedStoreCore

/// Deletes the records of idempotent writes older than the store's key lifetime
/// (`--idempotency-ttl`, default 24 hours) in the background: every quarter of the lifetime
/// (at least hourly), oldest first, a chunk per write, so that the write queue's commits
/// interleave with a long expiry instead of waiting behind it. A retry after its key expired
/// is carried out afresh (the store also treats an expired record as absent before it goes).
final class IdempotencyExpiry: Sendable {
    /// Records deleted per write.
    static let chunk = 1_000
    private let task: PeriodicTask

    init(coordinator: PersistentStoreCoordinator) {
        let lifetime = HistoryRetention.seconds(coordinator.storeDescription.idempotencyKeyLifetime)
        task = PeriodicTask(label: "ManagedStore.idempotency-expiry", interval: lifetime / 4) { [coordinator] in
            IdempotencyExpiry.expire(coordinator)
        }
    }

    func start() { task.start() }

    func stop() { task.stop() }

    /// Deletes every expired record, a chunk per write; returns how many went.
    @discardableResult
    static func expire(_ coordinator: PersistentStoreCoordinator) -> Int {
        var total = 0
        do {
            while true {
                let deleted = try coordinator.deleteExpiredIdempotencyRecords(limit: chunk)
                total += deleted
                if deleted < chunk { return total }
            }
        } catch {
            ServerLog.error("expiring idempotency keys failed (it is tried again later; the store is unaffected): \(error)")
            return total
        }
    }
}
