import Foundation

/// What happened to an object or a section of a fetched results controller's answer
/// [NSFetchedResultsChangeType].
public enum FetchedResultsChangeType: Sendable, Hashable {
    case insert, delete, move, update
}

/// One section of a controller's answer: the objects whose first sort key has one value
/// [NSFetchedResultsSectionInfo].
public struct FetchedResultsSectionInfo: Sendable, Hashable {
    /// The first sort key's value as text, folded as that sort compares ("" for null).
    public let name: String
    public let objectIDs: [ManagedObjectID]
    public var numberOfObjects: Int { objectIDs.count }
    /// The first letter of `name`, upper-cased [indexTitle].
    public var indexTitle: String? { name.first.map { String($0).uppercased() } }
}

/// What a save did to one object of the answer, as Core Data's delegate tells it: `indexPath`
/// in the answer before the change set (delete, move, update), `newIndexPath` after it
/// (insert, move).
public struct FetchedResultsObjectChange: Sendable, Hashable {
    public let objectID: ManagedObjectID
    public let type: FetchedResultsChangeType
    public let indexPath: IndexPath?
    public let newIndexPath: IndexPath?
}

/// A section that appeared (`insert`, its index after) or went (`delete`, its index before).
public struct FetchedResultsSectionChange: Sendable, Hashable {
    public let name: String
    public let index: Int
    public let type: FetchedResultsChangeType
}

/// The changes of one or more saves to a controller's answer, in the form a table view takes in
/// one batch update: deletes and reloads at the old index paths, inserts at the new ones,
/// moves from old to new. An object is in at most one of them, except one that leaves a section
/// being deleted or enters a section being inserted: a table view moves no row there, so it is
/// a delete and an insert.
public struct FetchedResultsChangeSet: Sendable, Hashable {
    /// The history token the answer holds at after this change set.
    public let token: PersistentHistoryToken
    public let sectionChanges: [FetchedResultsSectionChange]
    public let objectChanges: [FetchedResultsObjectChange]
    /// The whole answer was replaced (`performFetch` again, or the engine could not follow).
    public let isReload: Bool
}

/// An index path of a controller's answer: `[section, item]`.
extension IndexPath {
    /// `[section, item]`.
    public init(item: Int, inSection section: Int) { self.init(indexes: [section, item]) }
    public var sectionIndex: Int { self[0] }
    public var itemIndex: Int { self[1] }
}

/// Sections, and the change set between two answers.
enum FetchedResultsLayout {
    /// The sections of `members` by the first sort key's value (nil: one section, named "").
    static func sections(_ members: [LiveMember], bySectionKey: Bool) -> [FetchedResultsSectionInfo] {
        guard bySectionKey else { return [FetchedResultsSectionInfo(name: "", objectIDs: members.map(\.id))] }
        var result: [FetchedResultsSectionInfo] = []
        var name: String?
        var ids: [ManagedObjectID] = []
        for member in members {
            let own = sectionName(member)
            if own != name, let name {
                result.append(FetchedResultsSectionInfo(name: name, objectIDs: ids))
                ids = []
            }
            name = own
            ids.append(member.id)
        }
        if let name { result.append(FetchedResultsSectionInfo(name: name, objectIDs: ids)) }
        return result
    }

    /// The section an object is in: its first sort key's value as the sort compares it (folded
    /// when the sort is case- or diacritic-insensitive, so that "a" and "A", which that sort
    /// interleaves, are one section and every section is one run of the answer).
    static func sectionName(_ member: LiveMember) -> String {
        guard case .attribute(let value)? = member.sortKeys.first else { return "" }
        switch value {
        case .null: return ""
        case .string(let s): return s
        case .integer(let i): return String(i)
        case .double(let d): return String(d == 0 ? 0 : d)  // -0 sorts with 0
        case .float(let f): return String(f == 0 ? 0 : f)
        case .boolean(let b): return b ? "1" : "0"
        case .date(let d): return RFC3339.string(from: d)
        case .decimal(let d): return "\(d)"
        case .uuid(let u): return u.uuidString
        case .uri(let u): return u.absoluteString
        case .binary(let b): return b.base64EncodedString()
        }
    }

    /// The change set that turns `old` into `new`: sections by name; objects deleted, inserted,
    /// moved (to another section, or out of the longest run that kept its order) and updated
    /// (kept in place, with a different rendering).
    static func changes(from old: [LiveMember], to new: [LiveMember], bySectionKey: Bool,
                        token: PersistentHistoryToken) -> FetchedResultsChangeSet {
        let oldSections = sections(old, bySectionKey: bySectionKey)
        let newSections = sections(new, bySectionKey: bySectionKey)
        let oldNames = Set(oldSections.map(\.name)), newNames = Set(newSections.map(\.name))
        var sectionChanges: [FetchedResultsSectionChange] = []
        for (i, section) in oldSections.enumerated() where !newNames.contains(section.name) {
            sectionChanges.append(FetchedResultsSectionChange(name: section.name, index: i, type: .delete))
        }
        for (i, section) in newSections.enumerated() where !oldNames.contains(section.name) {
            sectionChanges.append(FetchedResultsSectionChange(name: section.name, index: i, type: .insert))
        }

        func paths(_ sections: [FetchedResultsSectionInfo]) -> [ManagedObjectID: (path: IndexPath, section: String, global: Int)] {
            var result: [ManagedObjectID: (path: IndexPath, section: String, global: Int)] = [:]
            var global = 0
            for (s, section) in sections.enumerated() {
                for (i, id) in section.objectIDs.enumerated() {
                    result[id] = (IndexPath(item: i, inSection: s), section.name, global)
                    global += 1
                }
            }
            return result
        }
        let before = paths(oldSections), after = paths(newSections)
        var objectChanges: [FetchedResultsObjectChange] = []
        for member in old where after[member.id] == nil {
            objectChanges.append(FetchedResultsObjectChange(objectID: member.id, type: .delete, indexPath: before[member.id]?.path, newIndexPath: nil))
        }
        // Kept objects: those in the same section and in the longest run of unchanged order stay.
        let kept = old.filter { after[$0.id] != nil }
        let staying = LiveDiff.longestIncreasingSubsequence(kept.map { after[$0.id]?.global ?? 0 })
        var newByID: [ManagedObjectID: LiveMember] = [:]
        for member in new { newByID[member.id] = member }
        for (k, member) in kept.enumerated() {
            guard let from = before[member.id], let to = after[member.id] else { continue }
            if (!newNames.contains(from.section) || !oldNames.contains(to.section)) {
                objectChanges.append(FetchedResultsObjectChange(objectID: member.id, type: .delete, indexPath: from.path, newIndexPath: nil))
                objectChanges.append(FetchedResultsObjectChange(objectID: member.id, type: .insert, indexPath: nil, newIndexPath: to.path))
            } else if from.section != to.section || !staying.contains(k) {
                objectChanges.append(FetchedResultsObjectChange(objectID: member.id, type: .move, indexPath: from.path, newIndexPath: to.path))
            } else if let now = newByID[member.id], now !== member, now.payload != member.payload {
                objectChanges.append(FetchedResultsObjectChange(objectID: member.id, type: .update, indexPath: from.path, newIndexPath: to.path))
            }
        }
        for member in new where before[member.id] == nil {
            objectChanges.append(FetchedResultsObjectChange(objectID: member.id, type: .insert, indexPath: nil, newIndexPath: after[member.id]?.path))
        }
        return FetchedResultsChangeSet(token: token, sectionChanges: sectionChanges, objectChanges: objectChanges, isReload: false)
    }
}
