import Foundation

// Writing a save's history record (`HistoryDraft`) in the same transaction as its changes, so
// that a save and its record are committed together or not at all.

extension ChangeSetWriter {
    private static let insertTransactionSQL = PreparedSQL(
        #"INSERT INTO "_history_transaction" ("timestamp", "author", "context") VALUES (?, ?, ?)"#)
    private static let insertChangeSQL = PreparedSQL(
        #"INSERT INTO "_history_change" ("token", "entity", "pk", "type", "version", "properties", "previous") VALUES (?, ?, ?, ?, ?, ?, ?)"#)

    /// Writes `draft` as one history transaction and returns its token. `keys` are the primary
    /// keys given to `changes.inserts` (the draft's inserts come first, in the same order).
    func writeHistory(_ draft: HistoryDraft, _ changes: ChangeSet, keys: [Int64]) throws -> PersistentHistoryToken {
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
        let statement = try connection.cachedStatement(Self.insertChangeSQL)
        var insertIndex = 0
        for entry in draft.entries {
            let pk: Int64?
            var version: Int64?
            switch entry.type {
            case .insert:
                pk = insertIndex < keys.count ? keys[insertIndex] : nil
                insertIndex += 1
                version = 1
            case .update:
                pk = entry.id.primaryKey
                version = versions[entry.id]
            case .delete:
                pk = entry.id.primaryKey
            }
            guard let pk else { continue }
            defer { statement.reset(clearingBindings: false) }
            statement.bind(token, at: 1)
            statement.bindText(entry.entity.name, at: 2)
            statement.bind(pk, at: 3)
            statement.bind(Int64(HistoryCoding.typeCode(entry.type)), at: 4)
            statement.bind(version, at: 5)
            statement.bind(entry.properties.isEmpty ? .null : .string(HistoryCoding.properties(entry.properties)), at: 6)
            statement.bind(entry.previous.isEmpty ? .null : .string(HistoryCoding.previous(entry.previous, key: key)), at: 7)
            while try statement.step() {}
        }
        return PersistentHistoryToken(rawValue: token)
    }
}

/// How history rows hold what a change touched: property names as a JSON array, values before
/// as a JSON object (attributes in their JSON form, relationships as `{"+": [keys], "-": [keys]}`,
/// keys of the destination entity).
enum HistoryCoding {
    static func typeCode(_ type: PersistentHistoryChangeType) -> Int {
        switch type {
        case .insert: return 1
        case .update: return 2
        case .delete: return 3
        }
    }

    static func type(_ code: Int64) -> PersistentHistoryChangeType? {
        switch code {
        case 1: return .insert
        case 2: return .update
        case 3: return .delete
        default: return nil
        }
    }

    static func properties(_ names: [String]) -> String {
        var writer = JSONWriter(reservingCapacity: 16 * names.count)
        writer.write(.array(names.map(JSONValue.string)))
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    static func previous(_ values: [(name: String, value: HistoryDraft.Previous)], key: (ManagedObjectID) -> Int64?) -> String {
        var members: [(String, JSONValue)] = []
        for (name, value) in values {
            switch value {
            case .attribute(let attribute):
                members.append((name, attribute.jsonValue))
            case let .destinations(added, removed):
                let plus = JSONValue.array(added.compactMap(key).map { .number(String($0)) })
                let minus = JSONValue.array(removed.compactMap(key).map { .number(String($0)) })
                members.append((name, .object([("+", plus), ("-", minus)])))
            }
        }
        var writer = JSONWriter(reservingCapacity: 64)
        writer.write(.object(members))
        return String(decoding: writer.bytes, as: UTF8.self)
    }
}
