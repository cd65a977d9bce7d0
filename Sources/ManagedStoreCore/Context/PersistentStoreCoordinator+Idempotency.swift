import Foundation

// Idempotent writes: a unit of work under a key runs once; a retry within the key's lifetime
// gets what the first run stored. The record is written in the transaction of the work's own
// writes, so that a crash keeps both or neither.

extension ManagedObjectContext {
    /// Runs `work` once per `key`, in one write transaction: the group commit this context runs
    /// (`PersistentStoreCoordinator.performGroupCommit(in:)`), or one of its own. The key is
    /// looked up first: a record younger than `StoreDescription.idempotencyKeyLifetime` with the
    /// same `fingerprint` is replayed and one with another fingerprint refused, neither running
    /// `work`. Otherwise `work` runs; the answer it returns is stored under the key with its
    /// writes, or nothing is stored when it returns no answer (a refusal: the next try runs
    /// afresh). If anything throws, nothing of it is kept.
    ///
    /// Inside a group commit, a throw after `work` has written (its saves are in the group's
    /// transaction, and the record can no longer go with them) rolls the whole transaction
    /// back: `group.isIntact` turns false, as after any save that the store undid with its
    /// transaction, and the group's other units are undone too. A unit of its own would need a
    /// savepoint around every keyed write, which the server's path (whose work never throws)
    /// would pay for on every request.
    ///
    /// Call it on the context's queue; `work` saves this context.
    public func performOnce<T>(key: IdempotencyKey, fingerprint: [UInt8],
                               _ work: () throws -> (result: T, answer: [UInt8]?)) throws -> IdempotentOutcome<T> {
        assertOnQueue()
        let oldest = coordinator.oldestLiveIdempotencyRecord
        guard let group = activeGroup else {
            // A transaction of its own: whatever throws rolls all of it back.
            return try coordinator.performGroupCommit(in: self) { group in try performOnce(key: key, fingerprint: fingerprint, oldest: oldest, in: group, work) }
        }
        return try performOnce(key: key, fingerprint: fingerprint, oldest: oldest, in: group, work)
    }

    private func performOnce<T>(key: IdempotencyKey, fingerprint: [UInt8], oldest: Date, in group: GroupCommit,
                                _ work: () throws -> (result: T, answer: [UInt8]?)) throws -> IdempotentOutcome<T> {
        if let found = try group.session.idempotencyRecord(for: key), found.created >= oldest {
            // Stored by an earlier unit of this transaction: the answer stands or falls with its COMMIT.
            if group.storedIdempotencyKeys.contains(key) { group.dependsOnTransaction() }
            return found.fingerprint == fingerprint ? .replayed(found) : .keyReused(found)
        }
        let releasedBefore = group.released
        do {
            let (result, answer) = try work()
            if let answer {
                try group.session.storeIdempotencyRecord(IdempotencyRecord(key: key, fingerprint: fingerprint, answer: answer, created: Date()))
                group.storedIdempotencyKeys.insert(key)
            }
            return .performed(result)
        } catch {
            if group.released > releasedBefore { group.abandonTransaction() }
            throw error
        }
    }
}

extension PersistentStoreCoordinator {
    /// Deletes at most `limit` idempotency records older than the key lifetime, oldest first;
    /// returns how many went. Run it until it returns less than `limit`: each call is one
    /// short write, so saves waiting for the writer are not held behind a long prune.
    @discardableResult
    public func deleteExpiredIdempotencyRecords(limit: Int = 1_000) throws(StoreError) -> Int {
        let cutoff = oldestLiveIdempotencyRecord
        return try writeStore { session in try session.deleteIdempotencyRecords(createdBefore: cutoff, limit: limit) }
    }

    /// The idempotency records the store holds (expired ones not yet deleted included).
    public func idempotencyRecordCount() throws(StoreError) -> Int {
        try readStore { session in try session.idempotencyRecordCount() }
    }

    /// The record of `key`, if the store holds one still within the key lifetime.
    public func idempotencyRecord(for key: IdempotencyKey) throws(StoreError) -> IdempotencyRecord? {
        let oldest = oldestLiveIdempotencyRecord
        return try readStore { session in try session.idempotencyRecord(for: key) }.flatMap { $0.created >= oldest ? $0 : nil }
    }

    /// Records created before this have outlived the key lifetime.
    var oldestLiveIdempotencyRecord: Date {
        Date(timeIntervalSinceNow: -Self.seconds(storeDescription.idempotencyKeyLifetime))
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
