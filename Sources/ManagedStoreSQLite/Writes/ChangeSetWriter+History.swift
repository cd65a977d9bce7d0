import Foundation
import ManagedStoreCore

// Writing a save's history record (`HistoryDraft`) in the same transaction as its changes, so
// that a save and its record are committed together or not at all, and moving the heads of the
// changed objects' chains (their rows' `_history`) to it.

extension ChangeSetWriter {
    private static let insertTransactionSQL = PreparedSQL(
        #"INSERT INTO "_history_transaction" ("timestamp", "author", "context") VALUES (?, ?, ?)"#)
    /// Records inserted objects of one entity whose keys run from `pk` to `through` (NULL: one
    /// object): version 1, no properties or values before, and no `prior`, since an object
    /// being inserted has no row, so no chain, yet (format 7, `StoreSchema.historyChangeTable`).
    private static let recordInsertsSQL = PreparedSQL(
        #"INSERT INTO "_history_change" ("token", "entity", "pk", "type", "version", "through") VALUES (?1, ?2, ?3, ?4, 1, ?5)"#)

    /// Writes `draft` as one history transaction and returns its token. `keys` are the primary
    /// keys given to `changes.inserts` (the draft's inserts come first, in the same order).
    /// Runs before the save writes its rows: each change row takes its object's `_history` from
    /// the row as it still is (`EntityTable.recordChangeSQL`).
    func writeHistory(_ draft: HistoryDraft, _ changes: ChangeSet, keys: [Int64]) throws -> Int64 {
        try connection.withStatement(Self.insertTransactionSQL) { s throws(StoreError) in
            s.bind(.double(Date().timeIntervalSince1970), at: 1)
            s.bind(draft.author.map(AttributeValue.string) ?? .null, at: 2)
            s.bind(draft.contextName.map(AttributeValue.string) ?? .null, at: 3)
            try s.execute()
        }
        let token = connection.lastInsertRowID
        // Destinations may be objects inserted by this save: their temporary IDs become keys.
        var temporary: [ManagedObjectID: Int64] = [:]
        func key(_ id: ManagedObjectID) -> Int64? {
            if let pk = id.primaryKey { return pk }
            if temporary.isEmpty { temporary = Dictionary(zip(changes.inserts.map(\.id), keys), uniquingKeysWith: { a, _ in a }) }
            return temporary[id]
        }
        let versions = Dictionary(changes.updates.map { ($0.id, $0.baseVersion + 1) }, uniquingKeysWith: { a, _ in a })
        // One buffer for every row's values before, and the entity name and those values bound
        // without copies: this runs for every object of every save.
        var previous = JSONWriter(reservingCapacity: 256)
        var last: (entity: Int, statement: SQLiteStatement)?
        // Inserts whose keys follow one another, of one entity, waiting to be recorded as one
        // row: a save of many new objects writes a row or a few instead of one an object.
        var run: (entity: Entity, first: Int64, last: Int64)?
        func recordRun() throws {
            guard let pending = run else { return }
            run = nil
            try connection.withStatement(Self.recordInsertsSQL) { s throws(StoreError) in
                s.bind(token, at: 1)
                s.bindText(pending.entity.name, at: 2)
                s.bind(pending.first, at: 3)
                s.bind(Int64(HistoryCoding.typeCode(.insert)), at: 4)
                s.bind(pending.last > pending.first ? pending.last : nil, at: 5)
                try s.execute()
            }
        }
        var insertIndex = 0
        for entry in draft.entries {
            let pk: Int64?
            var version: Int64?
            switch entry.type {
            case .insert:
                pk = insertIndex < keys.count ? keys[insertIndex] : nil
                insertIndex += 1
                version = 1
                if let pk, entry.previous.isEmpty {
                    if let pending = run, pending.entity.index == entry.entity.index, pk == pending.last + 1 {
                        run?.last = pk
                    } else {
                        try recordRun()
                        run = (entry.entity, pk, pk)
                    }
                    continue
                }
            case .update:
                pk = entry.id.primaryKey
                version = versions[entry.id]
            case .delete:
                pk = entry.id.primaryKey
            }
            guard let pk else { continue }
            try recordRun()
            let statement: SQLiteStatement
            if let last, last.entity == entry.entity.index { statement = last.statement } else {
                statement = try connection.cachedStatement(connection.schema[entry.entity].recordChangeSQL)
            }
            last = (entry.entity.index, statement)
            statement.bind(token, at: 1)
            statement.bind(pk, at: 3)
            statement.bind(Int64(HistoryCoding.typeCode(entry.type)), at: 4)
            statement.bind(version, at: 5)
            // `properties` (6) stays NULL: the changed properties are the names of `previous`,
            // in order (`HistoryReader` reads them from there; rows of format 3 have both).
            statement.bind(nil, at: 6)
            previous.bytes.removeAll(keepingCapacity: true)
            if !entry.previous.isEmpty { HistoryCoding.writePrevious(entry.previous, of: entry.entity, model: model, key: key, into: &previous) }
            var name = entry.entity.name
            let stepped: Result<Void, StoreError> = name.withUTF8 { nameBytes in
                previous.bytes.withUnsafeBufferPointer { previousBytes in
                    statement.bindBorrowedText(nameBytes, at: 2)
                    if previousBytes.isEmpty { statement.bind(nil, at: 7) } else { statement.bindBorrowedText(previousBytes, at: 7) }
                    // Reset (and so unbind) before the borrowed bytes go, whatever the step did.
                    defer { statement.reset(clearingBindings: true) }
                    return Result { () throws(StoreError) in while try statement.step() {} }
                }
            }
            try stepped.get()
        }
        try recordRun()
        return token
    }

    /// Sets `_history` of the objects the record lists as changed whose rows the save wrote
    /// nothing else in: their change was to links stored elsewhere (a join table, the other
    /// side's foreign key).
    func writeLinkOnlyHeads(_ heads: HistoryHeads) throws {
        guard case let .recorded(token, _, linkOnly) = heads else { return }
        for (entity, pk) in linkOnly {
            try connection.withStatement(connection.schema[entity].setHistorySQL) { s throws(StoreError) in
                s.bind(token, at: 1)
                s.bind(pk, at: 2)
                try s.execute()
            }
        }
    }
}

/// What a save writes in its rows' `_history` column: the head of each object's chain of
/// changes (`StoreSchema.historyStatements`).
enum HistoryHeads {
    /// The store records no history: an updated row's `_history` becomes NULL, since what this
    /// save changed is nowhere, and a later conflict must not take the older chain for complete.
    case off
    /// Nothing recorded (a save that changed nothing): no head moves.
    case unchanged
    /// Recorded under `token`: the rows of the objects in `updated` (the record's updates that
    /// the save also writes a row for) and of `linkOnly` (those it writes no row for) take it.
    case recorded(token: Int64, updated: Set<ManagedObjectID>, linkOnly: [(Entity, Int64)])

    init(_ changes: ChangeSet, token: Int64?) {
        guard let draft = changes.history else { self = .off; return }
        guard let token else { self = .unchanged; return }
        var updated: Set<ManagedObjectID> = []
        var linkOnly: [(Entity, Int64)] = []
        let written = changes.updates.isEmpty ? [] : Set(changes.updates.map(\.id))
        for entry in draft.entries where entry.type == .update {
            guard let pk = entry.id.primaryKey else { continue }
            if written.contains(entry.id) { updated.insert(entry.id) } else { linkOnly.append((entry.entity, pk)) }
        }
        self = .recorded(token: token, updated: updated, linkOnly: linkOnly)
    }

    /// What the UPDATE of `id`'s row sets `_history` to: nil leaves it as it is.
    func head(of id: ManagedObjectID) -> AttributeValue? {
        switch self {
        case .off: return .null
        case .unchanged: return nil
        case let .recorded(token, updated, _): return updated.contains(id) ? .integer(token) : nil
        }
    }
}
