import Foundation
import ManagedStore

/// The read contexts GET requests borrow, one per request, on the MHD thread that received it.
///
/// Each context reads through the coordinator's reader connections (WAL snapshots), so a GET
/// never waits for a write. A context is reset after each request: it must not answer the next
/// request from objects it read for the previous one.
///
/// `@unchecked Sendable`: `idle` is only touched while holding `condition`'s lock; a borrowed
/// context is used by one request at a time.
final class ReadContextPool: @unchecked Sendable {
    private var idle: [ManagedObjectContext]
    private let condition = NSCondition()

    init(coordinator: PersistentStoreCoordinator, count: Int) {
        idle = (0..<max(1, count)).map { ManagedObjectContext(coordinator: coordinator, name: "read-\($0)") }
    }

    /// Runs `body` on a context of the pool, on its queue, inside one read snapshot (so an
    /// object and its relationships are read consistently, in one transaction), and resets the
    /// context afterwards.
    func withContext<T>(_ body: (ManagedObjectContext) throws -> T) rethrows -> T {
        condition.lock()
        while idle.isEmpty { condition.wait() }
        let context = idle.removeLast()
        condition.unlock()
        defer {
            condition.lock()
            idle.append(context)
            condition.signal()
            condition.unlock()
        }
        // One trip onto the context's queue for the request and the reset after it.
        return try context.performAndWait {
            defer { context.reset() }
            return try context.performInSnapshot { try body(context) }
        }
    }
}

extension ManagedObjectContext {
    /// The object `id`, or nil when the store has none; other failures (a store error) throw,
    /// so that they answer 500 instead of passing for a missing object.
    func existingObjectIfStored(with id: ManagedObjectID) throws -> ManagedObject? {
        do throws(ContextError) {
            return try existingObject(with: id)
        } catch {
            if case .objectNotFound = error { return nil }
            throw error
        }
    }
}
