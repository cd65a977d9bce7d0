import Foundation

/// The answer of one distinct live query, kept current by the engine (LiveQueryEngine.swift),
/// with the answers it had before (for resumes and for subscribers that fell behind). Touched
/// only on the engine's queue, and in the engine's read snapshots.
final class LiveWindow {
    struct PastAnswer {
        /// The token from which this answer held (until the next one's).
        let since: PersistentHistoryToken
        let members: [LiveMember]
        let more: Bool
    }

    /// Older answers kept for resumes: at most this many.
    static let pastAnswersKept = 32

    let key: LiveWindowKey
    let spec: LiveQuerySpec
    let prepared: PreparedFetch
    /// The entities whose objects can be members (the fetched entity, and its sub-entities).
    let kinds: Set<String>
    /// Whether the predicate or a sort follows a relationship: then a member's place depends on
    /// other objects, and the window is fetched again when a commit touches `pathEntities`.
    let followsRelationships: Bool
    /// Every entity the predicate and sorts read, with their sub-entities.
    let pathEntities: Set<String>
    /// `attribute == constant` that every member meets (LiveWindowIndex.swift).
    let equalityGuard: LiveEqualityGuard?

    private(set) var members: [LiveMember]
    private(set) var more: Bool
    /// The token from which the current answer holds.
    private(set) var since: PersistentHistoryToken
    private(set) var past: [PastAnswer] = []
    var subscribers: [LiveSubscription] = []
    /// When the last subscriber left (the window is kept a while for resumes).
    var unwatchedSince: DispatchTime?

    /// An empty window at `token`: `load` fills it.
    init(spec: LiveQuerySpec, prepared: PreparedFetch, model: ManagedObjectModel, at token: PersistentHistoryToken) {
        self.key = spec.windowKey
        self.spec = spec
        self.prepared = prepared
        let schema = model.schema
        kinds = Set(spec.request.includesSubentities ? prepared.entity.kinds.map { schema[$0].name } : [prepared.entity.name])
        followsRelationships = prepared.followsRelationships
        pathEntities = Set(prepared.entitiesRead.flatMap { schema[$0].kinds.map { schema[$0].name } })
        equalityGuard = prepared.followsRelationships ? nil : LiveEqualityGuard.of(prepared.predicate, in: schema)
        self.members = []
        self.more = false
        self.since = token
    }

    /// Fetches the first answer (in the snapshot of the window's token).
    func load(in context: ManagedObjectContext) throws {
        (members, more) = try fetchAnswer(in: context)
    }

    /// Replaces the answer from `token` on, keeping the one it replaces for resumes.
    func replace(members newMembers: [LiveMember], more newMore: Bool, at token: PersistentHistoryToken) {
        past.append(PastAnswer(since: since, members: members, more: more))
        if past.count > Self.pastAnswersKept { past.removeFirst(past.count - Self.pastAnswersKept) }
        members = newMembers
        more = newMore
        since = token
    }

    /// The answer that held at `token`, if this window still knows it: the current one from
    /// `since` on, else a past one.
    func answer(at token: PersistentHistoryToken) -> (members: [LiveMember], more: Bool)? {
        if token >= since { return (members, more) }
        guard let first = past.first, token >= first.since else { return nil }
        let index = past.lastIndex { $0.since <= token } ?? 0
        return (past[index].members, past[index].more)
    }

    // MARK: Computing answers (in the engine's read snapshot, on its read context's queue)

    /// Whether `a` comes before `b` in the query's order: the sorts, then the primary key.
    func precedes(_ a: LiveMember, _ b: LiveMember) -> Bool {
        for (i, sort) in prepared.sorts.enumerated() {
            let order = PredicateSemantics.sortOrder(a.sortKeys[i], b.sortKeys[i])
            if order != .orderedSame { return sort.ascending ? order == .orderedAscending : order == .orderedDescending }
        }
        return (a.id.primaryKey ?? 0) < (b.id.primaryKey ?? 0)
    }

    /// `object` as a member: its sort values and its rendering.
    func member(_ object: ManagedObject, _ evaluator: PredicateEvaluator<ContextGraph>) throws -> LiveMember {
        var values: [AttributeValue] = []
        var keys: [PredicateValue] = []
        values.reserveCapacity(prepared.sorts.count)
        keys.reserveCapacity(prepared.sorts.count)
        for sort in prepared.sorts {
            let value = evaluator.value(sort.keyPath, from: object)
            if case .attribute(let attribute) = value { values.append(attribute) } else { values.append(.null) }
            keys.append(PredicateSemantics.folded(value, sort.options))
        }
        var payload = try spec.render(object)
        if spec.rendersFirstSortValue, let first = values.first { payload += Array(String(describing: first).utf8) }
        return LiveMember(id: object.objectID, sortValues: values, sortKeys: keys, payload: payload)
    }

    /// The answer fetched whole: the first `limit` matches, and whether more exist.
    func fetchAnswer(in context: ManagedObjectContext) throws -> (members: [LiveMember], more: Bool) {
        var request = spec.request
        request.fetchLimit = spec.limit + 1
        request.fetchOffset = 0
        request.after = nil
        request.includesPendingChanges = false
        request.fetchBatchSize = 0
        let objects = try context.fetch(request)
        let evaluator = PredicateEvaluator(context: context)
        let members = try objects.prefix(spec.limit).map { try member($0, evaluator) }
        return (members, objects.count > spec.limit)
    }

    /// The answer after the objects `changed` (of `kinds`) changed, without fetching the whole
    /// answer again: each changed object is read once (the context keeps it for every window),
    /// matched by the predicate in memory and placed by the sort; members unchanged keep their
    /// place. A limited window that lost members is refilled by a keyset fetch after its old
    /// last member (the objects past it are the ones that could move up). Nil when nothing
    /// changed.
    /// `mayHaveLeft`: one of `changed` may have matched before, past the last member of a full
    /// window; whether more matches exist is then asked of the store.
    func incrementalAnswer(changed: [ManagedObjectID], mayHaveLeft: Bool, in context: ManagedObjectContext) throws -> (members: [LiveMember], more: Bool)? {
        let changedSet = Set(changed)
        let evaluator = PredicateEvaluator(context: context)
        var candidates: [LiveMember] = []
        for id in changed {
            let object = context.object(with: id)
            object.fireFaultIfNeeded()
            guard !object.isInaccessible else { continue }  // deleted
            if let predicate = prepared.predicate, !evaluator.evaluate(predicate, on: object) { continue }
            candidates.append(try member(object, evaluator))
        }
        let wasMember = members.contains { changedSet.contains($0.id) }
        let moreInDoubt = more && mayHaveLeft
        guard wasMember || !candidates.isEmpty || moreInDoubt else { return nil }
        candidates.sort(by: precedes)
        let kept = members.filter { !changedSet.contains($0.id) }
        let merged = Self.merge(kept, candidates, by: precedes)

        let limit = spec.limit
        guard more, let boundary = members.last else {
            return (Array(merged.prefix(limit)), merged.count > limit)
        }
        // Objects past the old last member were not held; those that match still follow it.
        // What is at or before it is known; if that is short of the limit, fetch what follows.
        let known = merged.prefix { !precedes(boundary, $0) }
        if known.count > limit || (known.count == limit && (merged.count > limit || !moreInDoubt)) {
            return (Array(known.prefix(limit)), true)
        }
        let missing = limit - known.count
        var request = spec.request
        request.fetchLimit = missing + 1
        request.fetchOffset = 0
        request.includesPendingChanges = false
        request.fetchBatchSize = 0
        request.after = FetchCursor(fingerprint: FetchCursor.fingerprint(entity: prepared.orderName, sorts: spec.request.sortDescriptors),
                                    values: boundary.sortValues, primaryKey: boundary.id.primaryKey ?? 0,
                                    entityName: prepared.acrossKinds ? boundary.id.entityName : nil)
        let following = try context.fetch(request)
        var result = Array(known)
        for object in following.prefix(missing) { result.append(try member(object, evaluator)) }
        return (result, following.count > missing)
    }

    /// Two sorted lists as one.
    private static func merge(_ a: [LiveMember], _ b: [LiveMember], by precedes: (LiveMember, LiveMember) -> Bool) -> [LiveMember] {
        guard !b.isEmpty else { return a }
        var result: [LiveMember] = []
        result.reserveCapacity(a.count + b.count)
        var i = 0, j = 0
        while i < a.count && j < b.count {
            if precedes(b[j], a[i]) { result.append(b[j]); j += 1 } else { result.append(a[i]); i += 1 }
        }
        result += a[i...]
        result += b[j...]
        return result
    }
}
