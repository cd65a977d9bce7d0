import Foundation
import ManagedStoreCore

// A change set written into a dictionary state, with the checks and effects of the SQLite
// store's writer (ChangeSetWriter): base versions, uniqueness, references, then the history
// record, deletes, updates, inserts and links.

extension DictionaryState {
    mutating func write(_ changes: ChangeSet, model: ManagedObjectModel, storeIdentifier: UUID) throws(ChangeSetRejection) -> WrittenChanges {
        func id(_ entity: Entity, _ key: Int64) -> ManagedObjectID {
            ManagedObjectID(storeIdentifier: storeIdentifier, entityName: entity.name, key: .permanent(key))
        }
        // Base versions.
        var versionConflicts: [(id: ManagedObjectID, row: StoredRow?)] = []
        let based = changes.updates.map { ($0.id, $0.entity, $0.baseVersion) } + changes.deletes.map { ($0.id, $0.entity, $0.baseVersion) }
            + changes.versionChecks.map { ($0.id, $0.entity, $0.baseVersion) }
        for (objectID, entity, baseVersion) in based {
            guard let pk = objectID.primaryKey else { continue }
            let row = rows[entity.index][pk]
            if row?.version != baseVersion { versionConflicts.append((objectID, row)) }
        }
        // Keys: an insert's own permanent key, or the next of its entity's.
        var keys: [Int64] = []
        var next = lastKeys
        for insert in changes.inserts {
            if let own = insert.id.primaryKey { keys.append(own); continue }
            // One sequence per hierarchy, the root's (`Entity.keyRoot`), as the stores keep them.
            next[insert.entity.keyRoot] += 1
            keys.append(next[insert.entity.keyRoot])
        }
        let assigned = zip(changes.inserts, keys).map { id($0.entity, $1) }
        let permanent = Dictionary(zip(changes.inserts.map(\.id), assigned), uniquingKeysWith: { a, _ in a })
        func resolve(_ objectID: ManagedObjectID) -> ManagedObjectID { permanent[objectID] ?? objectID }

        let constraintConflicts = uniquenessConflicts(changes, model: model, id: id)
        if !versionConflicts.isEmpty || !constraintConflicts.isEmpty {
            throw .conflicts(versions: versionConflicts, constraints: constraintConflicts)
        }
        try checkReferences(changes, model: model, resolve: resolve)
        lastKeys = next

        let token = changes.history.flatMap { draft in draft.entries.isEmpty ? nil : record(draft, changes, resolve: resolve, model: model) }
        if changes.history == nil { forgetChains(of: changes, keys: keys) }

        for delete in changes.deletes {
            guard let pk = delete.id.primaryKey else { continue }
            rows[delete.entity.index][pk] = nil
            // The links of a deleted object go with it, whatever the delete rule.
            for relationship in delete.entity.relationships {
                guard case let .joinTable(table, isFirstSide) = relationship.storage else { continue }
                if let pairs = links[table] { links[table] = pairs.filter { (isFirstSide ? $0.a : $0.b) != pk } }
            }
        }
        for update in changes.updates {
            guard let pk = update.id.primaryKey, var row = rows[update.entity.index][pk] else { continue }
            for a in update.changedAttributes { row.attributes[a] = update.attributes[a] }
            for f in update.changedForeignKeys { row.foreignKeys[f] = update.foreignKeys[f].flatMap { resolve($0).primaryKey } }
            row.version += 1
            rows[update.entity.index][pk] = row
        }
        for (insert, key) in zip(changes.inserts, keys) {
            let foreignKeys = insert.entity.foreignKeyRelationships.indices.map { insert.foreignKey(at: $0).flatMap { resolve($0).primaryKey } }
            rows[insert.entity.index][key] = StoredRow(version: 1, attributes: insert.attributes, foreignKeys: foreignKeys)
        }
        for link in changes.removedLinks {
            guard let a = resolve(link.a).primaryKey, let b = resolve(link.b).primaryKey else { continue }
            links[link.table]?.remove(LinkPair(a: a, b: b))
        }
        for link in changes.addedLinks {
            guard let a = resolve(link.a).primaryKey, let b = resolve(link.b).primaryKey else { continue }
            links[link.table, default: []].insert(LinkPair(a: a, b: b))
        }
        for ordering in changes.orderings {
            guard let owner = resolve(ordering.owner).primaryKey else { continue }
            let slot = "\(ordering.entity.name).\(ordering.entity.relationships[ordering.relationship].name)"
            for (place, member) in ordering.members.enumerated() {
                if let key = resolve(member).primaryKey { places[slot, default: [:]][LinkPair(a: owner, b: key)] = Int64(place) }
            }
        }
        return WrittenChanges(insertedIDs: assigned, token: token.map(PersistentHistoryToken.init(rawValue:)))
    }

    /// Every uniqueness constraint of every inserted or updated object, against the stored rows
    /// and the save's other objects (`UniquenessCheck`).
    private func uniquenessConflicts(_ changes: ChangeSet, model: ManagedObjectModel, id: (Entity, Int64) -> ManagedObjectID) -> [ConstraintConflict] {
        let check = UniquenessCheck(changes)
        return check.groups.compactMap { group in
            let owner = model.schema[group.entity]
            let constraint = owner.uniquenessConstraints[group.constraint]
            let stored = owner.kinds.flatMap { kind in
                rows[kind].compactMap { pk, row in constraint.map({ row.attributes[$0] }) == group.values ? pk : nil }
                    .sorted().map { id(model.schema[kind], $0) }
            }
            return check.conflict(group, stored: stored, model: model)
        }
    }

    /// Every reference the change set writes must name an object that exists after it.
    private func checkReferences(_ changes: ChangeSet, model: ManagedObjectModel,
                                 resolve: (ManagedObjectID) -> ManagedObjectID) throws(ChangeSetRejection) {
        let deleted = Set(changes.deletes.map(\.id))
        let inserted = Set(changes.inserts.map { resolve($0.id) })
        var invalid: [(owner: ManagedObjectID, relationship: String, target: ManagedObjectID)] = []
        func check(_ owner: ManagedObjectID, _ relationship: String, _ target: ManagedObjectID) {
            let target = resolve(target)
            if inserted.contains(target) { return }
            if !deleted.contains(target), let pk = target.primaryKey, let entity = model.schema.first(where: { $0.name == target.entityName }),
               rows[entity.index][pk] != nil { return }
            invalid.append((owner, relationship, target))
        }
        for insert in changes.inserts {
            for position in insert.entity.foreignKeyRelationships.indices {
                guard let target = insert.foreignKey(at: position) else { continue }
                check(insert.id, insert.entity.relationships[insert.entity.foreignKeyRelationships[position]].name, target)
            }
        }
        for update in changes.updates {
            for position in update.changedForeignKeys {
                guard let target = update.foreignKeys[position] else { continue }
                check(update.id, update.entity.relationships[update.entity.foreignKeyRelationships[position]].name, target)
            }
        }
        for link in changes.addedLinks {
            check(link.a, link.relationship, link.b)
            check(link.b, link.relationship, link.a)
        }
        if !invalid.isEmpty { throw .invalidReferences(invalid) }
    }

    /// Records `draft` as one save and moves the chains of the objects it changed; returns its token.
    private mutating func record(_ draft: HistoryDraft, _ changes: ChangeSet, resolve: (ManagedObjectID) -> ManagedObjectID,
                                 model: ManagedObjectModel) -> Int64 {
        lastToken += 1
        let token = lastToken
        let versions = Dictionary(changes.updates.map { ($0.id, $0.baseVersion + 1) }, uniquingKeysWith: { a, _ in a })
        var recorded: [PersistentHistoryChange] = []
        for entry in draft.entries {
            let objectID = resolve(entry.id)
            guard let pk = objectID.primaryKey else { continue }
            let version: Int64?
            let properties: [String]
            switch entry.type {
            case .insert: version = 1; properties = entry.entity.propertyNames
            case .update: version = versions[entry.id]; properties = entry.previous.map(\.name)
            case .delete: version = nil; properties = []
            }
            var previous: [String: PersistentHistoryValue] = [:]
            for (name, value) in entry.previous {
                switch value {
                case .attribute(let attribute): previous[name] = .attribute(attribute)
                case let .destinations(added, removed): previous[name] = .destinations(added: added.map(resolve), removed: removed.map(resolve))
                }
            }
            let change = PersistentHistoryChange(objectID: objectID, changeType: entry.type, updatedProperties: properties,
                                                 version: version, previousValues: previous)
            recorded.append(change)
            let key = ObjectKey(entity: entry.entity.index, key: pk)
            let link = ChainLink(token: token, version: version, change: change)
            switch entry.type {
            case .insert: chains[key] = .some([link])
            case .update, .delete:
                if case .some(.some(var chain)) = chains[key] {
                    chain.append(link)
                    chains[key] = .some(chain)
                }
            }
        }
        recorded.sort { ($0.objectID.entityName, $0.objectID.primaryKey ?? 0) < ($1.objectID.entityName, $1.objectID.primaryKey ?? 0) }
        transactions.append(PersistentHistoryTransaction(token: PersistentHistoryToken(rawValue: token), timestamp: Date(),
                                                         author: draft.author, contextName: draft.contextName, changes: recorded))
        return token
    }

    /// A save that records nothing: what it changed is nowhere, so the objects it wrote have
    /// no known history from here on.
    private mutating func forgetChains(of changes: ChangeSet, keys: [Int64]) {
        for update in changes.updates {
            if let pk = update.id.primaryKey { chains[ObjectKey(entity: update.entity.index, key: pk)] = .some(nil) }
        }
        for (insert, key) in zip(changes.inserts, keys) { chains[ObjectKey(entity: insert.entity.index, key: key)] = .some(nil) }
    }
}
