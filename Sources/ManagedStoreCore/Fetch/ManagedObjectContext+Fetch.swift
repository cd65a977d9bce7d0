// Running fetch requests: SQL on a reader for what is saved, merged with this context's
// pending changes (evaluated in memory with the same semantics) when `includesPendingChanges`.
// A child context asks its parent instead of the store (ManagedObjectContext+ParentFetch.swift).

import Dispatch

/// A fetch request checked against the model, ready to run.
package struct PreparedFetch {
    package let entity: Entity
    package let predicate: CheckedPredicate?
    package let sorts: [ResolvedSort]
    package let request: FetchRequest
    /// Only objects after this cursor (checked to belong to this order).
    package var after: FetchCursor?
    /// When the fetch must stop (`DispatchTime.uptimeNanoseconds`), from the request's timeout.
    package var deadline: UInt64?

    /// Throws `timedOut` once the deadline has passed (the in-memory steps check it as they go).
    package func checkDeadline() throws(FetchError) {
        if let deadline, DispatchTime.now().uptimeNanoseconds >= deadline, let timeout = request.timeout { throw .timedOut(timeout) }
    }

    /// Entities whose values decide the result: the fetched one and those its key paths read.
    package var entitiesRead: Set<Int> {
        var result: Set<Int> = [entity.index]
        if let predicate { result.formUnion(predicate.entitiesRead) }
        for sort in sorts { result.formUnion(sort.keyPath.entitiesRead) }
        return result
    }

    /// What a cursor's fingerprint names: the entity, marked when the order spans its kinds
    /// (a cursor of one order is refused by the other).
    var orderName: String { acrossKinds ? entity.name + "+" : entity.name }

    /// Refuses what needs one SQL statement (compiled SQL): a fetch across the kinds of a
    /// hierarchy runs one per kind.
    package func refuseAcrossKinds(_ what: String) throws(FetchError) {
        guard acrossKinds else { return }
        throw .invalidRequest("no one \(what) answers a fetch of \(entity.name), which has sub-entities (each runs its own): ask for each sub-entity, or set includesSubentities to false")
    }

    package var followsRelationships: Bool {
        (predicate?.followsRelationships ?? false) || sorts.contains { !$0.keyPath.steps.isEmpty }
    }
}

extension ManagedObjectContext {
    /// The objects matching `request`, in its order [fetch(_:)].
    public func fetch(_ request: FetchRequest) throws(FetchError) -> [ManagedObject] {
        assertOnQueue()
        let prepared = try prepare(request)
        if prepared.acrossKinds { return try fetchAcrossKinds(prepared) }
        if request.fetchBatchSize > 0 { return try fetchInBatches(prepared, batchSize: request.fetchBatchSize) }
        let objects: [ManagedObject]
        if request.includesPendingChanges && hasPendingChanges(in: prepared.entitiesRead) {
            objects = try fetchIncludingPendingChanges(prepared)
        } else {
            objects = try fetchStoredObjects(prepared, limit: request.fetchLimit, offset: request.fetchOffset)
        }
        try prefetch(request.relationshipKeyPathsForPrefetching, of: objects, entity: prepared.entity)
        return objects
    }

    /// Loads to-many relationships of many objects in one query each.
    func prefetch(_ names: [String], of objects: [ManagedObject], entity: Entity) throws(FetchError) {
        guard !names.isEmpty, !objects.isEmpty else { return }
        for name in names {
            guard let r = entity.relationshipIndex(name) else { throw .unknownKeyPath(name, entity: entity.name) }
            let relationship = entity.relationships[r]
            guard relationship.isToMany else { continue }  // to-one targets come with the row
            var owners: [ManagedObject] = []
            for object in objects where !object.isInserted && !object.isInaccessible {
                object.fireFaultIfNeeded()
                if case .unloaded = object.relationships[r] { owners.append(object) }
            }
            guard !owners.isEmpty else { continue }
            if parent != nil {
                try prefetchThroughParent(relationship: r, of: owners)
                continue
            }
            let destination = coordinator.model.schema[relationship.destinationIndex]
            let destinations: [Int64: [ManagedObjectID]]
            do {
                destinations = try readStore { session in
                    let keys = try session.destinationKeys(of: entity, relationship: r, owners: owners.compactMap(\.objectID.primaryKey))
                    return try coordinator.destinationIDs.ids(keys, of: destination, session: session)
                }
            } catch {
                throw .store(StoreError(wrapping: error))
            }
            for owner in owners {
                setLoadedRelationship(of: owner, r, stored: destinations[owner.objectID.primaryKey!] ?? [])
            }
        }
    }

    /// The IDs of the objects matching `request` (temporary IDs for matching unsaved inserts).
    public func fetchObjectIDs(_ request: FetchRequest) throws(FetchError) -> [ManagedObjectID] {
        assertOnQueue()
        return try objectIDs(try prepare(request))
    }

    func objectIDs(_ prepared: PreparedFetch) throws(FetchError) -> [ManagedObjectID] {
        let request = prepared.request
        if prepared.acrossKinds { return try fetchAcrossKinds(prepared).map(\.objectID) }
        if request.includesPendingChanges && hasPendingChanges(in: prepared.entitiesRead) {
            return try fetchIncludingPendingChanges(prepared).map(\.objectID)
        }
        if parent != nil { return try objectIDsFromParent(prepared, limit: request.fetchLimit, offset: request.fetchOffset) }
        let keys = try readFetch(storeFetch(prepared, limit: request.fetchLimit, offset: request.fetchOffset)) { session, fetch throws(FetchError) in
            try session.fetchKeys(fetch)
        }
        return keys.map { ManagedObjectID(storeIdentifier: coordinator.storeIdentifier, entityName: prepared.entity.name, key: .permanent($0)) }
    }

    /// How many objects match `request`, honouring its offset and limit [count(for:)].
    public func count(for request: FetchRequest) throws(FetchError) -> Int {
        assertOnQueue()
        let prepared = try prepare(request)
        if prepared.acrossKinds { return try countAcrossKinds(prepared) }
        if request.includesPendingChanges && hasPendingChanges(in: prepared.entitiesRead) {
            return try fetchIncludingPendingChanges(prepared).count
        }
        if parent != nil { return try countFromParent(prepared) }
        let total = try readFetch(storeFetch(prepared, limit: 0, offset: 0)) { session, fetch throws(FetchError) in try session.count(fetch) }
        let afterOffset = max(0, total - request.fetchOffset)
        return request.fetchLimit > 0 ? min(afterOffset, request.fetchLimit) : afterOffset
    }

    /// Dictionaries of the chosen properties of the matching objects, read from the store (in a
    /// child context too: like Core Data's dictionary results, unsaved changes are not seen).
    public func fetchDictionaries(_ request: FetchRequest) throws(FetchError) -> [[String: PropertyValue]] {
        assertOnQueue()
        let prepared = try prepare(request)
        let names = request.propertiesToFetch ?? prepared.entity.attributes.map(\.name)
        let keyPaths = try names.map { name throws(FetchError) -> ResolvedKeyPath in
            let keyPath = try ResolvedKeyPath(name, rootEntity: prepared.entity, model: coordinator.model)
            if keyPath.isCollection { throw .unsupportedKeyPath(name, reason: "dictionary results hold single values, not to-many key paths") }
            return keyPath
        }
        if prepared.acrossKinds { return try dictionariesAcrossKinds(prepared, names: names, keyPaths: keyPaths) }
        let rows = try readFetch(storeFetch(prepared, limit: request.fetchLimit, offset: request.fetchOffset)) { session, fetch throws(FetchError) in
            try session.fetchValues(fetch, keyPaths: keyPaths)
        }
        return rows.map { values in
            var row: [String: PropertyValue] = [:]
            for (i, value) in values.enumerated() { row[names[i]] = value }
            return row
        }
    }

    /// Runs the request as its `resultType` says.
    public func execute(_ request: FetchRequest) throws(FetchError) -> FetchResult {
        switch request.resultType {
        case .managedObjects: return .objects(try fetch(request))
        case .managedObjectIDs: return .objectIDs(try fetchObjectIDs(request))
        case .count: return .count(try count(for: request))
        case .dictionaries: return .dictionaries(try fetchDictionaries(request))
        }
    }

    /// Checks `request` as a fetch would, without running it: its entity, predicate, sort
    /// descriptors and limits against the model. Throws what the fetch would throw before it
    /// reads anything.
    public func validate(_ request: FetchRequest) throws(FetchError) {
        assertOnQueue()
        _ = try prepare(request)
    }

    // MARK: Steps

    package func prepare(_ request: FetchRequest) throws(FetchError) -> PreparedFetch {
        guard let entity = coordinator.model.resolvedEntity(named: request.entityName) else { throw .unknownEntity(request.entityName) }
        guard request.fetchLimit >= 0, request.fetchOffset >= 0 else { throw .invalidRequest("fetchLimit and fetchOffset cannot be negative") }
        guard request.fetchBatchSize >= 0 else { throw .invalidRequest("fetchBatchSize cannot be negative") }
        // SQLite takes at most 64 terms in an ORDER BY (with the key that breaks ties).
        guard request.sortDescriptors.count <= Self.maxSortDescriptors else {
            throw .invalidRequest("at most \(Self.maxSortDescriptors) sort descriptors, not \(request.sortDescriptors.count)")
        }
        let checker = PredicateChecker(model: coordinator.model, root: entity, storeIdentifier: coordinator.storeIdentifier)
        let predicate = try request.predicate.map { p throws(FetchError) in try checker.checkTopLevel(p) }
        let sorts = try request.sortDescriptors.map { sort throws(FetchError) -> ResolvedSort in
            let keyPath = try ResolvedKeyPath(sort.keyPath, rootEntity: entity, model: coordinator.model)
            guard !keyPath.isCollection, case .attribute = keyPath.terminal else {
                throw .unsupportedKeyPath(sort.keyPath, reason: "sort by an attribute, or a key path through to-one relationships to one")
            }
            return ResolvedSort(keyPath: keyPath, ascending: sort.ascending, options: sort.options)
        }
        var prepared = PreparedFetch(entity: entity, predicate: predicate, sorts: sorts, request: request)
        if let timeout = request.timeout {
            let (seconds, attoseconds) = timeout.components
            let nanoseconds = max(0, seconds).multipliedReportingOverflow(by: 1_000_000_000)
            let total = nanoseconds.overflow ? Int64.max : nanoseconds.partialValue.addingReportingOverflow(max(0, attoseconds / 1_000_000_000)).partialValue
            let now = DispatchTime.now().uptimeNanoseconds
            prepared.deadline = now.addingReportingOverflow(UInt64(max(0, total))).overflow ? UInt64.max : now + UInt64(max(0, total))
        }
        if let cursor = request.after {
            guard cursor.fingerprint == FetchCursor.fingerprint(entity: prepared.orderName, sorts: request.sortDescriptors),
                  cursor.values.count == sorts.count else {
                throw .invalidRequest("the cursor belongs to another order (entity and sort keys must be those of the page it came from)")
            }
            prepared.after = cursor
        }
        return prepared
    }

    /// The most sort descriptors a fetch takes.
    public static let maxSortDescriptors = 32

    /// The cursor that continues `request` after `object` (the last object of a page).
    public func cursor(after object: ManagedObject, for request: FetchRequest) throws(FetchError) -> FetchCursor {
        assertOnQueue()
        let prepared = try prepare(request)
        let belongs = prepared.acrossKinds ? prepared.entity.kinds.contains(object.entity.index) : object.entity.index == prepared.entity.index
        guard belongs, let pk = object.objectID.primaryKey else {
            throw .invalidRequest("a cursor needs a saved \(prepared.entity.name) object")
        }
        let evaluator = PredicateEvaluator(context: self)
        let values = prepared.sorts.map { sort -> AttributeValue in
            if case .attribute(let v) = evaluator.value(sort.keyPath, from: object) { return v }
            return .null
        }
        return FetchCursor(fingerprint: FetchCursor.fingerprint(entity: prepared.orderName, sorts: request.sortDescriptors),
                           values: values, primaryKey: pk, entityName: prepared.acrossKinds ? object.entity.name : nil)
    }

    /// Whether this context holds unsaved changes to objects of these entities.
    func hasPendingChanges(in entities: Set<Int>) -> Bool {
        for list in [insertedList, updatedList, deletedList] where list.contains(where: { entities.contains($0.entity.index) }) {
            return true
        }
        return false
    }

    /// The store fetch of `prepared`'s window, with this context's plan tuning.
    func storeFetch(_ prepared: PreparedFetch, limit: Int, offset: Int) -> StoreFetch {
        StoreFetch(prepared, limit: limit, offset: offset, tuning: fetchTuning, insideWriteTransaction: readsThroughWriter)
    }

    /// `body` on a read session of the store (in this context's snapshot, if it has one).
    func readFetch<T>(_ fetch: StoreFetch, _ body: (any StoreReadSession, StoreFetch) throws(FetchError) -> T) throws(FetchError) -> T {
        do {
            return try readStore { session in try body(session, fetch) }
        } catch let error as FetchError {
            throw error
        } catch {
            throw .store(StoreError(wrapping: error))
        }
    }

    private func fetchStoredObjects(_ prepared: PreparedFetch, limit: Int, offset: Int) throws(FetchError) -> [ManagedObject] {
        if parent != nil { return try fetchThroughParent(prepared, limit: limit, offset: offset) }
        let entity = prepared.entity
        let rows = try readFetch(storeFetch(prepared, limit: limit, offset: offset)) { session, fetch throws(FetchError) in
            let rows = try session.fetchRows(fetch)
            do throws(StoreError) { try noteDestinationKinds(of: rows.lazy.map(\.1), entity: entity, session: session) } catch { throw .store(error) }
            return rows
        }
        let asFaults = prepared.request.returnsObjectsAsFaults
        return rows.map { pk, row in
            let id = ManagedObjectID(storeIdentifier: coordinator.storeIdentifier, entityName: entity.name, key: .permanent(pk))
            if let existing = lookup(id) {
                // A registered object keeps its state, as in Core Data; a data-less fault takes the row.
                if existing.isFault && existing.prefetchedRow == nil { existing.prefetchedRow = row }
                if !asFaults { existing.fireFaultIfNeeded() }
                return existing
            }
            let object = ManagedObject(entity: entity, objectID: id, context: self, isFault: true)
            object.prefetchedRow = row
            if !asFaults { materialize(object, from: row) }
            register(object)
            return object
        }
    }

    /// The stored matches, without the objects this context changed or deleted, plus every
    /// changed or inserted object that matches in memory; sorted and cut like the SQL would be.
    private func fetchIncludingPendingChanges(_ prepared: PreparedFetch) throws(FetchError) -> [ManagedObject] {
        let request = prepared.request
        let entity = prepared.entity
        let changedHere = (updatedList + deletedList).filter { $0.entity.index == entity.index }
        // A change to a related object can change which objects match; then every stored
        // candidate is re-checked in memory, and no limit may be pushed down.
        let relatedChanged = prepared.followsRelationships
            && hasPendingChanges(in: prepared.entitiesRead.subtracting([entity.index]))
        var limit = 0
        if request.fetchLimit > 0 && !relatedChanged {
            // Each changed object can push at most one stored match out of the window.
            // Saturating: the offset and limit come from callers (any Int, also from outside the program).
            let sum = request.fetchOffset.addingReportingOverflow(request.fetchLimit)
            let total = sum.partialValue.addingReportingOverflow(changedHere.count)
            limit = sum.overflow || total.overflow ? Int.max : total.partialValue
        }
        // With a related change the store's answer to the predicate is stale: read every row.
        var storedQuery = prepared
        if relatedChanged { storedQuery = PreparedFetch(entity: entity, predicate: nil, sorts: prepared.sorts, request: request, after: prepared.after, deadline: prepared.deadline) }
        let stored = try fetchStoredObjects(storedQuery, limit: limit, offset: 0)
        // They are matched and sorted in memory: a child has them filled in one question.
        if parent != nil { try loadFaultsThroughParent(stored) }
        let evaluator = PredicateEvaluator(context: self)
        var checked = 0
        func matches(_ object: ManagedObject) throws(FetchError) -> Bool {
            checked += 1
            if checked & 255 == 0 { try prepared.checkDeadline() }
            guard !object.isDeleted, !object.isInaccessible else { return false }
            if let cursor = prepared.after, !evaluator.isAfter(object, cursor, sorts: prepared.sorts) { return false }
            return prepared.predicate.map { evaluator.evaluate($0, on: object) } ?? true
        }
        var seen = Set<ObjectIdentifier>()
        var candidates: [ManagedObject] = []
        for object in stored where !object.hasChanges || object.isDeleted {
            if relatedChanged ? try matches(object) : !object.isDeleted {
                if seen.insert(ObjectIdentifier(object)).inserted { candidates.append(object) }
            }
        }
        for object in insertedList + updatedList where object.entity.index == entity.index {
            guard try matches(object) else { continue }
            if seen.insert(ObjectIdentifier(object)).inserted { candidates.append(object) }
        }
        try prepared.checkDeadline()
        candidates.sort { evaluator.precedes($0, $1, sorts: prepared.sorts) }
        let window = candidates.dropFirst(request.fetchOffset)
        return Array(request.fetchLimit > 0 ? window.prefix(request.fetchLimit) : window)
    }
}

/// The result of `execute(_:)`, by the request's result type.
public enum FetchResult {
    case objects([ManagedObject])
    case objectIDs([ManagedObjectID])
    case count(Int)
    case dictionaries([[String: PropertyValue]])
}
