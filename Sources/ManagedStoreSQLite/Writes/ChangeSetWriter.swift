import Foundation
import ManagedStoreCore

/// Writes one change set inside the writer's open transaction, after checking everything that
/// can only be checked against the store: versions (optimistic locking), that referenced
/// objects exist, and uniqueness constraints. Any refusal throws and the caller rolls back,
/// so a refused save writes nothing.
struct ChangeSetWriter {
    let connection: SQLiteConnection
    let model: ManagedObjectModel
    let storeIdentifier: UUID

    /// Writes `changes` (and its history record).
    func write(_ changes: ChangeSet) throws -> WrittenChanges {
        let versionConflicts = try checkVersions(changes)
        let keys = try assignPrimaryKeys(changes.inserts)
        let assigned = zip(changes.inserts, keys).map { insert, key in
            ManagedObjectID(storeIdentifier: storeIdentifier, entityName: insert.entity.name, key: .permanent(key))
        }
        // Mapping temporary IDs matters only when something refers to another object.
        let refers = changes.refersToObjects
        let permanentIDs: [ManagedObjectID: ManagedObjectID] = refers
            ? Dictionary(zip(changes.inserts.map(\.id), assigned), uniquingKeysWith: { a, _ in a }) : [:]
        func resolve(_ id: ManagedObjectID) -> ManagedObjectID { permanentIDs[id] ?? id }
        let constraintConflicts = try checkUniqueness(changes)
        if !versionConflicts.isEmpty || !constraintConflicts.isEmpty {
            throw ChangeSetRejection.conflicts(versions: versionConflicts, constraints: constraintConflicts)
        }
        try checkReferences(changes, resolve: resolve)
        // The history record goes first: each change row reads the token of its object's change
        // before (`prior`) from the row, before the row is written; the rows then take the new
        // token as their `_history`. A save that changed nothing (it only checked base
        // versions) records no transaction: the history lists changes, and a reader would find
        // an empty one.
        let token = try changes.history.flatMap { draft in draft.entries.isEmpty ? nil : try writeHistory(draft, changes, keys: keys) }
        let heads = HistoryHeads(changes, token: token)
        try writeDeletes(changes.deletes)
        try writeUpdates(changes.updates, heads: heads, resolve: resolve)
        try writeInserts(changes.inserts, keys: keys, token: token, resolve: resolve)
        try writeLinks(changes, resolve: resolve)
        try writeOrderings(changes.orderings, resolve: resolve)
        try writeLinkOnlyHeads(heads)
        return WrittenChanges(insertedIDs: assigned, token: token.map(PersistentHistoryToken.init(rawValue:)))
    }

    // MARK: Checks

    private func checkVersions(_ changes: ChangeSet) throws -> [(id: ManagedObjectID, row: StoredRow?)] {
        var conflicts: [(id: ManagedObjectID, row: StoredRow?)] = []
        let based = changes.updates.map { ($0.id, $0.entity, $0.baseVersion) } + changes.deletes.map { ($0.id, $0.entity, $0.baseVersion) }
            + changes.versionChecks.map { ($0.id, $0.entity, $0.baseVersion) }
        for (id, entity, baseVersion) in based {
            guard let pk = id.primaryKey else { continue }
            let stored = try connection.scalarInt("SELECT \"_version\" FROM \(entity.table) WHERE \"_pk\" = ?", [.integer(pk)])
            if stored != baseVersion {
                conflicts.append((id, stored == nil ? nil : try RowSQL.loadRow(connection, entity: entity, pk: pk)))
            }
        }
        return conflicts
    }

    /// The primary key of each insert (in order): its own if it has a permanent ID already,
    /// else the next key of its entity from `_sequence`, handed out in insertion order.
    private func assignPrimaryKeys(_ inserts: [ChangeSet.Insert]) throws -> [Int64] {
        var counts = [Int](repeating: 0, count: model.schema.count)
        for insert in inserts where insert.id.isTemporaryID { counts[insert.entity.index] += 1 }
        var next = [Int64](repeating: 0, count: model.schema.count)
        for (entityIndex, count) in counts.enumerated() where count > 0 {
            next[entityIndex] = try Self.allocatePrimaryKeys(connection, entity: model.schema[entityIndex], count: count)
        }
        return inserts.map { insert in
            if let own = insert.id.primaryKey { return own }
            defer { next[insert.entity.index] += 1 }
            return next[insert.entity.index]
        }
    }

    /// Reserves `count` primary keys for `entity` and returns the first. Keys are never reused.
    /// Keys come from the sequence of the entity's hierarchy root, so that a key names one
    /// object across the hierarchy (`Entity.keyRoot`).
    static func allocatePrimaryKeys(_ connection: SQLiteConnection, entity: Entity, count: Int) throws(StoreError) -> Int64 {
        let root = connection.model.schema[entity.keyRoot]
        func read(_ s: SQLiteStatement) throws(StoreError) -> Int64? {
            s.bindText(root.name, at: 1)
            return try s.step() && !s.isNull(0) ? s.int64(0) : nil
        }
        let last = try entity.keySharers.count == 1 ? connection.withStatement(readSequenceSQL, read)
            : connection.withStatement(readSharedSequenceSQL(entity, connection.model), read)
        // An UPDATE changes the row in place; the hierarchy's first save adds it.
        let rootHasRow = try entity.keySharers.count == 1 ? last != nil : connection.withStatement(readSequenceSQL) { s throws(StoreError) in
            s.bindText(root.name, at: 1)
            return try s.step()
        }
        try connection.withStatement(rootHasRow ? updateSequenceSQL : insertSequenceSQL) { s throws(StoreError) in
            s.bindText(root.name, at: 1)
            s.bind((last ?? 0) + Int64(count), at: 2)
            try s.execute()
        }
        return (last ?? 0) + 1
    }

    private static let readSequenceSQL = PreparedSQL(#"SELECT "max" FROM "_sequence" WHERE "entity" = ?"#)
    /// The largest of the hierarchy's sequences: stores made before keys were shared kept one
    /// per entity, and a key must not repeat any of them. (`?1`, the root, is among them.)
    /// Entity names are letters, digits and '_' (`ManagedObjectModel.nameProblem`): safe to quote as literals.
    private static func readSharedSequenceSQL(_ entity: Entity, _ model: ManagedObjectModel) -> String {
        let names = entity.keySharers.dropFirst().map { "'\(model.schema[$0].name)'" }
        return #"SELECT max("max") FROM "_sequence" WHERE "entity" = ?1 OR "entity" IN ("# + names.joined(separator: ", ") + ")"
    }
    private static let updateSequenceSQL = PreparedSQL(#"UPDATE "_sequence" SET "max" = ?2 WHERE "entity" = ?1"#)
    private static let insertSequenceSQL = PreparedSQL(#"INSERT INTO "_sequence" ("entity", "max") VALUES (?1, ?2)"#)

    private func checkReferences(_ changes: ChangeSet, resolve: (ManagedObjectID) -> ManagedObjectID) throws {
        // Nothing refers to anything (a plain bulk insert): nothing to check.
        guard changes.refersToObjects else { return }
        let deleted = Set(changes.deletes.map(\.id))
        let inserted = Set(changes.inserts.map { resolve($0.id) })
        var known: [ManagedObjectID: Bool] = [:]
        var invalid: [(owner: ManagedObjectID, relationship: String, target: ManagedObjectID)] = []
        func check(_ owner: ManagedObjectID, _ relationship: String, _ target: ManagedObjectID) throws {
            let target = resolve(target)
            if inserted.contains(target) { return }
            var ok = false
            if !deleted.contains(target), let pk = target.primaryKey, let entity = model.resolvedEntity(named: target.entityName) {
                if let cached = known[target] { ok = cached } else {
                    ok = try RowSQL.exists(connection, entity: entity, pk: pk)
                    known[target] = ok
                }
            }
            if !ok { invalid.append((owner, relationship, target)) }
        }
        for insert in changes.inserts {
            for position in insert.entity.foreignKeyRelationships.indices {
                guard let target = insert.foreignKey(at: position) else { continue }
                try check(insert.id, insert.entity.relationships[insert.entity.foreignKeyRelationships[position]].name, target)
            }
        }
        for update in changes.updates {
            for position in update.changedForeignKeys {
                guard let target = update.foreignKeys[position] else { continue }
                try check(update.id, update.entity.relationships[update.entity.foreignKeyRelationships[position]].name, target)
            }
        }
        for link in changes.addedLinks {
            try check(link.a, link.relationship, link.b)
            try check(link.b, link.relationship, link.a)
        }
        if !invalid.isEmpty { throw ChangeSetRejection.invalidReferences(invalid) }
    }

    /// Every uniqueness constraint of every inserted or updated object, against the store and
    /// against the other objects of this save (`UniquenessCheck`, as every store checks them).
    /// A null in a constraint's values never conflicts, as in SQL.
    private func checkUniqueness(_ changes: ChangeSet) throws -> [ConstraintConflict] {
        let check = UniquenessCheck(changes)
        var conflicts: [ConstraintConflict] = []
        for group in check.groups {
            let owner = model.schema[group.entity]
            let constraint = owner.uniquenessConstraints[group.constraint]
            // Every kind's table holds the constraint's columns at the same positions; one
            // writer at a time, so checking them in turn is as good as one index.
            var stored: [ManagedObjectID] = []
            for kind in owner.kinds.map({ model.schema[$0] }) {
                let condition = constraint.map { "\(quoteIdentifier(kind.attributes[$0].name)) = ?" }.joined(separator: " AND ")
                stored += try connection.withStatement("SELECT \"_pk\" FROM \(kind.table) WHERE \(condition)") { s throws(StoreError) in
                    for (i, value) in group.values.enumerated() { s.bind(value, at: Int32(i + 1)) }
                    var pks: [Int64] = []
                    while try s.step() { pks.append(s.int64(0)) }
                    return pks
                }.map { ManagedObjectID(storeIdentifier: storeIdentifier, entityName: kind.name, key: .permanent($0)) }
            }
            if let conflict = check.conflict(group, stored: stored, model: model) { conflicts.append(conflict) }
        }
        return conflicts
    }

    // MARK: Writing

    private func writeDeletes(_ deletes: [ChangeSet.Delete]) throws {
        for delete in deletes {
            guard let pk = delete.id.primaryKey else { continue }
            try connection.withStatement("DELETE FROM \(delete.entity.table) WHERE \"_pk\" = ?") { s throws(StoreError) in
                s.bind(pk, at: 1)
                try s.execute()
            }
            // The links of a deleted object go with it, whatever the delete rule.
            for relationship in delete.entity.relationships {
                guard case let .joinTable(table, ownColumn, _) = relationship.sql else { continue }
                try connection.withStatement("DELETE FROM \(table) WHERE \(ownColumn) = ?") { s throws(StoreError) in
                    s.bind(pk, at: 1)
                    try s.execute()
                }
            }
        }
    }

    private func writeUpdates(_ updates: [ChangeSet.Update], heads: HistoryHeads, resolve: (ManagedObjectID) -> ManagedObjectID) throws {
        try clearSwappedUniqueValues(updates)
        for update in updates {
            guard let pk = update.id.primaryKey else { continue }
            let entity = update.entity
            var assignments = update.changedAttributes.map { "\(quoteIdentifier(entity.attributes[$0].name)) = ?" }
            assignments += update.changedForeignKeys.map {
                "\(quoteIdentifier(entity.relationships[entity.foreignKeyRelationships[$0]].name)) = ?"
            }
            let head = heads.head(of: update.id)
            if head != nil { assignments.append("\(StoreSchema.historyColumn) = ?") }
            assignments.append("\"_version\" = \"_version\" + 1")
            let sql = "UPDATE \(entity.table) SET \(assignments.joined(separator: ", ")) WHERE \"_pk\" = ?"
            // `do throws(StoreError)` and a test inside the catch: a `catch where` clause on a
            // typed-throws call crashed the Swift 6.3.1 compiler.
            do throws(StoreError) {
                try connection.withStatement(sql) { s throws(StoreError) in
                    var index: Int32 = 1
                    for a in update.changedAttributes { s.bind(update.attributes[a], at: index); index += 1 }
                    for f in update.changedForeignKeys { s.bind(update.foreignKeys[f].flatMap { resolve($0).primaryKey }, at: index); index += 1 }
                    if let head { s.bind(head, at: index); index += 1 }
                    s.bind(pk, at: index)
                    try s.execute()
                }
            } catch {
                guard error.isUniquenessViolation else { throw error }
                throw try uniquenessRejection(entity, id: update.id, attributes: update.attributes)
            }
        }
    }

    /// The conflict SQLite found when it refused a row of `entity` for a unique index: the
    /// constraint, values and stored objects it collides with. `checkUniqueness` finds every
    /// such conflict first; this is the safety net, so that a refusal of SQLite's own is still
    /// the same uniqueness conflict, never a store failure.
    private func uniquenessRejection(_ entity: Entity, id: ManagedObjectID, attributes: [AttributeValue]) throws -> ChangeSetRejection {
        var conflicts: [ConstraintConflict] = []
        for constraint in entity.uniquenessConstraints {
            let values = constraint.map { attributes[$0] }
            if values.contains(where: \.isNull) { continue }
            let condition = constraint.map { "\(quoteIdentifier(entity.attributes[$0].name)) = ?" }.joined(separator: " AND ")
            let stored: [Int64] = try connection.withStatement("SELECT \"_pk\" FROM \(entity.table) WHERE \(condition) AND \"_pk\" IS NOT ?") { s throws(StoreError) in
                for (i, value) in values.enumerated() { s.bind(value, at: Int32(i + 1)) }
                s.bind(id.primaryKey, at: Int32(values.count + 1))
                var pks: [Int64] = []
                while try s.step() { pks.append(s.int64(0)) }
                return pks
            }
            guard !stored.isEmpty else { continue }
            conflicts.append(ConstraintConflict(
                entityName: entity.name, constraint: constraint.map { entity.attributes[$0].name },
                values: Dictionary(uniqueKeysWithValues: constraint.map { (entity.attributes[$0].name, attributes[$0]) }),
                conflictingObjects: stored.map { ManagedObjectID(storeIdentifier: storeIdentifier, entityName: entity.name, key: .permanent($0)) },
                objects: [id]))
        }
        return .conflicts(versions: [], constraints: conflicts)
    }

    /// SQLite checks a unique index row by row, as each UPDATE runs: two objects that swap
    /// unique values (or pass one along a chain) collide half way although the save as a whole
    /// is unique, which `checkUniqueness` established. So when several updates of one entity
    /// change attributes of its uniqueness constraints, those columns are first set to NULL
    /// (which never conflicts) in every such row; the updates then write the final values.
    private func clearSwappedUniqueValues(_ updates: [ChangeSet.Update]) throws {
        var changingUnique: [Int: [Int]] = [:]  // entity index -> positions in `updates`
        for (position, update) in updates.enumerated() where !update.entity.uniquenessConstraints.isEmpty {
            let constrained = Set(update.entity.uniquenessConstraints.joined())
            if update.changedAttributes.contains(where: constrained.contains) { changingUnique[update.entity.index, default: []].append(position) }
        }
        for (_, positions) in changingUnique where positions.count > 1 {
            for position in positions {
                let update = updates[position]
                guard let pk = update.id.primaryKey else { continue }
                let constrained = Set(update.entity.uniquenessConstraints.joined())
                let columns = update.changedAttributes.filter(constrained.contains)
                    .map { "\(quoteIdentifier(update.entity.attributes[$0].name)) = NULL" }
                try connection.withStatement("UPDATE \(update.entity.table) SET \(columns.joined(separator: ", ")) WHERE \"_pk\" = ?") { s throws(StoreError) in
                    s.bind(pk, at: 1)
                    try s.execute()
                }
            }
        }
    }

    /// Inserts every new row under the key `keys` holds for it (the one `assignPrimaryKeys`
    /// allocated), always bound: a row inserted without its key would take SQLite's
    /// max(rowid)+1, which repeats a deleted key while `_sequence` hands out the next one, and
    /// the ID answered would name another object.
    private func writeInserts(_ inserts: [ChangeSet.Insert], keys: [Int64], token: Int64?,
                              resolve: (ManagedObjectID) -> ManagedObjectID) throws {
        var statements: [Int: SQLiteStatement] = [:]
        var last: (entity: Int, statement: SQLiteStatement)?
        // By index, so that no insert is copied (this loop runs once per object of a save).
        for i in inserts.indices {
            let entity = inserts[i].entity
            let statement: SQLiteStatement
            if let last, last.entity == entity.index { statement = last.statement  // a run of one entity: the usual case
            } else if let cached = statements[entity.index] { statement = cached } else {
                statement = try connection.cachedStatement(connection.schema[entity].insertRowSQL)
                statements[entity.index] = statement
            }
            last = (entity.index, statement)
            // Every parameter is bound below, so the old bindings need no clearing.
            defer { statement.reset(clearingBindings: false) }
            statement.bind(keys[i], at: 1)
            statement.bind(1, at: 2)
            var index: Int32 = 3
            for value in inserts[i].attributes { statement.bind(value, at: index); index += 1 }
            for position in entity.foreignKeyRelationships.indices {
                statement.bind(inserts[i].foreignKey(at: position).flatMap { resolve($0).primaryKey }, at: index)
                index += 1
            }
            // Every insert of a save that records history is in its record.
            statement.bind(token, at: index)
            do throws(StoreError) { while try statement.step() {} } catch {
                guard error.isUniquenessViolation else { throw error }
                throw try uniquenessRejection(entity, id: ManagedObjectID(storeIdentifier: storeIdentifier, entityName: entity.name, key: .permanent(keys[i])),
                                              attributes: inserts[i].attributes)
            }
        }
    }

    /// Each ordered relationship's places, after the links and keys they number are written:
    /// member `i` of the order takes place `i`, where it is still linked to the owner.
    private func writeOrderings(_ orderings: [ChangeSet.Ordering], resolve: (ManagedObjectID) -> ManagedObjectID) throws {
        for ordering in orderings {
            let relationship = ordering.entity.relationships[ordering.relationship]
            guard let owner = resolve(ordering.owner).primaryKey, let position = relationship.positionName.map(quoteIdentifier) else { continue }
            // Each member's place is in its own row: a member's table is its entity's (a
            // relationship to a parent entity has members of several).
            let sql: (ManagedObjectID) -> String
            switch relationship.sql {
            case .inverseForeignKey(let column):
                sql = { "UPDATE \(quoteIdentifier($0.entityName)) SET \(position) = ?1 WHERE \"_pk\" = ?2 AND \(column) = ?3" }
            case let .joinTable(table, ownColumn, otherColumn):
                let update = "UPDATE \(table) SET \(position) = ?1 WHERE \(otherColumn) = ?2 AND \(ownColumn) = ?3"
                sql = { _ in update }
            case .foreignKey:
                continue
            }
            for (place, member) in ordering.members.map(resolve).enumerated() {
                guard let key = member.primaryKey else { continue }
                try connection.withStatement(sql(member)) { statement throws(StoreError) in
                    statement.bind(Int64(place), at: 1); statement.bind(key, at: 2); statement.bind(owner, at: 3)
                    try statement.execute()
                }
            }
        }
    }

    private func writeLinks(_ changes: ChangeSet, resolve: (ManagedObjectID) -> ManagedObjectID) throws {
        for link in changes.removedLinks {
            guard let a = resolve(link.a).primaryKey, let b = resolve(link.b).primaryKey else { continue }
            try connection.withStatement("DELETE FROM \(link.table) WHERE \"a\" = ? AND \"b\" = ?") { s throws(StoreError) in
                s.bind(a, at: 1); s.bind(b, at: 2)
                try s.execute()
            }
        }
        for link in changes.addedLinks {
            guard let a = resolve(link.a).primaryKey, let b = resolve(link.b).primaryKey else { continue }
            try connection.withStatement("INSERT OR IGNORE INTO \(link.table) (\"a\", \"b\") VALUES (?, ?)") { s throws(StoreError) in
                s.bind(a, at: 1); s.bind(b, at: 2)
                try s.execute()
            }
        }
    }
}

extension StoreError {
    /// SQLite refused a row for a unique index (or a primary key already taken).
    var isUniquenessViolation: Bool {
        guard case let .engine(code, _, _) = self else { return false }
        return code == 2067 || code == 1555  // SQLITE_CONSTRAINT_UNIQUE, SQLITE_CONSTRAINT_PRIMARYKEY
    }
}
