import Foundation

/// How a save under an idempotency key went.
public enum IdempotentSave: Sendable, Hashable {
    /// The key was new: the changes were saved, and the key recorded with them.
    case saved(SavedChanges)
    /// A save under this key committed before (at `savedAt`): nothing was written now, the
    /// context's changes were discarded, and these are the changes the first save made (its
    /// inserted, updated and deleted objects and its token; not its resolved conflicts).
    case replayed(SavedChanges, savedAt: Date)

    /// What the save under the key changed in the store, now or the first time.
    public var changes: SavedChanges {
        switch self {
        case .saved(let changes), .replayed(let changes, _): return changes
        }
    }

    public var isReplay: Bool {
        if case .replayed = self { return true }
        return false
    }
}

extension ManagedObjectContext {
    /// Saves once per key: a sync client, or a job queue, that cannot tell
    /// whether a save went through (the process died, the job was handed out again) saves
    /// again under the same key, and writes nothing the second time.
    ///
    /// The key is recorded in the save's own transaction, so a crash keeps both or neither.
    /// A later save under the key, within `StoreDescription.idempotencyKeyLifetime`:
    /// - with the same `fingerprint` (whatever identifies the request to the caller; empty
    ///   when any save under the key counts as the same) writes nothing, discards this
    ///   context's changes (`rollback()`: they were saved the first time) and returns
    ///   `.replayed` with what the first save changed;
    /// - with another fingerprint throws `SaveError.idempotencyKeyReused`, the changes kept.
    ///
    /// A save that fails records nothing: the next one under the key runs afresh. Throws as
    /// `save(mergePolicy:)` does; if the store fails after the changes were written into the
    /// transaction (so they are rolled back, but the objects already took their saved state),
    /// the context is reset and `SaveError.store` thrown. Only a context that saves to the
    /// store saves under a key: a child context throws `SaveError.idempotencyKeyInChildContext`
    /// and keeps its changes.
    public func save(idempotencyKey key: IdempotencyKey, fingerprint: [UInt8] = [], mergePolicy: MergePolicy? = nil) throws(SaveError) -> IdempotentSave {
        assertOnQueue()
        guard parent == nil else { throw .idempotencyKeyInChildContext }
        var wrote = false
        let outcome: IdempotentOutcome<SavedChanges>
        do {
            outcome = try performOnce(key: key, fingerprint: fingerprint) { () throws -> (result: SavedChanges, answer: [UInt8]?) in
                let saved = try save(mergePolicy: mergePolicy)
                wrote = true
                return (saved, SavedChangesRecord.encode(saved))
            }
        } catch {
            if let error = error as? SaveError { throw error }
            if wrote { reset() }
            throw .store(StoreError(wrapping: error))
        }
        switch outcome {
        case .performed(let saved):
            return .saved(saved)
        case .replayed(let record):
            rollback()
            return .replayed(SavedChangesRecord.decode(record.answer, coordinator: coordinator), savedAt: record.created)
        case .keyReused:
            throw .idempotencyKeyReused(key)
        }
    }
}

/// A save's changes as its idempotency record keeps them: JSON of object IDs and the token.
enum SavedChangesRecord {
    static func encode(_ saved: SavedChanges) -> [UInt8] {
        func ids(_ list: [ManagedObjectID]) -> JSONValue { .array(list.map { .string($0.description) }) }
        return Array(JSONValue.object([
            ("inserted", ids(saved.inserted)), ("updated", ids(saved.updated)), ("deleted", ids(saved.deleted)),
            ("token", saved.token.map { .number(String($0.rawValue)) } ?? .null),
        ]).serialized().utf8)
    }

    /// The changes `bytes` record (IDs this model no longer knows are left out).
    static func decode(_ bytes: [UInt8], coordinator: PersistentStoreCoordinator) -> SavedChanges {
        guard let json = try? JSONParser().parse(bytes[...]) else { return .none }
        func ids(_ name: String) -> [ManagedObjectID] {
            (json[name]?.arrayValue ?? []).compactMap { $0.stringValue.flatMap(coordinator.managedObjectID(fromDescription:)) }
        }
        return SavedChanges(inserted: ids("inserted"), updated: ids("updated"), deleted: ids("deleted"),
                            token: json["token"]?.int64Value.map(PersistentHistoryToken.init(rawValue:)))
    }
}
