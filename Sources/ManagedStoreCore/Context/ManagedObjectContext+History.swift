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
    ///
    /// This runs on the writer for every save, so it allocates only for what changed: an
    /// unchanged relationship is recognized by comparing its state with the committed one
    /// (no destination sets are built), and the per-object tables exist only for objects
    /// whose links changed.
    func historyDraft(for changes: ChangeSet) -> HistoryDraft {
        var draft = HistoryDraft(author: author, contextName: name)
        var links = LinkChanges()

        for object in insertedList where !object.isDeleted {
            draft.entries.append(.init(id: object.objectID, entity: object.entity, type: .insert, properties: [], previous: []))
            for r in object.relationships.indices {
                switch object.relationships[r] {
                case .toOne(let id?): links.note(object.objectID, object.entity, r, added: [id], removed: [])
                case .toMany(let ids) where !ids.isEmpty: links.note(object.objectID, object.entity, r, added: ids, removed: [])
                default: break
                }
            }
        }
        // Saved objects this save changes: attribute values before (in attribute order), and
        // what their loaded relationships gained and lost. An object may be listed both as
        // updated and as touched: it is looked at once.
        var attributeChanges: [(id: ManagedObjectID, entity: Entity, before: [(index: Int, value: AttributeValue)])] = []
        func scan(_ object: ManagedObject) {
            guard !object.isInserted && !object.isDeleted && !object.isFault else { return }
            var before: [(index: Int, value: AttributeValue)] = []
            for a in object.changedAttributes where object.attributes[a] != object.committedAttributes[a] {
                before.append((a, object.committedAttributes[a]))
            }
            if !before.isEmpty {
                before.sort { $0.index < $1.index }
                attributeChanges.append((object.objectID, object.entity, before))
            }
            for r in object.relationships.indices {
                switch (object.relationships[r], object.committedRelationships[r]) {
                case let (.toOne(now), .toOne(then)) where now != then:
                    links.note(object.objectID, object.entity, r, added: now.map { [$0] } ?? [], removed: then.map { [$0] } ?? [])
                case let (.toMany(now), .toMany(then)) where now != then:
                    links.note(object.objectID, object.entity, r, added: now.subtracting(then), removed: then.subtracting(now))
                default:
                    break  // unchanged, or not loaded on one side (then the other side records it)
                }
            }
            for r in object.entity.orderedRelationships where orderChanged(of: object, r) { links.noteReordered(object.objectID, r) }
        }
        for object in updatedList { scan(object) }
        for object in touchedList where !object.isListedAsUpdated { scan(object) }
        for object in deletedList {
            for r in object.committedRelationships.indices {
                links.note(object.objectID, object.entity, r, added: [], removed: Self.destinations(object.committedRelationships[r]))
            }
        }

        // Updates: every saved object, not inserted or deleted by this save, whose attributes or
        // relationships changed. (A destination inserted or deleted by this save is recorded as
        // such; one discarded before the save never reached the store.)
        draft.entries += updateEntries(attributeChanges, links)
        for object in deletedList {
            let entity = object.entity
            var previous: [(name: String, value: HistoryDraft.Previous)] = []
            if !object.isFault && !object.isInaccessible {
                for a in entity.attributes.indices where a < object.committedAttributes.count {
                    previous.append((entity.attributes[a].name, .attribute(object.committedAttributes[a])))
                }
                for r in entity.relationships.indices where r < object.committedRelationships.count {
                    if case .unloaded = object.committedRelationships[r] { continue }
                    previous.append((entity.relationships[r].name, .destinations(added: [], removed: Self.destinations(object.committedRelationships[r]).sortedByKey())))
                }
            }
            draft.entries.append(.init(id: object.objectID, entity: entity, type: .delete, properties: [], previous: previous))
        }
        return draft
    }

    /// The update entries: objects whose attributes changed, and objects on either side of a
    /// changed link (loaded or not), minus those this save inserts or deletes. Without changed
    /// links (a plain update) no set of IDs is built.
    private func updateEntries(_ attributeChanges: [(id: ManagedObjectID, entity: Entity, before: [(index: Int, value: AttributeValue)])],
                               _ links: LinkChanges) -> [HistoryDraft.Entry] {
        let inserted = links.isEmpty ? [] : Set(insertedList.map(\.objectID))
        let kept = { (id: ManagedObjectID) in !id.isTemporaryID || inserted.contains(id) }
        var entries = attributeChanges.compactMap { change in
            Self.updateEntry(change.id, change.entity, before: change.before, links: links.byObject[change.id] ?? [:], kept: kept)
        }
        if !links.isEmpty {
            let deleted = Set(deletedList.map(\.objectID))
            let attributesChanged = Set(attributeChanges.map(\.id))
            let schema = coordinator.model.schema
            for (id, objectLinks) in links.byObject
            where !attributesChanged.contains(id) && !id.isTemporaryID && !inserted.contains(id) && !deleted.contains(id) {
                guard let entityIndex = coordinator.model.entityIndexByName[id.entityName] else { continue }
                if let entry = Self.updateEntry(id, schema[entityIndex], before: [], links: objectLinks, kept: kept) { entries.append(entry) }
            }
        }
        return entries.sorted { ManagedObjectID.precedesByEntityAndKey($0.id, $1.id) }
    }

    /// One object's update entry: its attributes before, then its relationships' net changes
    /// (destinations gained and lost again within the save cancel out); nil when nothing is left.
    private static func updateEntry(_ id: ManagedObjectID, _ entity: Entity, before: [(index: Int, value: AttributeValue)],
                                    links: [Int: LinkChanges.Change], kept: (ManagedObjectID) -> Bool) -> HistoryDraft.Entry? {
        var properties: [String] = []
        var previous: [(name: String, value: HistoryDraft.Previous)] = []
        properties.reserveCapacity(before.count + links.count)
        previous.reserveCapacity(before.count + links.count)
        for (a, value) in before {
            properties.append(entity.attributes[a].name)
            previous.append((entity.attributes[a].name, .attribute(value)))
        }
        for (r, change) in links.sorted(by: { $0.key < $1.key }) {
            let added = change.added.filter(kept), removed = change.removed.filter(kept)
            let gained = added.subtracting(removed), lost = removed.subtracting(added)
            guard !gained.isEmpty || !lost.isEmpty || change.reordered else { continue }
            properties.append(entity.relationships[r].name)
            previous.append((entity.relationships[r].name, .destinations(added: gained.sortedByKey(), removed: lost.sortedByKey())))
        }
        guard !properties.isEmpty else { return nil }
        return .init(id: id, entity: entity, type: .update, properties: properties, previous: previous)
    }

    private static func destinations(_ state: RelationshipState) -> Set<ManagedObjectID> {
        switch state {
        case .unloaded, .toOne(nil): return []
        case .toOne(let id?): return [id]
        case .toMany(let ids): return ids
        }
    }
}

/// What a save did to relationships, per object and relationship index: destinations added
/// and removed, noted on both sides of each link (a task moving to another project changes
/// both projects' `tasks`, although neither was loaded).
struct LinkChanges {
    struct Change {
        var added: Set<ManagedObjectID> = []
        var removed: Set<ManagedObjectID> = []
        /// An ordered relationship whose order changed: a change of it even with the same members.
        var reordered = false
    }

    private(set) var byObject: [ManagedObjectID: [Int: Change]] = [:]

    var isEmpty: Bool { byObject.isEmpty }

    /// The order of ordered relationship `r` of `owner` changed (its destinations' sides did not).
    mutating func noteReordered(_ owner: ManagedObjectID, _ r: Int) {
        byObject[owner, default: [:]][r, default: Change()].reordered = true
    }

    mutating func note(_ owner: ManagedObjectID, _ entity: Entity, _ r: Int, added: Set<ManagedObjectID>, removed: Set<ManagedObjectID>) {
        guard !added.isEmpty || !removed.isEmpty else { return }
        byObject[owner, default: [:]][r, default: Change()].added.formUnion(added)
        byObject[owner, default: [:]][r, default: Change()].removed.formUnion(removed)
        guard let inverse = entity.relationships[r].inverseIndex else { return }  // one-way: the destinations did not change
        for destination in added { byObject[destination, default: [:]][inverse, default: Change()].added.insert(owner) }
        for destination in removed { byObject[destination, default: [:]][inverse, default: Change()].removed.insert(owner) }
    }
}
