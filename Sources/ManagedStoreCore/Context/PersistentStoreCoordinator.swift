import Foundation
import Synchronization

/// Connects contexts to a persistent store [NSPersistentStoreCoordinator]: contexts read
/// through it and save through it, and it hands the store's commits on to the contexts that
/// merge them. What the store is (SQLite, or any other `PersistentStore`) is its own affair.
public final class PersistentStoreCoordinator: Sendable {
    public let model: ManagedObjectModel
    public var storeDescription: StoreDescription { store.storeDescription }
    /// The UUID recorded in the store when it was created; part of every object ID.
    public let storeIdentifier: UUID
    /// Names stored destination keys by their own entities.
    package var destinationIDs: DestinationIDs { DestinationIDs(model: model, storeIdentifier: storeIdentifier) }
    /// What opening the store changed in it: a file format upgrade, a migration from the model
    /// it was made with. Empty when it matched (or was created).
    public var appliedMigration: MigrationPlan { store.appliedMigration }

    /// The store every read and write goes to.
    let store: any PersistentStore
    /// The read contexts lent with the store's readers (`withReadContext`).
    let readContexts: PooledReadContexts
    /// Contexts that merge every other context's save (`automaticallyMergesChangesFromParent`).
    let mergingContexts = MergingContexts()
    /// The live queries' engine, made on first use (`liveQueries`).
    private let liveQueryEngine = Mutex<LiveQueryEngine?>(nil)

    /// A coordinator of `store`, opened for `model`.
    package init(model: ManagedObjectModel, store: any PersistentStore) {
        precondition(store.model === model, "a store is opened for the coordinator's model")
        self.model = model
        self.store = store
        self.storeIdentifier = store.identifier
        self.readContexts = PooledReadContexts(count: store.readerCount)
    }

    /// The engine that keeps this store's live queries current (the server's live streams and
    /// `FetchedResultsController`s share it, and its windows).
    package var liveQueries: LiveQueryEngine {
        liveQueryEngine.withLock { engine in
            if let engine { return engine }
            let made = LiveQueryEngine(coordinator: self)
            engine = made
            return made
        }
    }

    /// Windows the engine keeps current; 0 without making the engine (a metric must not).
    package var liveWindowsHeld: Int { liveQueryEngine.withLock { $0?.windowsHeld ?? 0 } }

    // MARK: Reading and writing

    /// Runs `body` in a read session on the store's latest committed state.
    func readStore<T>(_ body: (any StoreReadSession) throws -> T) throws(StoreError) -> T {
        do { return try store.read(throughWriter: false, body) } catch { throw StoreError(wrapping: error) }
    }

    /// Runs `body` in a write transaction of its own, and commits.
    func writeStore<T>(_ body: (any StoreWriteSession) throws -> T) throws(StoreError) -> T {
        do { return try store.write(body) } catch { throw StoreError(wrapping: error) }
    }

    /// Folds whatever the store keeps beside its main form into it, so that the main form alone
    /// holds every commit: the SQLite store copies its WAL into the database file and empties
    /// it, waiting (up to 10 s) for readers still using it, so that a store file copied after
    /// this holds everything without its `-wal`. Nothing to do in memory or on PostgreSQL.
    public func settle() throws(StoreError) { try store.settle() }

    /// What the store says of itself (its sizes, its log), for health checks and metrics.
    public var storeFigures: [StoreFigure] { store.figures }

    /// The SQLite store's checkpoint, by its old name.
    @available(*, deprecated, renamed: "settle()")
    public func checkpoint() throws(StoreError) { try settle() }

    /// The size of the SQLite store's `-wal` file in bytes (0 when there is none, in memory or
    /// on PostgreSQL).
    public var walSize: Int64 { store.figures.first { $0.metric == "wal_bytes" }?.value ?? 0 }

    /// The size of the store's data in bytes: an SQLite database file without its WAL (0 in
    /// memory), a PostgreSQL schema's tables and indexes.
    public var storeSize: Int64 { store.figures.first { $0.metric == "store_bytes" }?.value ?? 0 }

    /// How long reads have waited for one of the store's readers so far (a read of an
    /// in-memory store goes through the writer, and is not counted).
    public var readerWaitHistogram: Histogram { store.readerWaitHistogram }

    /// Calls `observer` after every transaction the store commits (on the committing thread,
    /// holding the writer: hand anything more than a signal to another queue). What a change
    /// feed waits on: read the history after the token you last saw to learn what changed.
    public func addCommitObserver(_ observer: @escaping @Sendable () -> Void) { store.addCommitObserver(observer) }

    /// How many write transactions have committed since the store was opened (a group commit
    /// counts once, however many saves it held).
    public var commitCount: Int { store.commitCount }

    // MARK: IDs

    /// The object ID a URI names, if it belongs to this store and model.
    public func managedObjectID(forURIRepresentation uri: URL) -> ManagedObjectID? {
        guard let id = ManagedObjectID(uriRepresentation: uri), isValid(id) else { return nil }
        return id
    }

    /// The permanent ID of the object `pk` of `entityName` (the API's `Entity/pk` form).
    public func managedObjectID(entityName: String, primaryKey: Int64) -> ManagedObjectID? {
        guard model.entityIndexByName[entityName] != nil, primaryKey > 0 else { return nil }
        return ManagedObjectID(storeIdentifier: storeIdentifier, entityName: entityName, key: .permanent(primaryKey))
    }

    /// The permanent ID written `Entity/pk` (the form `ManagedObjectID.description` gives, and
    /// the API uses), if it names an entity of this model and a positive key.
    public func managedObjectID(fromDescription text: String) -> ManagedObjectID? {
        guard let id = ManagedObjectID(description: text, storeIdentifier: storeIdentifier), isValid(id) else { return nil }
        return id
    }

    func isValid(_ id: ManagedObjectID) -> Bool {
        id.storeIdentifier == storeIdentifier && model.entityIndexByName[id.entityName] != nil
    }

    // MARK: Integrity

    /// Checks the store: for the SQLite store, SQLite's own integrity check, every stored link
    /// pointing at an existing object, versions at least 1, and the key sequence ahead of every
    /// key. Returns the problems found.
    public func checkIntegrity() throws -> [String] { try store.checkIntegrity() }
}
