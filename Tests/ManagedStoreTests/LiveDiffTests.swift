import Foundation
import Testing
@testable import ManagedStoreCore

/// The one routine that turns an old live answer into a new one as steps (`LiveDiff`): applied
/// in order, the steps give the new answer, with the fewest moves and an update only where the
/// rendering changed.
@Suite struct LiveDiffTests {
    private static let store = UUID()

    private func member(_ key: Int64, _ payload: String) -> LiveMember {
        LiveMember(id: ManagedObjectID(storeIdentifier: Self.store, entityName: "Task", key: .permanent(key)),
                   sortValues: [], sortKeys: [], payload: Array(payload.utf8))
    }

    @Test("random old and new answers: the steps give the new answer, moves are survivors minus a longest increasing run, updates only where the rendering changed")
    func randomAnswers() throws {
        var generator = PredicateFuzzTests.SplitMix64(seed: 39)
        for round in 0..<2_000 {
            let pool = Int64(Int.random(in: 0...30, using: &generator))
            let old = (1...max(1, pool)).filter { _ in Bool.random(using: &generator) }.shuffled(using: &generator)
                .map { member($0, "v1") }
            var new: [LiveMember] = []
            for key in (1...max(1, pool + 5)).shuffled(using: &generator) where Int.random(in: 0..<3, using: &generator) > 0 {
                if let kept = old.first(where: { $0.id.primaryKey == key }) {
                    // Kept as it was (the same member), or rendered anew, alike or changed.
                    switch Int.random(in: 0..<3, using: &generator) {
                    case 0: new.append(kept)
                    case 1: new.append(member(key, "v1"))
                    default: new.append(member(key, "v2"))
                    }
                } else if Bool.random(using: &generator) {
                    new.append(member(key, "v1"))
                }
            }
            let ops = LiveDiff.ops(from: old, to: new)
            let applied = try #require(LiveDiff.apply(ops, to: old), "round \(round): an index out of range")
            #expect(applied.map(\.id) == new.map(\.id), "round \(round)")
            #expect(applied.map(\.payload) == new.map(\.payload), "round \(round)")
            let survivors = old.filter { o in new.contains { $0.id == o.id } }
            let positions = survivors.map { s in new.firstIndex { $0.id == s.id }! }
            let moves = ops.filter { if case .move = $0 { return true } else { return false } }.count
            #expect(moves == survivors.count - LiveDiff.longestIncreasingSubsequence(positions).count, "round \(round)")
            let updates = ops.compactMap { op -> Int? in if case .update(let i, _) = op { return i } else { return nil } }
            let changed = new.indices.filter { j in
                old.first { $0.id == new[j].id }.map { $0.payload != new[j].payload } ?? false
            }
            #expect(updates == changed, "round \(round): updates at \(updates), changed at \(changed)")
        }
    }

    @Test("deletes come first, from the end, so each index is the old one")
    func deletesFromTheEnd() {
        let old = (1...5).map { member(Int64($0), "a") }
        let ops = LiveDiff.ops(from: old, to: [old[1], old[3]])
        let deletes = ops.compactMap { op -> Int? in if case .delete(let i) = op { return i } else { return nil } }
        #expect(deletes == [4, 2, 0])
        #expect(ops.count == 3)
    }
}
