// What a save records in the persistent history: per object the kind of change, the
// properties it touched and their values before. Read from the context's objects before the
// save commits them (which forgets what they were).
//
// Relationships are recorded as what the save did to them (destinations added and removed),
// on both sides: a task moving to another project changes the task's `project` and both
// projects' `tasks`, although neither project was loaded. The sides this context never read
// are found from the changes of the sides it did (their links and stored keys).

extension ManagedObjectContext {
    /// The name under which this context's saves are recorded in the history [transactionAuthor]:
    /// who made the change (a user, a client, an import job).
    public var transactionAuthor: String? {
        get { assertOnQueue(); return author }
        set { assertOnQueue(); author = newValue }
    }

    /// The history record of the pending changes (`changes` is the change set they make).
    func historyDraft(for changes: ChangeSet) -> HistoryDraft {
        var draft = HistoryDraft(author: author, contextName: name)
        /// Per saved object: attributes changed (index -> value before) and relationships
        /// changed (index -> destinations added and removed).
        var attributesBefore: [ManagedObjectID: [Int: AttributeValue]] = [:]
        var relationshipChanges: [ManagedObjectID: [Int: (added: Set<ManagedObjectID>, removed: Set<ManagedObjectID>)]] = [:]
        let schema = coordinator.model.schema

        func note(_ owner: ManagedObjectID, _ entity: Entity, _ r: Int, added: Set<ManagedObjectID>, removed: Set<ManagedObjectID>) {
            guard !added.isEmpty || !removed.isEmpty else { return }
            var change = relationshipChanges[owner, default: [:]][r] ?? ([], [])
            change.added.formUnion(added)
            change.removed.formUnion(removed)
            relationshipChanges[owner, default: [:]][r] = change
            // The other side changes too: each destination gains or loses the owner.
            let inverse = entity.relationships[r].inverseIndex
            for destination in added { relationshipChanges[destination, default: [:]][inverse, default: ([], [])].added.insert(owner) }
            for destination in removed { relationshipChanges[destination, default: [:]][inverse, default: ([], [])].removed.insert(owner) }
        }
        func destinations(_ state: RelationshipState) -> Set<ManagedObjectID> {
            switch state {
            case .unloaded, .toOne(nil): return []
            case .toOne(let id?): return [id]
            case .toMany(let ids): return ids
            }
        }

        for object in insertedList where !object.isDeleted {
            draft.entries.append(.init(id: object.objectID, entity: object.entity, type: .insert, properties: [], previous: []))
            for r in object.relationships.indices {
                note(object.objectID, object.entity, r, added: destinations(object.relationships[r]), removed: [])
            }
        }
        for object in updatedList + touchedList where !object.isInserted && !object.isDeleted && !object.isFault {
            for a in object.changedAttributes where object.attributes[a] != object.committedAttributes[a] {
                attributesBefore[object.objectID, default: [:]][a] = object.committedAttributes[a]
            }
            for r in object.relationships.indices {
                if case .unloaded = object.relationships[r] { continue }
                if case .unloaded = object.committedRelationships[r] { continue }
                let now = destinations(object.relationships[r]), before = destinations(object.committedRelationships[r])
                note(object.objectID, object.entity, r, added: now.subtracting(before), removed: before.subtracting(now))
            }
        }
        for object in deletedList {
            for r in object.committedRelationships.indices {
                note(object.objectID, object.entity, r, added: [], removed: destinations(object.committedRelationships[r]))
            }
        }

        // Updates: every saved object, not inserted or deleted by this save, whose attributes or
        // relationships changed. (A destination inserted or deleted by this save is recorded as
        // such; one discarded before the save never reached the store.)
        let inserted = Set(insertedList.map(\.objectID))
        let deleted = Set(deletedList.map(\.objectID))
        let updated = Set(attributesBefore.keys).union(relationshipChanges.keys)
            .filter { !$0.isTemporaryID && !inserted.contains($0) && !deleted.contains($0) }
        func kept(_ ids: Set<ManagedObjectID>) -> [ManagedObjectID] {
            ids.filter { !$0.isTemporaryID || inserted.contains($0) }.sortedByKey()
        }
        for id in updated.sortedByEntityAndKey() {
            guard let entityIndex = coordinator.model.entityIndexByName[id.entityName] else { continue }
            let entity = schema[entityIndex]
            var properties: [String] = []
            var previous: [(name: String, value: HistoryDraft.Previous)] = []
            for (a, value) in (attributesBefore[id] ?? [:]).sorted(by: { $0.key < $1.key }) {
                properties.append(entity.attributes[a].name)
                previous.append((entity.attributes[a].name, .attribute(value)))
            }
            for (r, change) in (relationshipChanges[id] ?? [:]).sorted(by: { $0.key < $1.key }) {
                let added = kept(change.added), removed = kept(change.removed)
                // Gained and lost again within the save: no change.
                let net = (Set(added).subtracting(removed), Set(removed).subtracting(added))
                guard !net.0.isEmpty || !net.1.isEmpty else { continue }
                properties.append(entity.relationships[r].name)
                previous.append((entity.relationships[r].name, .destinations(added: net.0.sortedByKey(), removed: net.1.sortedByKey())))
            }
            guard !properties.isEmpty else { continue }
            draft.entries.append(.init(id: id, entity: entity, type: .update, properties: properties, previous: previous))
        }
        for object in deletedList {
            let entity = object.entity
            var previous: [(name: String, value: HistoryDraft.Previous)] = []
            if !object.isFault && !object.isInaccessible {
                for a in entity.attributes.indices where a < object.committedAttributes.count {
                    previous.append((entity.attributes[a].name, .attribute(object.committedAttributes[a])))
                }
                for r in entity.relationships.indices where r < object.committedRelationships.count {
                    if case .unloaded = object.committedRelationships[r] { continue }
                    previous.append((entity.relationships[r].name, .destinations(added: [], removed: destinations(object.committedRelationships[r]).sortedByKey())))
                }
            }
            draft.entries.append(.init(id: object.objectID, entity: entity, type: .delete, properties: [], previous: previous))
        }
        return draft
    }
}
