import Dispatch

// A fetch of an entity with sub-entities [includesSubentities]: each entity of the hierarchy
// is stored on its own (EntityInheritance.swift), so the fetch runs once per kind (the
// concrete entities at or below the one asked for, `Entity.kinds`), each the plain fetch of
// one entity with its SQL, pending changes and parent context, and the answers are merged in
// the request's order.
//
// The order across kinds: the request's sort keys, then the kind (in model order), then the
// key, as two kinds can hold the same key (for equal sort values each kind's own fetch
// already answers in key order, which the merge keeps). A cursor remembers the kind of the object it
// follows, and each kind's fetch starts after it by that order. Offsets and limits apply to
// the merged list; each kind is asked for at most offset + limit objects, which is all the
// merged window can take from it.

extension PreparedFetch {
    /// Whether this fetch gathers the objects of several entities (`ManagedObjectContext+KindsFetch`).
    package var acrossKinds: Bool { request.includesSubentities && !entity.isSingleKind }

    /// What is left of the request's timeout for the next kind's fetch (the timeout is the
    /// whole fetch's, not each kind's); nil without one. Throws `timedOut` once it has passed.
    func remainingTime() throws(FetchError) -> Duration? {
        guard let deadline else { return nil }
        try checkDeadline()
        let now = DispatchTime.now().uptimeNanoseconds
        return .nanoseconds(Int64(clamping: deadline > now ? deadline - now : 0))
    }
}

extension ManagedObjectContext {
    /// The objects of every kind of `prepared.entity` that match, in the request's order.
    func fetchAcrossKinds(_ prepared: PreparedFetch) throws(FetchError) -> [ManagedObject] {
        let request = prepared.request
        var window = 0
        if request.fetchLimit > 0 {
            let sum = request.fetchOffset.addingReportingOverflow(request.fetchLimit)
            window = sum.overflow ? Int.max : sum.partialValue
        }
        let cursor = try prepared.after.map { cursor throws(FetchError) in (cursor, try kindPosition(of: cursor, in: prepared.entity)) }
        var found: [ManagedObject] = []
        for (position, kind) in prepared.entity.kinds.enumerated() {
            var part = try kindRequest(prepared, kind)
            part.fetchLimit = window
            part.fetchBatchSize = 0
            part.relationshipKeyPathsForPrefetching = []
            part.after = cursor.map { cursor, cursorKind in
                // Objects with the cursor's sort values: after it only in a later kind, or in
                // its kind with a greater key.
                let key = position < cursorKind ? Int64.max : position > cursorKind ? Int64.min : cursor.primaryKey
                return FetchCursor(fingerprint: FetchCursor.fingerprint(entity: part.entityName, sorts: request.sortDescriptors),
                                   values: cursor.values, primaryKey: key)
            }
            found += try fetch(part)
        }
        try prepared.checkDeadline()
        // Without sort keys the order is by kind, then key: the kinds' answers, each already in
        // key order (unsaved objects last), one after the other, as they were gathered.
        if !prepared.sorts.isEmpty { found = merged(found, by: prepared) }
        let merged = found.dropFirst(request.fetchOffset)
        let objects = Array(request.fetchLimit > 0 ? merged.prefix(request.fetchLimit) : merged)
        try prefetchByKind(request.relationshipKeyPathsForPrefetching, of: objects)
        return objects
    }

    /// The request of one kind's part of `prepared`: that entity alone, from its first object,
    /// in what is left of the whole fetch's time.
    private func kindRequest(_ prepared: PreparedFetch, _ kind: Int) throws(FetchError) -> FetchRequest {
        var part = prepared.request
        part.entityName = coordinator.model.schema[kind].name
        part.includesSubentities = false
        part.fetchOffset = 0
        part.timeout = try prepared.remainingTime()
        return part
    }

    /// The kinds' answers (gathered in kind order, each in its own fetch's order) in the
    /// request's order: the sort keys, each read once per object, then the kind, then the
    /// place in the kind's own answer, which for equal sort values is key order.
    private func merged(_ found: [ManagedObject], by prepared: PreparedFetch) -> [ManagedObject] {
        let evaluator = PredicateEvaluator(context: self)
        let sorts = prepared.sorts
        let keys = found.map { object in sorts.map { evaluator.sortValue($0, of: object) } }
        let positions = Dictionary(uniqueKeysWithValues: prepared.entity.kinds.enumerated().map { ($1, $0) })
        let kinds = found.map { positions[$0.entity.index]! }
        let order = found.indices.sorted { i, j in
            for (s, sort) in sorts.enumerated() {
                let order = PredicateSemantics.sortOrder(keys[i][s], keys[j][s])
                if order != .orderedSame { return sort.ascending ? order == .orderedAscending : order == .orderedDescending }
            }
            return kinds[i] != kinds[j] ? kinds[i] < kinds[j] : i < j
        }
        return order.map { found[$0] }
    }

    /// How many objects of every kind match, honouring the request's offset and limit.
    func countAcrossKinds(_ prepared: PreparedFetch) throws(FetchError) -> Int {
        let request = prepared.request
        guard prepared.after == nil else { return try fetchAcrossKinds(prepared).count }
        var total = 0
        for kind in prepared.entity.kinds {
            var part = try kindRequest(prepared, kind)
            part.fetchLimit = 0
            let (sum, overflow) = total.addingReportingOverflow(try count(for: part))
            total = overflow ? Int.max : sum
        }
        let afterOffset = max(0, total - request.fetchOffset)
        return request.fetchLimit > 0 ? min(afterOffset, request.fetchLimit) : afterOffset
    }

    /// Dictionary results of an entity with sub-entities: the saved objects of every kind,
    /// fetched and merged as above, each read along `keyPaths` (resolved against the parent,
    /// whose properties every kind has at the same places).
    func dictionariesAcrossKinds(_ prepared: PreparedFetch, names: [String], keyPaths: [ResolvedKeyPath]) throws(FetchError) -> [[String: PropertyValue]] {
        var read = prepared.entitiesRead
        for keyPath in keyPaths { read.formUnion(keyPath.entitiesRead) }
        var stored = prepared.request
        stored.resultType = .managedObjects
        stored.propertiesToFetch = nil
        let evaluator = PredicateEvaluator(context: self)
        return try savedObjectsAcrossKinds(stored, of: prepared.entity, reading: read, for: "dictionary results").map { object in
            var row: [String: PropertyValue] = [:]
            for (name, keyPath) in zip(names, keyPaths) {
                let value = evaluator.value(keyPath, from: object)
                if case .toOne = keyPath.terminal {
                    if case .object(let id) = value { row[name] = .object(id) } else { row[name] = .object(nil) }
                } else if case .attribute(let attribute) = value {
                    row[name] = .attribute(attribute)
                } else {
                    row[name] = .attribute(.null)
                }
            }
            return row
        }
    }

    /// The saved objects `request` matches across the kinds of `entity`, for what reads saved
    /// values (dictionary results, aggregates): a context with unsaved changes to what it reads
    /// (`reading`, the entity's kinds added), or a child context, whose reads go through its
    /// parent's changes, is refused rather than answered with a mix.
    func savedObjectsAcrossKinds(_ request: FetchRequest, of entity: Entity, reading: Set<Int>, for what: String) throws(FetchError) -> [ManagedObject] {
        guard parent == nil, !hasPendingChanges(in: reading.union(entity.kinds)) else {
            throw .invalidRequest("\(what) of \(entity.name), which has sub-entities, read their saved objects: "
                                  + "save this context's changes first, and ask a context without a parent")
        }
        var stored = request
        stored.includesPendingChanges = false
        return try fetch(stored)
    }

    /// The position in `entity.kinds` of the entity the cursor's object belongs to.
    private func kindPosition(of cursor: FetchCursor, in entity: Entity) throws(FetchError) -> Int {
        guard let name = cursor.entityName, let kind = coordinator.model.resolvedEntity(named: name),
              let position = entity.kinds.firstIndex(of: kind.index) else {
            throw .invalidRequest("the cursor belongs to another order (it does not name an entity of \(entity.name)'s hierarchy)")
        }
        return position
    }

    /// Prefetching by each object's own entity: the relationship is inherited, so every kind
    /// has it under the same name.
    private func prefetchByKind(_ names: [String], of objects: [ManagedObject]) throws(FetchError) {
        guard !names.isEmpty else { return }
        var byKind: [Int: [ManagedObject]] = [:]
        for object in objects { byKind[object.entity.index, default: []].append(object) }
        for (kind, group) in byKind.sorted(by: { $0.key < $1.key }) {
            try prefetch(names, of: group, entity: coordinator.model.schema[kind])
        }
    }
}
