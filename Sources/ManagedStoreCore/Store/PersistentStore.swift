import Foundation

/// A backend that keeps a model's objects [NSPersistentStore, NSIncrementalStore]: what the
/// coordinator and its contexts need from any store, in the library's own values. The SQLite
/// store is one; a test store over dictionaries is another.
///
/// A store opens itself for a model (creating or migrating what it keeps), and then lends
/// sessions: read sessions on its latest committed state, snapshots that stay on one state,
/// and write sessions inside one transaction. It holds no contexts and no objects; it reads
/// and writes rows, and answers checked requests (`StoreFetch`, `PreparedAggregate`) with the
/// results the in-memory predicate evaluator would give.
///
/// Its promises, which the contexts rely on:
/// - A write session's changes are all committed or none (`write`, `performGroupCommit`), and
///   a savepoint's are kept or rolled back alone.
/// - `commitCount` is counted before `write` or `performGroupCommit` returns, and a read begun
///   after that sees the commit: an acknowledged write is visible to the next read.
/// - Keys handed out by `allocateKeys` (and the keys of inserted objects) are never handed out
///   again, even after the objects are deleted.
package protocol PersistentStore: AnyObject, Sendable {
    /// Object IDs: the UUID recorded in the store when it was created, part of every ID.
    var identifier: UUID { get }
    /// The coordinator's model: the one the store was opened (and migrated) for.
    var model: ManagedObjectModel { get }
    /// Saves and expiry read its options: how the store was opened (location, history, key lifetimes).
    var storeDescription: StoreDescription { get }
    /// The coordinator reports it (`appliedMigration`): what opening the store changed in it
    /// (empty when it matched, or was created).
    var appliedMigration: MigrationPlan { get }

    // MARK: Reading

    /// Every context's reads: one read session on the latest committed state. With
    /// `throughWriter`, the session is on the writer's side of the store (it waits for a write
    /// in progress): a context that reads what its own group commit wrote.
    func read<T>(throughWriter: Bool, _ body: (any StoreReadSession) throws -> T) throws -> T
    /// The coordinator's pool of read contexts, one per reader: how many readers the store lends at once.
    var readerCount: Int { get }
    /// Pooled read contexts: lends one of the store's readers, numbered `0..<readerCount`, with
    /// a session on the latest committed state; waits while every reader is lent out. A reader
    /// is lent to one caller at a time, so whatever the caller keeps per reader number is its own.
    func withPooledReader<T>(_ body: (_ reader: Int, _ session: any StoreReadSession) throws -> T) throws -> T
    /// `withPooledReader` for a body that runs one statement at most (an object read by its
    /// key): one statement sees one state by itself, so a store whose snapshot costs statements
    /// of its own (PostgreSQL's BEGIN and COMMIT, and a wake-up of its server for the COMMIT)
    /// may leave them out.
    func withPooledReaderForOneStatement<T>(_ body: (_ reader: Int, _ session: any StoreReadSession) throws -> T) throws -> T
    /// Query generations and asynchronous fetches: a snapshot that begins at its first read and
    /// stays on that state; nil when the store keeps no older states.
    func makeSnapshot() -> (any StoreSnapshot)?
    /// The coordinator's metrics: how long reads have waited for a reader so far.
    var readerWaitHistogram: Histogram { get }

    // MARK: Writing

    /// A context's save, batch requests, pruning: runs `body` in one write transaction, and
    /// commits; nothing of it is kept if it throws.
    func write<T>(_ body: (any StoreWriteSession) throws -> T) throws -> T
    /// The write queue's group commit: begins one write transaction, runs `body` with it (where
    /// savepoints are taken), and commits it if it is still intact when `body` returns; rolls
    /// back if `body` throws. Writes of other threads wait for it to end.
    func performGroupCommit<T>(_ body: (any StoreTransaction) throws -> T) throws -> T
    /// Query generations and the coordinator's metrics: how many write transactions have
    /// committed since the store was opened.
    var commitCount: Int { get }
    /// Change notifications across stores' processes (and the change feed's long-polls): calls
    /// `observer` after every commit, on the committing thread.
    func addCommitObserver(_ observer: @escaping @Sendable () -> Void)

    // MARK: Upkeep

    /// Before a process stops, or a store's files are copied: whatever the store keeps beside
    /// its main form is folded into it, so that the main form alone holds every commit (the
    /// SQLite store empties its WAL into the database file); nothing to do for most stores.
    func settle() throws(StoreError)
    /// `managedstore check`: the problems found in the store's own consistency checks; empty
    /// when there are none.
    func checkIntegrity() throws -> [String]
    /// Health checks and metrics: what the store says of itself (its sizes, its log), each
    /// figure in its own words; the server reports them without knowing the store.
    var figures: [StoreFigure] { get }

    // MARK: Values

    /// Validation: whether some values the contract accepts cannot be kept by this store as they
    /// are (`refusals(of:entity:)`); false, the validator asks nothing more.
    var refusesSomeValues: Bool { get }
    /// Validation: the attributes of an object of `entity` holding `attributes` whose values
    /// this store cannot keep, each with the rule it breaks. A save is refused before anything
    /// is written, as any other broken rule is: a validation error naming the attribute, not a
    /// store failure that a client would retry for ever.
    func refusals(of attributes: [AttributeValue], entity: Entity) -> [StoreValueRefusal]
}

extension PersistentStore {
    /// Most stores' snapshots cost nothing more than their reads.
    package func withPooledReaderForOneStatement<T>(_ body: (_ reader: Int, _ session: any StoreReadSession) throws -> T) throws -> T {
        try withPooledReader(body)
    }

    /// Most stores keep every value of the contract.
    package var refusesSomeValues: Bool { false }
    package func refusals(of attributes: [AttributeValue], entity: Entity) -> [StoreValueRefusal] { [] }
}

/// An attribute value a store cannot keep as it is: the attribute (its index in
/// `Entity.attributes`), and the validation error a save is refused with.
package struct StoreValueRefusal: Sendable, Equatable {
    package let attribute: Int
    package let code: ValidationErrorCode
    package let message: String

    package init(attribute: Int, code: ValidationErrorCode, message: String) {
        self.attribute = attribute
        self.code = code
        self.message = message
    }
}

/// One figure a store reports about itself, for `/v1/healthz` and `/v1/metrics`.
public struct StoreFigure: Sendable, Equatable {
    /// The metric's name after `managedstore_` (`wal_bytes`).
    public let metric: String
    /// The key it has in `/v1/healthz`'s answer (`walBytes`); nil when it is in the metrics only.
    public let healthKey: String?
    /// The metric's help text.
    public let help: String
    public let value: Int64

    public init(metric: String, healthKey: String? = nil, help: String, value: Int64) {
        self.metric = metric
        self.healthKey = healthKey
        self.help = help
        self.value = value
    }
}

/// What a save writes through, inside one transaction of the store: a read session on the
/// transaction's own state (it sees what the transaction wrote so far) that also writes
/// [NSIncrementalStore's execute(_:with:) for a save request, and obtainPermanentIDs], prunes
/// the history and keeps idempotency records.
package protocol StoreWriteSession: StoreReadSession, StoreHistoryPruning, StoreIdempotencyWriting {
    /// A save: writes a change set after checking what only the store can check (base
    /// versions, references, uniqueness), all or nothing: a refusal leaves the transaction as
    /// it was only if the caller rolls back its savepoint, which `GroupCommit` and `write` do.
    func write(_ changes: ChangeSet) throws(ChangeSetRejection) -> WrittenChanges
    /// Permanent IDs [obtainPermanentIDs]: reserves `count` keys for new objects of `entity`;
    /// returns the first.
    func allocateKeys(of entity: Entity, count: Int) throws(StoreError) -> Int64
}

/// Pruning the persistent history [NSPersistentHistoryChangeRequest.deleteHistory(before:)].
package protocol StoreHistoryPruning: AnyObject {
    /// Deletes the recorded saves before `token`; returns how many.
    func deleteHistory(before token: PersistentHistoryToken) throws(StoreError) -> Int
}

/// Keeping and expiring the records of saves made under an idempotency key.
package protocol StoreIdempotencyWriting: AnyObject {
    /// A keyed save: keeps `record` with the transaction's writes (replacing an expired one of its key).
    func storeIdempotencyRecord(_ record: IdempotencyRecord) throws(StoreError)
    /// Expiry: deletes at most `limit` records created before `cutoff`, oldest first; returns how many.
    func deleteIdempotencyRecords(createdBefore cutoff: Date, limit: Int) throws(StoreError) -> Int
}

/// One write transaction that several saves share (`PersistentStore.performGroupCommit`),
/// each in a savepoint of its own.
///
/// A store may end the transaction by itself after a failure inside a savepoint (SQLite does,
/// for a full disk or an I/O error): `isIntact` turns false and every write since it began is
/// gone; `restart` begins a new one.
///
/// Not Sendable: used on the thread that runs the group.
package protocol StoreTransaction: AnyObject {
    /// The session the group's saves write through.
    var session: any StoreWriteSession { get }
    /// How the group learns the store undid its work (a full disk): false once the transaction
    /// has been rolled back (by the store, or by `rollBack`).
    var isIntact: Bool { get }
    /// The group's remaining saves go on: begins a new transaction after the last one ended;
    /// does nothing while it is intact.
    func restart() throws(StoreError)
    /// A group that cannot finish: rolls the transaction back now.
    func rollBack()
    /// Runs `body` in a savepoint: its writes are kept when it returns, rolled back alone when
    /// it throws. The one place savepoints begin, are released and are rolled back.
    func inSavepoint<T>(_ body: () throws -> T) throws -> T
}

/// What a written change set gave back.
package struct WrittenChanges {
    /// Each insert's permanent ID, in the order of `changes.inserts`.
    let insertedIDs: [ManagedObjectID]
    /// The history transaction recorded with it; nil when it records none.
    let token: PersistentHistoryToken?

    package init(insertedIDs: [ManagedObjectID], token: PersistentHistoryToken?) {
        self.insertedIDs = insertedIDs
        self.token = token
    }
}
