/// One step that turns a live query's old answer into its new one. Steps are applied in order,
/// each index counted in the list as the steps before it left it (the contract's `diff` ops).
package enum LiveOp: Sendable {
    case delete(index: Int)
    case insert(index: Int, member: LiveMember)
    case move(from: Int, to: Int)
    /// The object at `index` changed what the query returns of it, and its place did not.
    case update(index: Int, member: LiveMember)
}

/// The one routine that turns an old answer into a new one as steps: deletes (from the end, so
/// each index is the old one), then moves of the survivors outside a longest increasing
/// subsequence of their new positions (the fewest moves that put them in order), then inserts
/// in ascending new index, then updates at their final index for survivors whose returned
/// JSON changed. A client that applies the steps in order holds the new answer.
package enum LiveDiff {
    package static func ops(from old: [LiveMember], to new: [LiveMember]) -> [LiveOp] {
        var newIndex: [ManagedObjectID: Int] = [:]
        newIndex.reserveCapacity(new.count)
        for (i, member) in new.enumerated() { newIndex[member.id] = i }

        var ops: [LiveOp] = []
        // Deletes, from the end: the indexes of those before are unchanged by each.
        var survivors: [Int] = []  // new index of each survivor, in old order
        survivors.reserveCapacity(old.count)
        for (i, member) in old.enumerated() {
            if let j = newIndex[member.id] { survivors.append(j) } else { ops.append(.delete(index: i)) }
        }
        ops[0..<ops.count].reverse()

        // Moves: survivors outside the longest increasing run stay put only relative to it.
        let staying = longestIncreasingSubsequence(survivors)
        var current = survivors  // the survivors' new indexes, in their current order
        var placed = Set(staying.map { survivors[$0] })
        let movers = survivors.indices.filter { !staying.contains($0) }.map { survivors[$0] }.sorted()
        for target in movers {
            guard let from = current.firstIndex(of: target) else { continue }
            current.remove(at: from)
            // After the placed survivor that comes last before `target` in the new order.
            var to = 0
            for (k, j) in current.enumerated() where placed.contains(j) && j < target { to = k + 1 }
            current.insert(target, at: to)
            placed.insert(target)
            if from != to { ops.append(.move(from: from, to: to)) }
        }

        // Inserts, ascending: everything before each new index is in place by then.
        let oldKeys = Set(old.map(\.id))
        for (j, member) in new.enumerated() where !oldKeys.contains(member.id) {
            ops.append(.insert(index: j, member: member))
        }

        // Updates at the final index: survivors whose returned JSON changed.
        var oldPayload: [ManagedObjectID: LiveMember] = [:]
        oldPayload.reserveCapacity(old.count)
        for member in old { oldPayload[member.id] = member }
        for (j, member) in new.enumerated() {
            if let before = oldPayload[member.id], before !== member, before.payload != member.payload {
                ops.append(.update(index: j, member: member))
            }
        }
        return ops
    }

    /// The positions in `values` of one longest strictly increasing subsequence (patience
    /// sorting, O(n log n)).
    static func longestIncreasingSubsequence(_ values: [Int]) -> Set<Int> {
        guard !values.isEmpty else { return [] }
        var tails: [Int] = []  // position of the smallest tail of a run of each length
        var previous = [Int](repeating: -1, count: values.count)
        for (i, value) in values.enumerated() {
            var low = 0, high = tails.count
            while low < high {
                let mid = (low + high) / 2
                if values[tails[mid]] < value { low = mid + 1 } else { high = mid }
            }
            if low > 0 { previous[i] = tails[low - 1] }
            if low == tails.count { tails.append(i) } else { tails[low] = i }
        }
        var result: Set<Int> = []
        var i = tails.last ?? -1
        while i >= 0 {
            result.insert(i)
            i = previous[i]
        }
        return result
    }

    /// `list` after `ops` (what a client does with a diff): for tests and for checking resumes.
    package static func apply(_ ops: [LiveOp], to list: [LiveMember]) -> [LiveMember]? {
        var list = list
        for op in ops {
            switch op {
            case .delete(let i):
                guard list.indices.contains(i) else { return nil }
                list.remove(at: i)
            case let .insert(i, member):
                guard i >= 0, i <= list.count else { return nil }
                list.insert(member, at: i)
            case let .move(from, to):
                guard list.indices.contains(from) else { return nil }
                let member = list.remove(at: from)
                guard to >= 0, to <= list.count else { return nil }
                list.insert(member, at: to)
            case let .update(i, member):
                guard list.indices.contains(i), list[i].id == member.id else { return nil }
                list[i] = member
            }
        }
        return list
    }
}
