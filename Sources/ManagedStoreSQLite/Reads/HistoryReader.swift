import Foundation
import ManagedStoreCore

/// Reads the persistent history's rows on one connection: transactions after a token, and the
/// changes one object went through after a version.
struct HistoryReader {
    let connection: SQLiteConnection
    let model: ManagedObjectModel
    let storeIdentifier: UUID

    /// Up to `limit` transactions after `token`, oldest first, with their changes; with
    /// `entities`, only changes of objects of those entities, and only transactions that have some.
    func transactions(after token: PersistentHistoryToken, limit: Int, entities: Set<String>?) throws(StoreError) -> [PersistentHistoryTransaction] {
        var tokens: [Int64] = []
        if let entities {
            let names = entities.sorted()
            let marks = Array(repeating: "?", count: names.count).joined(separator: ", ")
            let sql = #"SELECT DISTINCT "token" FROM "_history_change" WHERE "token" > ? AND "entity" IN ("# + marks + #") ORDER BY "token" LIMIT ?"#
            try connection.withStatement(sql) { s throws(StoreError) in
                s.bind(token.rawValue, at: 1)
                for (i, name) in names.enumerated() { s.bindText(name, at: Int32(i + 2)) }
                s.bind(Int64(limit), at: Int32(names.count + 2))
                while try s.step() { tokens.append(s.int64(0)) }
            }
        } else {
            try connection.withStatement(#"SELECT "token" FROM "_history_transaction" WHERE "token" > ? ORDER BY "token" LIMIT ?"#) { s throws(StoreError) in
                s.bind(token.rawValue, at: 1)
                s.bind(Int64(limit), at: 2)
                while try s.step() { tokens.append(s.int64(0)) }
            }
        }
        return try tokens.map { token throws(StoreError) in try transaction(token, entities: entities) }
    }

    private func transaction(_ token: Int64, entities: Set<String>?) throws(StoreError) -> PersistentHistoryTransaction {
        let (timestamp, author, context) = try connection.withStatement(
            #"SELECT "timestamp", "author", "context" FROM "_history_transaction" WHERE "token" = ?"#) { s throws(StoreError) in
            s.bind(token, at: 1)
            guard try s.step() else { return (0.0, String?.none, String?.none) }
            return (s.double(0), s.isNull(1) ? nil : s.text(1), s.isNull(2) ? nil : s.text(2))
        }
        var changes: [PersistentHistoryChange] = []
        try connection.withStatement(
            #"SELECT "entity", "pk", "type", "version", "properties", "previous", "through" FROM "_history_change" WHERE "token" = ? ORDER BY "entity", "pk""#) { s throws(StoreError) in
            s.bind(token, at: 1)
            while try s.step() {
                let entityName = s.text(0)
                if let entities, !entities.contains(entityName) { continue }
                // A run of inserts (format 7) is one change per key, in key order.
                let first = s.int64(1)
                for pk in first...(s.isNull(6) ? first : max(first, s.int64(6))) {
                    if let change = change(from: s, pk: pk) { changes.append(change) }
                }
            }
        }
        return PersistentHistoryTransaction(token: PersistentHistoryToken(rawValue: token), timestamp: Date(timeIntervalSince1970: timestamp),
                                            author: author, contextName: context, changes: changes)
    }

    /// The change of the object keyed `pk` that a row of `_history_change` (columns entity, pk,
    /// type, version, properties, previous) holds (the row's own key, or one of its run of
    /// inserts); nil for a row of an entity or kind this model does not know.
    private func change(from s: SQLiteStatement, pk: Int64) -> PersistentHistoryChange? {
        guard let entity = model.resolvedEntity(named: s.text(0)), let type = HistoryCoding.type(s.int64(2)) else { return nil }
        let id = ManagedObjectID(storeIdentifier: storeIdentifier, entityName: entity.name, key: .permanent(pk))
        let previousMembers = s.isNull(5) ? [] : decodeJSON(s.text(5))?.objectMembers ?? []
        let properties: [String]
        switch type {
        case .insert: properties = entity.propertyNames
        case .delete: properties = []
        case .update:
            // Rows written since format 4 leave `properties` NULL: the names of `previous`, in
            // order, are the properties the change touched.
            properties = s.isNull(4) ? previousMembers.map(\.0) : (decodeJSON(s.text(4))?.arrayValue ?? []).compactMap(\.stringValue)
        }
        let previous = decodePrevious(previousMembers, entity: entity)
        return PersistentHistoryChange(objectID: id, changeType: type, updatedProperties: properties,
                                       version: s.isNull(3) ? nil : s.int64(3), previousValues: previous)
    }

    private func decodeJSON(_ text: String) -> JSONValue? { try? JSONParser(maxDepth: 8).parse(Array(text.utf8)) }

    func decodePrevious(_ members: [(String, JSONValue)], entity: Entity) -> [String: PersistentHistoryValue] {
        HistoryCoding.decodePrevious(members, entity: entity, model: model, storeIdentifier: storeIdentifier)
    }

    /// The changes of the object `entity`/`pk` recorded after it reached `version`, newest
    /// first; nil when the history no longer reaches that version (pruned, recorded before
    /// history was kept, or saved while it was off), so what changed since is unknown.
    ///
    /// Follows the object's chain (`StoreSchema.historyStatements`) from its newest change,
    /// back to the one that made `version`.
    func changes(ofObject entity: Entity, pk: Int64, after version: Int64) throws(StoreError) -> [PersistentHistoryChange]? {
        var next = try newestChange(ofObject: entity, pk: pk)
        var changes: [PersistentHistoryChange] = []
        while let token = next {
            // The object's own row, or the run of inserts (format 7) whose keys include it: the
            // last row of the entity in the transaction keyed at or below it.
            let found: (change: PersistentHistoryChange?, version: Int64?, prior: Int64?)? = try connection.withStatement(
                #"SELECT "entity", "pk", "type", "version", "properties", "previous", "prior", "through" FROM "_history_change" "#
                    + #"WHERE "token" = ?1 AND "entity" = ?2 AND "pk" <= ?3 ORDER BY "pk" DESC LIMIT 1"#
            ) { s throws(StoreError) in
                s.bind(token, at: 1)
                s.bindText(entity.name, at: 2)
                s.bind(pk, at: 3)
                guard try s.step(), s.int64(1) == pk || (!s.isNull(7) && s.int64(7) >= pk) else { return nil }
                return (change(from: s, pk: pk), s.isNull(3) ? nil : s.int64(3), s.isNull(6) ? nil : s.int64(6))
            }
            // A link to a pruned change: the history no longer reaches `version`.
            guard let found else { return nil }
            if found.version == version { return changes }
            if let change = found.change { changes.append(change) }
            next = found.prior
        }
        return nil
    }

    /// The token of the object's newest recorded change: its row's `_history`, or its
    /// deletion's when the row is gone; nil when none is known.
    private func newestChange(ofObject entity: Entity, pk: Int64) throws(StoreError) -> Int64? {
        let head: Int64?? = try connection.withStatement("SELECT \(StoreSchema.historyColumn) FROM \(entity.table) WHERE \"_pk\" = ?") { s throws(StoreError) in
            s.bind(pk, at: 1)
            return try s.step() ? .some(s.isNull(0) ? nil : s.int64(0)) : .none
        }
        if let head { return head }
        return try connection.withStatement(
            #"SELECT max("token") FROM "_history_change" WHERE "entity" = ? AND "pk" = ? AND "type" = 3"#) { s throws(StoreError) in
            s.bindText(entity.name, at: 1)
            s.bind(pk, at: 2)
            return try s.step() && !s.isNull(0) ? s.int64(0) : nil
        }
    }

    /// The highest token deleted by pruning (0 when none was).
    static func prunedThrough(_ connection: SQLiteConnection) throws(StoreError) -> Int64 {
        try connection.withStatement(#"SELECT "value" FROM "_metadata" WHERE "key" = 'history_pruned_through'"#) { s throws(StoreError) in
            try s.step() ? Int64(s.text(0)) ?? 0 : 0
        }
    }
}
