import Foundation
import ManagedStoreCore

// The persistent history in PostgreSQL: one row per recorded save (its token is the store's
// counter, taken under the counter's row lock, so tokens are handed out in commit order across
// every server), one row per change, and an object's chain of changes read back by `seq`.

extension PGSession {
    private static let changeColumns = "token, entity, pk, type, version, properties, previous, through, seq"

    /// The keys a change row selected with `changeColumns` is about: its own, or its run's.
    private func keys(_ result: PGResult, _ i: Int) -> ClosedRange<Int64>? {
        guard let first = result.int64(i, 2) else { return nil }
        return first...max(first, result.int64(i, 7) ?? first)
    }

    /// The change of the object keyed `pk` (the row's own key, or one of its run's) that a row
    /// selected with `changeColumns` holds.
    private func change(_ result: PGResult, _ i: Int, pk: Int64) -> PersistentHistoryChange? {
        guard let entityName = result.text(i, 1), let entity = model.resolvedEntity(named: entityName),
              let type = result.int64(i, 3).flatMap(HistoryCoding.type) else { return nil }
        let properties = (try? JSONParser(maxDepth: 4).parse(result.text(i, 5) ?? "[]"))?.arrayValue?.compactMap(\.stringValue) ?? []
        var previous: [String: PersistentHistoryValue] = [:]
        if let text = result.text(i, 6), case .object(let members)? = try? JSONParser(maxDepth: 8).parse(text) {
            previous = HistoryCoding.decodePrevious(members, entity: entity, model: model, storeIdentifier: storeIdentifier)
        }
        return PersistentHistoryChange(objectID: id(entity, pk), changeType: type, updatedProperties: properties,
                                       version: result.int64(i, 4), previousValues: previous)
    }

    func historyChanges(ofObject entity: Entity, key: Int64, after version: Int64) throws(StoreError) -> [PersistentHistoryChange]? {
        let pruned = try prunedThrough()
        // The object's own rows, and the run of inserts its key may be in: runs do not overlap
        // (a key is given once), so that is the nearest run starting at or below the key.
        let result = try connection.execute("""
            SELECT \(Self.changeColumns) FROM _managedstore_history_change WHERE entity = $1 AND pk = $2
            UNION ALL
            (SELECT \(Self.changeColumns) FROM _managedstore_history_change
             WHERE entity = $1 AND through IS NOT NULL AND pk < $2 ORDER BY pk DESC LIMIT 1)
            ORDER BY seq DESC
            """, [entity.name, String(key)])
        var changes: [PersistentHistoryChange] = []
        for i in 0..<result.rowCount where keys(result, i)?.contains(key) == true {
            // A save that recorded nothing, or one pruned since: what changed there is unknown.
            guard let token = result.int64(i, 0), token > pruned else { return nil }
            if result.int64(i, 4) == version { return changes }
            if let change = change(result, i, pk: key) { changes.append(change) }
        }
        return nil
    }

    func historyTransactions(after token: PersistentHistoryToken, limit: Int, entities: Set<String>?) throws(StoreError) -> [PersistentHistoryTransaction] {
        var found: [PersistentHistoryTransaction] = []
        var after = token.rawValue
        // With an entity filter some saves list nothing: read on, a page at a time, until
        // `limit` saves are found or the history ends.
        while found.count < limit {
            let page = try connection.execute("""
                SELECT token, timestamp, author, context FROM _managedstore_history_transaction
                WHERE token > $1 ORDER BY token LIMIT $2
                """, [String(after), String(max(1, limit))])
            guard page.rowCount > 0 else { break }
            let tokens = (0..<page.rowCount).compactMap { page.int64($0, 0) }
            let rows = try connection.execute("""
                SELECT \(Self.changeColumns) FROM _managedstore_history_change
                WHERE token = ANY($1::bigint[]) ORDER BY token, entity, pk
                """, [PGValues.keyArray(tokens)])
            var changes: [Int64: [PersistentHistoryChange]] = [:]
            for i in 0..<rows.rowCount {
                guard let token = rows.int64(i, 0), let keys = keys(rows, i) else { continue }
                if let entities, let entity = rows.text(i, 1).flatMap(model.resolvedEntity(named:)), !entities.contains(entity.name) { continue }
                // A run of inserts is one change a key, in key order.
                for pk in keys {
                    if let change = change(rows, i, pk: pk) { changes[token, default: []].append(change) }
                }
            }
            for i in 0..<page.rowCount where found.count < limit {
                guard let token = page.int64(i, 0) else { continue }
                after = token
                let listed = changes[token] ?? []
                if entities != nil && listed.isEmpty { continue }
                found.append(PersistentHistoryTransaction(
                    token: PersistentHistoryToken(rawValue: token),
                    timestamp: Date(timeIntervalSince1970: Double(page.text(i, 1) ?? "") ?? 0),
                    author: page.text(i, 2), contextName: page.text(i, 3), changes: listed))
            }
            if page.rowCount < max(1, limit) { break }
        }
        return found
    }

    func prunedThrough() throws(StoreError) -> Int64 {
        try connection.execute("SELECT pruned_through FROM _managedstore_store").int64(0, 0) ?? 0
    }

    func lastHistoryToken() throws(StoreError) -> PersistentHistoryToken {
        let result = try connection.execute("""
            SELECT COALESCE((SELECT max(token) FROM _managedstore_history_transaction), pruned_through) FROM _managedstore_store
            """)
        return PersistentHistoryToken(rawValue: result.int64(0, 0) ?? 0)
    }

    func oldestHistoryToken() throws(StoreError) -> PersistentHistoryToken { PersistentHistoryToken(rawValue: try prunedThrough()) }

    func historyTransactionCount() throws(StoreError) -> Int {
        Int(try connection.execute("SELECT count(*) FROM _managedstore_history_transaction").int64(0, 0) ?? 0)
    }

    func newestHistoryToken(before date: Date, amongOldest limit: Int?) throws(StoreError) -> PersistentHistoryToken? {
        let window = limit.map { "LIMIT \(max(1, $0))" } ?? ""
        let result = try connection.execute("""
            SELECT token FROM (SELECT token, timestamp FROM _managedstore_history_transaction ORDER BY token \(window)) AS oldest
            WHERE timestamp < $1 ORDER BY token DESC LIMIT 1
            """, [PGValues.doubleText(date.timeIntervalSince1970)])
        return result.int64(0, 0).map(PersistentHistoryToken.init(rawValue:))
    }

    func deleteHistory(before token: PersistentHistoryToken) throws(StoreError) -> Int {
        // The UPDATE below reads the token counter.
        writeCounters()
        let deleted = try connection.execute("DELETE FROM _managedstore_history_transaction WHERE token < $1", [String(token.rawValue)]).affectedRows
        try connection.execute("DELETE FROM _managedstore_history_change WHERE token < $1", [String(token.rawValue)])
        // The newest pruned token: every save before `token`, but never past the newest save.
        try connection.execute("""
            UPDATE _managedstore_store SET pruned_through = GREATEST(pruned_through, LEAST($1 - 1, last_token))
            """, [String(token.rawValue)])
        return deleted
    }

    // MARK: Recording

    /// Records `draft` as one save and returns its token. `key` gives each object its primary key
    /// (inserted objects' temporary IDs included).
    func recordHistory(_ draft: HistoryDraft, _ changes: ChangeSet, key: (ManagedObjectID) -> Int64?) throws(StoreError) -> Int64 {
        // The counter's row stays locked until this transaction ends: a save of another server
        // that records history waits, so tokens commit in their order and a reader of the
        // change feed never sees a token before a smaller one that is still to commit.
        // Once locked, the counter is counted on in memory (`PGGroupCounters`).
        let timestamp = PGValues.doubleText(Date().timeIntervalSince1970)
        let token: Int64
        if isWriter, let next = counters.nextToken() {
            token = next
            connection.queue("""
                INSERT INTO _managedstore_history_transaction (token, timestamp, author, context) VALUES ($1, $2, $3, $4)
                """, [String(token), timestamp, draft.author, draft.contextName])
        } else {
            let counted = try connection.execute("""
                WITH counter AS (UPDATE _managedstore_store SET last_token = last_token + 1 WHERE id = 1 RETURNING last_token)
                INSERT INTO _managedstore_history_transaction (token, timestamp, author, context)
                SELECT last_token, $1::double precision, $2::text, $3::text FROM counter RETURNING token
                """, [timestamp, draft.author, draft.contextName])
            guard let counted = counted.int64(0, 0) else {
                throw .engine(code: -1, message: "the store's row is missing", sql: nil)
            }
            token = counted
            if isWriter { counters.lockedToken(token) }
        }
        let versions = Dictionary(changes.updates.map { ($0.id, $0.baseVersion + 1) }, uniquingKeysWith: { a, _ in a })
        var rows = HistoryChangeRows()
        // Inserts of one entity whose keys follow one another are one row, a run (`through`):
        // an import's thousand new objects are a row or a few, not a thousand. What a run's
        // rows would say is the same for each of its objects but the key (version 1, every
        // property, nothing before), so nothing is lost.
        var run: (entity: Entity, first: Int64, last: Int64)?
        func recordRun() {
            guard let pending = run else { return }
            run = nil
            rows.append(entity: pending.entity.name, pk: pending.first, through: pending.last > pending.first ? pending.last : nil,
                        type: HistoryCoding.typeCode(.insert), version: 1, properties: Self.propertyList(pending.entity.propertyNames), previous: nil)
        }
        for entry in draft.entries {
            guard let pk = key(entry.id) else { continue }
            if entry.type == .insert, entry.previous.isEmpty {
                if let pending = run, pending.entity === entry.entity, pk == pending.last + 1 {
                    run?.last = pk
                } else {
                    recordRun()
                    run = (entry.entity, pk, pk)
                }
                continue
            }
            recordRun()
            let version: Int64?
            let properties: [String]
            switch entry.type {
            case .insert: version = 1; properties = entry.entity.propertyNames
            case .update: version = versions[entry.id]; properties = entry.previous.map(\.name)
            case .delete: version = nil; properties = []
            }
            var previous = JSONWriter(reservingCapacity: 128)
            if !entry.previous.isEmpty { HistoryCoding.writePrevious(entry.previous, of: entry.entity, model: model, key: key, into: &previous) }
            rows.append(entity: entry.entity.name, pk: pk, through: nil, type: HistoryCoding.typeCode(entry.type), version: version,
                        properties: Self.propertyList(properties),
                        previous: entry.previous.isEmpty ? nil : String(decoding: previous.bytes, as: UTF8.self))
        }
        recordRun()
        insert(rows, token: token)
        return token
    }

    /// Property names as the JSON array a change row's `properties` holds.
    private static func propertyList(_ names: [String]) -> String {
        var list = JSONWriter(reservingCapacity: 64)
        list.bytes.append(UInt8(ascii: "["))
        for (i, name) in names.enumerated() {
            if i > 0 { list.bytes.append(UInt8(ascii: ",")) }
            list.writeString(name)
        }
        list.bytes.append(UInt8(ascii: "]"))
        return String(decoding: list.bytes, as: UTF8.self)
    }

    /// A save that records nothing: the objects it wrote have no known history from here on.
    func breakChains(_ objects: [(Entity, Int64)]) {
        var rows = HistoryChangeRows()
        for (entity, pk) in objects { rows.append(entity: entity.name, pk: pk, through: nil, type: 2, version: nil, properties: "[]", previous: nil) }
        insert(rows, token: nil)
    }

    /// The columns of a save's history changes, row by row.
    struct HistoryChangeRows {
        var entities: [String?] = [], keys: [String?] = [], throughs: [String?] = [], types: [String?] = [], versions: [String?] = []
        var properties: [String?] = [], previous: [String?] = []

        mutating func append(entity: String, pk: Int64, through: Int64?, type: Int, version: Int64?, properties names: String, previous old: String?) {
            entities.append(entity)
            keys.append(String(pk))
            throughs.append(through.map(String.init))
            types.append(String(type))
            versions.append(version.map(String.init))
            properties.append(names)
            previous.append(old)
        }
    }

    /// `rows` under `token`: one row's values as parameters, or several as one array a column,
    /// in their order (`seq` numbers them in it). Queued: sent with the save's next statement.
    private func insert(_ rows: HistoryChangeRows, token: Int64?) {
        switch rows.keys.count {
        case 0:
            return
        case 1:
            connection.queue("""
                INSERT INTO _managedstore_history_change (token, entity, pk, through, type, version, properties, previous)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
                """, [token.map(String.init), rows.entities[0], rows.keys[0], rows.throughs[0], rows.types[0], rows.versions[0], rows.properties[0], rows.previous[0]])
        default:
            connection.queue("""
                INSERT INTO _managedstore_history_change (token, entity, pk, through, type, version, properties, previous)
                SELECT $1::bigint, u.entity, u.pk, u.through, u.type, u.version, u.properties, u.previous
                FROM unnest($2::text[], $3::bigint[], $4::bigint[], $5::smallint[], $6::bigint[], $7::text[], $8::text[]) WITH ORDINALITY
                    AS u(entity, pk, through, type, version, properties, previous, n)
                ORDER BY u.n
                """, [token.map(String.init)] + [rows.entities, rows.keys, rows.throughs, rows.types, rows.versions, rows.properties, rows.previous].map(PGValues.quotedArray))
        }
    }
}
