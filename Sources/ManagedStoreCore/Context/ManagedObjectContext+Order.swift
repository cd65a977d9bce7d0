// The order of ordered to-many relationships [NSOrderedSet].
//
// Membership stays where every relationship keeps it (`ManagedObject.relationships`, a set), so
// inverse maintenance, merges and validation work as for any to-many. Beside it each object
// keeps the order it knows (`destinationOrder`): the order read from the store or given by a
// setter, with members that joined since appended. Where the two disagree, membership wins: a
// member no longer held is skipped, a member the order does not know yet goes last.

extension ManagedObjectContext {
    /// The destinations of ordered relationship `r` of `object`, in their order.
    func orderedValue(of object: ManagedObject, _ r: Int) -> [ManagedObjectID] {
        let members = toManyValue(of: object, r)
        return Self.reconcile(object.destinationOrder[r] ?? [], with: members)
    }

    /// `order` with every member not in `members` left out, and every member it lacks
    /// appended, in key order.
    static func reconcile(_ order: [ManagedObjectID], with members: Set<ManagedObjectID>) -> [ManagedObjectID] {
        var seen: Set<ManagedObjectID> = []
        var result: [ManagedObjectID] = []
        result.reserveCapacity(members.count)
        for id in order where members.contains(id) && seen.insert(id).inserted { result.append(id) }
        if result.count < members.count { result += members.filter { !seen.contains($0) }.sortedByKey() }
        return result
    }

    /// The committed order of ordered relationship `r`: what the store holds, as last read or saved.
    func committedOrder(of object: ManagedObject, _ r: Int) -> [ManagedObjectID] {
        guard case .toMany(let members) = object.committedRelationships[r] else { return [] }
        return Self.reconcile(object.committedDestinationOrder[r] ?? [], with: members)
    }

    /// Records the order a relationship was loaded with (`setLoadedRelationship`).
    func noteLoadedOrder(of object: ManagedObject, _ r: Int, stored: [ManagedObjectID]) {
        object.committedDestinationOrder[r] = stored
        object.destinationOrder[r] = stored
    }

    /// `member` joined ordered relationship `r` of `object` from the other side: it goes last.
    func noteJoined(_ member: ManagedObjectID, _ object: ManagedObject, _ r: Int) {
        var order = object.destinationOrder[r] ?? []
        order.removeAll { $0 == member }
        order.append(member)
        object.destinationOrder[r] = order
    }

    /// `member` left ordered relationship `r` of `object`.
    func noteLeft(_ member: ManagedObjectID, _ object: ManagedObject, _ r: Int) {
        object.destinationOrder[r]?.removeAll { $0 == member }
    }

    /// Drops what the object knew of its orders (it turned into a fault, or was read again).
    func forgetOrder(of object: ManagedObject) {
        object.destinationOrder = [:]
        object.committedDestinationOrder = [:]
    }

    /// Ends the object's order changes as saved (or, for a child, as handed to its parent).
    func commitOrder(of object: ManagedObject) {
        guard !object.entity.orderedRelationships.isEmpty else { return }
        for r in object.entity.orderedRelationships {
            guard case .toMany(let members) = object.relationships[r] else { continue }
            object.destinationOrder[r] = Self.reconcile(object.destinationOrder[r] ?? [], with: members)
        }
        object.committedDestinationOrder = object.destinationOrder
    }

    /// The orders the store must be told: each loaded ordered relationship of `object` whose
    /// order is not the committed one.
    func orderChanges(of object: ManagedObject) -> [(relationship: Int, members: [ManagedObjectID])] {
        var changes: [(relationship: Int, members: [ManagedObjectID])] = []
        for r in object.entity.orderedRelationships {
            guard case .toMany(let members) = object.relationships[r] else { continue }
            let now = Self.reconcile(object.destinationOrder[r] ?? [], with: members)
            let before = object.isInserted ? [] : committedOrder(of: object, r)
            if now != before { changes.append((r, now)) }
        }
        return changes
    }

    /// Whether ordered relationship `r` of `object` reads otherwise than committed: another
    /// order, or other members (which a membership check sees anyway).
    func orderChanged(of object: ManagedObject, _ r: Int) -> Bool {
        guard object.entity.relationships[r].isOrdered, case .toMany(let members) = object.relationships[r] else { return false }
        return Self.reconcile(object.destinationOrder[r] ?? [], with: members) != committedOrder(of: object, r)
    }
}
