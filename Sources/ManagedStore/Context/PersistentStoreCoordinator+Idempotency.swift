import Foundation

// Idempotent writes: a unit of work under a key runs once; a retry within the key's lifetime
// gets what the first run stored. The record is written in the transaction of the work's own
// writes, so that a crash keeps both or neither.

extension PersistentStoreCoordinator {
    /// Runs `work` once per `key`: in one write transaction (the group commit this thread
    /// holds, or one of its own), looks the key up first. A record younger than
    /// `StoreDescription.idempotencyKeyLifetime` with the same `fingerprint` is replayed and
    /// one with another fingerprint refused, neither running `work`. Otherwise `work` runs; the
    /// answer it returns is stored under the key with its writes, or nothing is stored when it
    /// returns no answer (a refusal: the next try runs afresh). If anything throws, nothing of
    /// it is kept.
    ///
    /// Inside a group commit, a throw after `work` has written (its saves are in the group's
    /// transaction, and the record can no longer go with them) rolls the whole transaction
    /// back: `group.isIntact` turns false, as after any save that SQLite undid with its
    /// transaction, and the group's other units are undone too. A unit of its own would need a
    /// savepoint around every keyed write, which the server's path (whose work never throws)
    /// paid for on every request.
    ///
    /// Call it where `work`'s saves may run: inside the saving context's `performAndWait`.
    public func performOnce<T>(key: IdempotencyKey, fingerprint: [UInt8],
                               _ work: () throws -> (result: T, answer: [UInt8]?)) throws -> IdempotentOutcome<T> {
        let oldest = oldestLiveIdempotencyRecord
        guard let group = writer.currentGroup else {
            // A transaction of its own: whatever throws rolls all of it back.
            return try performGroupCommit { group in try performOnce(key: key, fingerprint: fingerprint, oldest: oldest, in: group, work) }
        }
        return try performOnce(key: key, fingerprint: fingerprint, oldest: oldest, in: group, work)
    }

    private func performOnce<T>(key: IdempotencyKey, fingerprint: [UInt8], oldest: Date, in group: GroupCommit,
                                _ work: () throws -> (result: T, answer: [UInt8]?)) throws -> IdempotentOutcome<T> {
        if let (found, rowid) = try IdempotencyTable.find(key, group.connection), found.created >= oldest {
            if let first = group.firstStoredIdempotencyRowid, rowid >= first { group.dependsOnTransaction() }
            return found.fingerprint == fingerprint ? .replayed(found) : .keyReused(found)
        }
        let releasedBefore = group.released
        do {
            let (result, answer) = try work()
            if let answer {
                let rowid = try IdempotencyTable.store(IdempotencyRecord(key: key, fingerprint: fingerprint, answer: answer, created: Date()), group.connection)
                if group.firstStoredIdempotencyRowid == nil { group.firstStoredIdempotencyRowid = rowid }
            }
            return .performed(result)
        } catch {
            if group.released > releasedBefore { group.abandonTransaction() }
            throw error
        }
    }

    /// Deletes at most `limit` idempotency records older than the key lifetime, oldest first;
    /// returns how many went. Run it until it returns less than `limit`: each call is one
    /// short write, so saves waiting for the writer are not held behind a long prune.
    @discardableResult
    public func deleteExpiredIdempotencyRecords(limit: Int = 1_000) throws(StoreError) -> Int {
        let cutoff = oldestLiveIdempotencyRecord
        do {
            return try write { connection in try IdempotencyTable.deleteExpired(before: cutoff, limit: limit, connection) }
        } catch {
            throw StoreError(wrapping: error)
        }
    }

    /// The idempotency records the store holds (expired ones not yet deleted included).
    public func idempotencyRecordCount() throws(StoreError) -> Int {
        do {
            return try read { connection in try IdempotencyTable.count(connection) }
        } catch {
            throw StoreError(wrapping: error)
        }
    }

    /// The record of `key`, if the store holds one still within the key lifetime.
    public func idempotencyRecord(for key: IdempotencyKey) throws(StoreError) -> IdempotencyRecord? {
        let oldest = oldestLiveIdempotencyRecord
        do {
            return try read { connection in try IdempotencyTable.find(key, connection) }.flatMap { $0.record.created >= oldest ? $0.record : nil }
        } catch {
            throw StoreError(wrapping: error)
        }
    }

    /// Records created before this have outlived the key lifetime.
    private var oldestLiveIdempotencyRecord: Date {
        Date(timeIntervalSinceNow: -Self.seconds(storeDescription.idempotencyKeyLifetime))
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
