import Foundation
import ManagedStoreCore

/// A second store: everything in dictionaries in memory, fetches answered by the in-memory
/// predicate evaluator [NSInMemoryStoreType]. It exists to prove the seam: the contexts,
/// faults, saves, conflicts and merge policies run on it as on the SQLite store
/// (`MANAGEDSTORE_TEST_STORE=dictionary`, `Fixtures.container`). It keeps older states (a
/// snapshot is a copy of the state), so query generations work on it too. It answers no
/// aggregate requests.
///
/// One state is committed at a time; a write works on its own copy and commits by handing it
/// back. Writes take turns (one writer, never re-entered by the thread that holds it, as the
/// SQLite store's); reads never wait for them.
///
/// `@unchecked Sendable`: `committed`, `commits` and `observers` are only touched under
/// `lock`; `writerThread` and `currentSession` only by the thread that holds `writer`, and
/// read by others only to learn that they do not hold it.
package final class DictionaryStore: PersistentStore, @unchecked Sendable {
    package let identifier = UUID()
    package let model: ManagedObjectModel
    package let storeDescription: StoreDescription
    package let appliedMigration = MigrationPlan(steps: [])

    private let lock = NSLock()
    private var committed: DictionaryState
    private var commits = 0
    private var observers: [@Sendable () -> Void] = []

    private let writer = NSLock()
    private var writerThread: pthread_t?
    /// The session of the write in progress, for reads made by the writing thread.
    private var currentSession: DictionarySession?

    private let readers: ReaderSlots

    package init(model: ManagedObjectModel, description: StoreDescription = .inMemory) {
        self.model = model
        self.storeDescription = description
        self.committed = DictionaryState(model: model)
        self.readers = ReaderSlots(count: description.readerCount)
    }

    private func session(on state: DictionaryState) -> DictionarySession {
        DictionarySession(state: state, model: model, storeIdentifier: identifier)
    }

    private var committedState: DictionaryState { lock.withLock { committed } }

    private var holdsWriter: Bool { writerThread.map { pthread_equal($0, pthread_self()) != 0 } ?? false }

    // MARK: Reading

    package func read<T>(throughWriter: Bool, _ body: (any StoreReadSession) throws -> T) throws -> T {
        // The writing thread reads its own transaction, as the SQLite store's writer does.
        if holdsWriter, let currentSession { return try body(currentSession) }
        return try body(session(on: committedState))
    }

    package var readerCount: Int { storeDescription.readerCount }

    package func withPooledReader<T>(_ body: (_ reader: Int, _ session: any StoreReadSession) throws -> T) throws -> T {
        try readers.withSlot { slot in try body(slot, session(on: committedState)) }
    }

    package func makeSnapshot() -> (any StoreSnapshot)? {
        DictionarySnapshot { [self] in lock.withLock { (committed, commits) } } session: { [self] in session(on: $0) }
    }

    package var readerWaitHistogram: Histogram { Histogram(bounds: Histogram.latencyBounds) }

    // MARK: Writing

    package func write<T>(_ body: (any StoreWriteSession) throws -> T) throws -> T {
        try performGroupCommit { transaction in
            try transaction.inSavepoint { try body(transaction.session) }
        }
    }

    package func performGroupCommit<T>(_ body: (any StoreTransaction) throws -> T) throws -> T {
        precondition(!holdsWriter, "the dictionary store's writer was asked for again by the thread that holds it")
        writer.lock()
        writerThread = pthread_self()
        let transaction = DictionaryTransaction(session: session(on: committedState)) { [self] in committedState }
        currentSession = transaction.session as? DictionarySession
        defer {
            currentSession = nil
            writerThread = nil
            writer.unlock()
        }
        let result = try body(transaction)
        if transaction.isIntact, let session = transaction.session as? DictionarySession { commit(session.state) }
        return result
    }

    private func commit(_ state: DictionaryState) {
        let observers = lock.withLock { () -> [@Sendable () -> Void] in
            committed = state
            commits += 1
            return self.observers
        }
        for observer in observers { observer() }
    }

    package var commitCount: Int { lock.withLock { commits } }

    package func addCommitObserver(_ observer: @escaping @Sendable () -> Void) { lock.withLock { observers.append(observer) } }

    // MARK: Upkeep

    package func settle() throws(StoreError) {}

    /// Every stored key within the keys handed out, versions at least 1, and every stored key of
    /// a to-one pointing at an object that exists (worded as the SQLite store words them).
    package func checkIntegrity() throws -> [String] {
        let state = committedState
        var problems: [String] = []
        for entity in model.schema {
            if let highest = state.rows[entity.index].keys.max(), highest > state.lastKeys[entity.keyRoot] {
                problems.append("\(entity.name): key \(highest) is past the keys handed out (\(state.lastKeys[entity.keyRoot]))")
            }
            let belowOne = state.rows[entity.index].values.filter { $0.version < 1 }.count
            if belowOne > 0 { problems.append("\(entity.name): \(belowOne) rows with a version below 1") }
            for (position, r) in entity.foreignKeyRelationships.enumerated() {
                let relationship = entity.relationships[r]
                let destination = model.schema[relationship.destinationIndex]
                let missing = state.rows[entity.index].values.filter { row in
                    row.foreignKeys[position].map { key in !([destination.index] + destination.kinds).contains { state.rows[$0][key] != nil } } ?? false
                }.count
                if missing > 0 { problems.append("\(entity.name).\(relationship.name): \(missing) links to missing \(destination.name) objects") }
            }
            for relationship in entity.relationships {
                guard case let .joinTable(table, isFirstSide) = relationship.storage else { continue }
                let owners = model.linkOwner(of: entity, relationship)
                let orphans = (state.links[table] ?? []).filter { link in
                    !([owners.index] + owners.kinds).contains { state.rows[$0][isFirstSide ? link.a : link.b] != nil }
                }.count
                if orphans > 0 { problems.append("\(entity.name).\(relationship.name): \(orphans) join rows for missing \(entity.name) objects") }
            }
        }
        return problems
    }

    package var figures: [StoreFigure] { [] }
}

/// A group commit's transaction on a dictionary store: the session's state is the
/// transaction's; a savepoint is a copy of it, put back if its body throws.
final class DictionaryTransaction: StoreTransaction {
    let session: any StoreWriteSession
    private(set) var isIntact = true
    private let latest: () -> DictionaryState

    init(session: DictionarySession, latest: @escaping () -> DictionaryState) {
        self.session = session
        self.latest = latest
    }

    private var state: DictionaryState {
        get { (session as! DictionarySession).state }
        set { (session as! DictionarySession).state = newValue }
    }

    func restart() throws(StoreError) {
        guard !isIntact else { return }
        state = latest()
        isIntact = true
    }

    func rollBack() {
        state = latest()
        isIntact = false
    }

    func inSavepoint<T>(_ body: () throws -> T) throws -> T {
        precondition(isIntact, "a savepoint outside a transaction")
        let saved = state
        do {
            return try body()
        } catch {
            if isIntact { state = saved }
            throw error
        }
    }
}

/// A pinned state of a dictionary store: the committed state when it is first read.
///
/// `@unchecked Sendable`: `state` and `taken` are only touched under `lock`.
final class DictionarySnapshot: StoreSnapshot, @unchecked Sendable {
    private let lock = NSLock()
    private var state: DictionaryState?
    private var taken: Int?
    private let current: @Sendable () -> (DictionaryState, Int)
    private let makeSession: (DictionaryState) -> DictionarySession

    init(current: @escaping @Sendable () -> (DictionaryState, Int), session: @escaping (DictionaryState) -> DictionarySession) {
        self.current = current
        self.makeSession = session
    }

    var commit: Int? { lock.withLock { taken } }

    private func begun() -> DictionaryState {
        if let state { return state }
        let (now, commit) = current()
        state = now
        taken = commit
        return now
    }

    func read<T>(_ body: (any StoreReadSession) throws -> T) throws -> T {
        try lock.withLock { try body(makeSession(begun())) }
    }

    func openKeyStream(_ fetch: StoreFetch) throws(FetchError) -> any StoreKeyStream {
        lock.lock()
        defer { lock.unlock() }
        return ListedKeyStream(keys: try makeSession(begun()).fetchKeys(fetch))
    }
}

/// Reader numbers lent one at a time (`PersistentStore.withPooledReader`).
///
/// `@unchecked Sendable`: `free` is only touched under `condition`'s lock.
final class ReaderSlots: @unchecked Sendable {
    private let condition = NSCondition()
    private var free: [Int]

    init(count: Int) { free = Array((0..<max(1, count)).reversed()) }

    func withSlot<T>(_ body: (Int) throws -> T) throws -> T {
        condition.lock()
        while free.isEmpty { condition.wait() }
        let slot = free.removeLast()
        condition.unlock()
        defer {
            condition.lock()
            free.append(slot)
            condition.signal()
            condition.unlock()
        }
        return try body(slot)
    }
}
