import Foundation
import ManagedStoreCore

// A change set written into PostgreSQL, with the checks of the SQLite store's writer
// (ChangeSetWriter) made so that they hold against other servers too: the rows a change is
// based on are locked (`FOR UPDATE`) before their versions are compared, and every UPDATE and
// DELETE repeats the comparison in its WHERE; references are locked (`FOR SHARE`) so that no
// other transaction deletes them before this one commits; the unique indexes decide uniqueness.

extension PGSession {
    func write(_ changes: ChangeSet) throws(ChangeSetRejection) -> WrittenChanges {
        do {
            return try writeChecked(changes)
        } catch let rejection as ChangeSetRejection {
            throw rejection
        } catch let error as StoreError {
            throw uniqueViolation(error, changes) ?? .store(error)
        } catch {
            throw .store(StoreError(wrapping: error))
        }
    }

    private func writeChecked(_ changes: ChangeSet) throws -> WrittenChanges {
        // Uniqueness is checked once the save's rows are all written (below), not row by row;
        // a save that writes no constrained entity has nothing to defer.
        let constrained = changes.inserts.contains { !$0.entity.uniquenessConstraints.isEmpty }
            || changes.updates.contains { !$0.entity.uniquenessConstraints.isEmpty }
        if constrained { connection.queue("SET CONSTRAINTS ALL DEFERRED", []) }
        // Base versions, with the rows locked until the transaction ends.
        var versionConflicts: [(id: ManagedObjectID, row: StoredRow?)] = []
        let based = changes.updates.map { ($0.id, $0.entity, $0.baseVersion) } + changes.deletes.map { ($0.id, $0.entity, $0.baseVersion) }
            + changes.versionChecks.map { ($0.id, $0.entity, $0.baseVersion) }
        let stored = try lockedVersions(based.compactMap { id, entity, _ in id.primaryKey.map { (entity, $0) } }, share: false)
        for (objectID, entity, baseVersion) in based {
            guard let pk = objectID.primaryKey else { continue }
            if stored[entity.index]?[pk] != baseVersion { versionConflicts.append((objectID, try row(of: entity, key: pk))) }
        }
        // Keys: an insert's own permanent key, or the next of its entity's.
        var needed: [Int: Int] = [:]
        for insert in changes.inserts where insert.id.primaryKey == nil { needed[insert.entity.index, default: 0] += 1 }
        var next: [Int: Int64] = [:]
        for (index, count) in needed.sorted(by: { $0.key < $1.key }) {
            next[index] = try allocateKeys(of: model.schema[index], count: count)
        }
        var keys: [Int64] = []
        for insert in changes.inserts {
            if let own = insert.id.primaryKey { keys.append(own); continue }
            keys.append(next[insert.entity.index]!)
            next[insert.entity.index]! += 1
        }
        let assigned = zip(changes.inserts, keys).map { id($0.entity, $1) }
        let permanent = Dictionary(zip(changes.inserts.map(\.id), assigned), uniquingKeysWith: { a, _ in a })
        func resolve(_ objectID: ManagedObjectID) -> ManagedObjectID { permanent[objectID] ?? objectID }

        let constraintConflicts = try uniquenessConflicts(changes)
        if !versionConflicts.isEmpty || !constraintConflicts.isEmpty {
            throw ChangeSetRejection.conflicts(versions: versionConflicts, constraints: constraintConflicts)
        }
        try checkReferences(changes, resolve: resolve)

        var token: Int64?
        if let draft = changes.history, !draft.entries.isEmpty {
            token = try recordHistory(draft, changes, key: { resolve($0).primaryKey })
        } else if changes.history == nil {
            breakChains(changes.updates.compactMap { u in u.id.primaryKey.map { (u.entity, $0) } }
                            + zip(changes.inserts, keys).map { ($0.entity, $1) })
        }

        for delete in changes.deletes {
            guard let pk = delete.id.primaryKey else { continue }
            let table = schema[delete.entity]
            let deleted = try connection.execute("DELETE FROM \(table.table) WHERE _pk = $1 AND _version = $2",
                                                 [String(pk), String(delete.baseVersion)]).affectedRows
            if deleted == 0 { throw ChangeSetRejection.conflicts(versions: [(delete.id, try row(of: delete.entity, key: pk))], constraints: []) }
            // The links of a deleted object go with it, whatever the delete rule.
            for relationship in delete.entity.relationships {
                guard case let .joinTable(link, isFirstSide) = relationship.storage else { continue }
                connection.queue("DELETE FROM \(PGValues.quote(link)) WHERE \(isFirstSide ? "a" : "b") = $1", [String(pk)])
            }
        }
        for update in changes.updates {
            guard let pk = update.id.primaryKey else { continue }
            let table = schema[update.entity]
            var assignments: [String] = []
            var parameters: [String?] = [String(pk), String(update.baseVersion)]
            for a in update.changedAttributes {
                parameters.append(try PGValues.text(update.attributes[a]))
                assignments.append("\(table.attributeColumns[a]) = $\(parameters.count)")
            }
            for f in update.changedForeignKeys {
                parameters.append(update.foreignKeys[f].flatMap { resolve($0).primaryKey }.map(String.init))
                assignments.append("\(table.foreignKeyColumns[f]) = $\(parameters.count)::bigint")
            }
            assignments.append("_version = _version + 1")
            let updated = try connection.execute("UPDATE \(table.table) SET \(assignments.joined(separator: ", ")) WHERE _pk = $1 AND _version = $2",
                                                 parameters).affectedRows
            if updated == 0 { throw ChangeSetRejection.conflicts(versions: [(update.id, try row(of: update.entity, key: pk))], constraints: []) }
        }
        try insertRows(changes.inserts, keys: keys, resolve: resolve)
        for link in changes.removedLinks {
            guard let a = resolve(link.a).primaryKey, let b = resolve(link.b).primaryKey else { continue }
            connection.queue("DELETE FROM \(PGValues.quote(link.table)) WHERE a = $1 AND b = $2", [String(a), String(b)])
        }
        for link in changes.addedLinks {
            guard let a = resolve(link.a).primaryKey, let b = resolve(link.b).primaryKey else { continue }
            connection.queue("INSERT INTO \(PGValues.quote(link.table)) (a, b) VALUES ($1, $2) ON CONFLICT DO NOTHING", [String(a), String(b)])
        }
        writeOrderings(changes.orderings, resolve: resolve)
        // The unique constraints decide now: another server's committed row with the same
        // values (committed after the checks above) is a unique violation here.
        if constrained { connection.queue("SET CONSTRAINTS ALL IMMEDIATE", []) }
        // What was queued (the statements whose answer is only whether they failed: rows,
        // links, history) goes now, in one round trip, so that a failure is this save's; except
        // for a save whose statements cannot fail but for a fault of the store (every key new,
        // every reference locked, no unique index, no link or row another server may hold): they go
        // with a later save's, or the COMMIT, and a group of such saves costs a round trip or
        // two, not one a save (`PGTransaction.inSavepoint`).
        let defers = defersStatements && !constrained && changes.deletes.isEmpty && changes.addedLinks.isEmpty && changes.removedLinks.isEmpty && changes.orderings.isEmpty
        if !defers { try connection.flushQueued() }
        return WrittenChanges(insertedIDs: assigned, token: token.map(PersistentHistoryToken.init(rawValue:)))
    }

    /// The rows of `inserts` (with their `keys`), one statement per entity: a row's values as
    /// parameters, or, for several rows, each column's values as one array parameter that
    /// `unnest` turns back into rows (an import's thousand rows are one statement, not a
    /// thousand). Queued: sent with the save's next statement.
    private func insertRows(_ inserts: [ChangeSet.Insert], keys: [Int64], resolve: (ManagedObjectID) -> ManagedObjectID) throws(StoreError) {
        var byEntity: [Int: [Int]] = [:]
        var entityOrder: [Int] = []
        for (i, insert) in inserts.enumerated() {
            if byEntity[insert.entity.index] == nil { entityOrder.append(insert.entity.index) }
            byEntity[insert.entity.index, default: []].append(i)
        }
        for index in entityOrder {
            let entity = model.schema[index], table = schema[entity], rows = byEntity[index]!
            // Per column: its values, row by row.
            var columns: [[String?]] = [rows.map { String(keys[$0]) }]
            for a in entity.attributes.indices {
                var values: [String?] = []
                values.reserveCapacity(rows.count)
                for row in rows { values.append(try PGValues.text(inserts[row].attributes[a])) }
                columns.append(values)
            }
            for position in entity.foreignKeyRelationships.indices {
                columns.append(rows.map { inserts[$0].foreignKey(at: position).flatMap { resolve($0).primaryKey }.map(String.init) })
            }
            let names = (["_pk", "_version"] + table.attributeColumns + table.foreignKeyColumns).joined(separator: ", ")
            if rows.count == 1 {
                let placeholders = ["$1", "1"] + (1..<columns.count).map { "$\($0 + 1)" }
                connection.queue("INSERT INTO \(table.table) (\(names)) VALUES (\(placeholders.joined(separator: ", ")))", columns.map { $0[0] })
            } else {
                let types = ["bigint[]"] + entity.attributes.map { PGValues.elementArrayType($0.type) } + entity.foreignKeyRelationships.map { _ in "bigint[]" }
                let arrays = types.enumerated().map { "$\($0 + 1)::\($1)" }.joined(separator: ", ")
                let values = ["u.c0", "1"] + (1..<columns.count).map { "u.c\($0)" }
                let aliases = columns.indices.map { "c\($0)" }.joined(separator: ", ")
                connection.queue("INSERT INTO \(table.table) (\(names)) SELECT \(values.joined(separator: ", ")) FROM unnest(\(arrays)) AS u(\(aliases))",
                                 columns.map(PGValues.quotedArray))
            }
        }
    }

    /// The stored versions of `objects`, per entity and key, their rows locked until the
    /// transaction ends (`FOR SHARE` when `share`: others may read-lock them too, not change them).
    private func lockedVersions(_ objects: [(Entity, Int64)], share: Bool) throws(StoreError) -> [Int: [Int64: Int64]] {
        var byEntity: [Int: [Int64]] = [:]
        for (entity, pk) in objects { byEntity[entity.index, default: []].append(pk) }
        var versions: [Int: [Int64: Int64]] = [:]
        // In entity and key order, so that two servers lock shared rows in the same order.
        for (index, keys) in byEntity.sorted(by: { $0.key < $1.key }) {
            let table = schema.tables[index]
            let result = try connection.execute("""
                SELECT _pk, _version FROM \(table.table) WHERE _pk = ANY($1::bigint[]) ORDER BY _pk FOR \(share ? "SHARE" : "UPDATE")
                """, [PGValues.keyArray(keys)])
            for i in 0..<result.rowCount {
                if let pk = result.int64(i, 0), let version = result.int64(i, 1) { versions[index, default: [:]][pk] = version }
            }
        }
        return versions
    }

    /// Every uniqueness constraint of every inserted or updated object, against the stored rows
    /// and the save's other objects (`UniquenessCheck`).
    private func uniquenessConflicts(_ changes: ChangeSet) throws(StoreError) -> [ConstraintConflict] {
        let check = UniquenessCheck(changes)
        var conflicts: [ConstraintConflict] = []
        for group in check.groups {
            let owner = model.schema[group.entity]
            if owner.kinds.count > 1 {
                // The values must be unique across several tables, which no unique index
                // spans: writers that store these values take turns until they commit.
                var lockKey = "unique \(owner.name) \(group.constraint)"
                for value in group.values { lockKey += "\u{0}" + ((try PGValues.text(value)) ?? "") }
                try connection.execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 1))", [lockKey])
            }
            var stored: [ManagedObjectID] = []
            for kind in owner.kinds {
                let entity = model.schema[kind]
                let table = schema[entity]
                var conditions: [String] = []
                var parameters: [String?] = []
                for (i, a) in entity.uniquenessConstraints[group.constraint].enumerated() {
                    parameters.append(try PGValues.text(group.values[i]))
                    conditions.append("\(table.attributeColumns[a]) = $\(parameters.count)")
                }
                let result = try connection.execute("SELECT _pk FROM \(table.table) WHERE \(conditions.joined(separator: " AND ")) ORDER BY _pk", parameters)
                stored += (0..<result.rowCount).compactMap { result.int64($0, 0) }.map { id(entity, $0) }
            }
            if let conflict = check.conflict(group, stored: stored, model: model) { conflicts.append(conflict) }
        }
        return conflicts
    }

    /// Every reference the change set writes must name an object that exists after it; the
    /// objects named are locked against deletion until the transaction ends.
    private func checkReferences(_ changes: ChangeSet, resolve: (ManagedObjectID) -> ManagedObjectID) throws {
        let deleted = Set(changes.deletes.map(\.id))
        let inserted = Set(changes.inserts.map { resolve($0.id) })
        var references: [(owner: ManagedObjectID, relationship: String, target: ManagedObjectID)] = []
        for insert in changes.inserts {
            for position in insert.entity.foreignKeyRelationships.indices {
                guard let target = insert.foreignKey(at: position) else { continue }
                references.append((insert.id, insert.entity.relationships[insert.entity.foreignKeyRelationships[position]].name, resolve(target)))
            }
        }
        for update in changes.updates {
            for position in update.changedForeignKeys {
                guard let target = update.foreignKeys[position] else { continue }
                references.append((update.id, update.entity.relationships[update.entity.foreignKeyRelationships[position]].name, resolve(target)))
            }
        }
        for link in changes.addedLinks {
            references.append((link.a, link.relationship, resolve(link.b)))
            references.append((link.b, link.relationship, resolve(link.a)))
        }
        var lookups: [(Entity, Int64)] = []
        for reference in references where !inserted.contains(reference.target) && !deleted.contains(reference.target) {
            if let pk = reference.target.primaryKey, let entity = model.resolvedEntity(named: reference.target.entityName) { lookups.append((entity, pk)) }
        }
        let existing = try lockedVersions(lookups, share: true)
        let invalid = references.filter { reference in
            if inserted.contains(reference.target) { return false }
            guard !deleted.contains(reference.target), let pk = reference.target.primaryKey,
                  let entity = model.resolvedEntity(named: reference.target.entityName) else { return true }
            return existing[entity.index]?[pk] == nil
        }
        if !invalid.isEmpty { throw ChangeSetRejection.invalidReferences(invalid) }
    }

    /// A unique index refused a row that the checks before it let through: another server
    /// committed the same values meanwhile. A conflict on the constraint the index enforces,
    /// naming this save's objects with those values (the other server's object is read again
    /// by the save that retries).
    private func uniqueViolation(_ error: StoreError, _ changes: ChangeSet) -> ChangeSetRejection? {
        guard case let .engine(code, message, _) = error, code == PGSQLState.code(PGSQLState.uniqueViolation) else { return nil }
        for entity in model.schema {
            for (c, constraint) in entity.uniquenessConstraints.enumerated() where message.contains("\"\(schema.uniqueIndexName(entity, c))\"") {
                let objects = changes.inserts.filter { $0.entity === entity }.map(\.id) + changes.updates.filter { $0.entity === entity }.map(\.id)
                return .conflicts(versions: [], constraints: [ConstraintConflict(entityName: entity.name, constraint: constraint.map { entity.attributes[$0].name },
                                                                                 values: [:], conflictingObjects: [], objects: objects)])
            }
        }
        return nil
    }

    /// Each ordered relationship's places, after the links and keys they number are written:
    /// member `i` of the order takes place `i`, where it is still linked to the owner. One
    /// statement per order, the members and their places as arrays.
    private func writeOrderings(_ orderings: [ChangeSet.Ordering], resolve: (ManagedObjectID) -> ManagedObjectID) {
        for ordering in orderings {
            let relationship = ordering.entity.relationships[ordering.relationship]
            guard let owner = resolve(ordering.owner).primaryKey, let position = relationship.positionName.map(PGValues.quote) else { continue }
            var members: [Int64] = [], places: [Int64] = []
            for (place, member) in ordering.members.enumerated() {
                guard let key = resolve(member).primaryKey else { continue }
                members.append(key)
                places.append(Int64(place))
            }
            let statements: [String]
            switch relationship.storage {
            case .inverseForeignKey:
                // Members of a parent entity's kinds are in their own tables; each takes the rows it has.
                let destination = model.schema[relationship.destinationIndex]
                let kinds = destination.isSingleKind ? [destination.index] : destination.kinds
                statements = kinds.map {
                    "UPDATE \(schema.tables[$0].table) AS t SET \(position) = o.place FROM unnest($1::bigint[], $2::bigint[]) AS o(member, place) "
                        + "WHERE t._pk = o.member AND t.\(PGValues.quote(relationship.destinationKeyName)) = $3"
                }
            case let .joinTable(table, isFirstSide):
                let (mine, other) = isFirstSide ? ("a", "b") : ("b", "a")
                statements = ["UPDATE \(PGValues.quote(table)) AS t SET \(position) = o.place FROM unnest($1::bigint[], $2::bigint[]) AS o(member, place) "
                    + "WHERE t.\(other) = o.member AND t.\(mine) = $3"]
            case .foreignKey:
                continue
            }
            for sql in statements {
                connection.queue(sql, [PGValues.keyArray(members), PGValues.keyArray(places), String(owner)])
            }
        }
    }
}
