// Keys across a hierarchy in a lightweight migration. A relationship to a parent entity holds
// only keys, and tells its destinations apart by them (`DestinationIDs`), so the kinds of its
// destination must never hold the same key. Stores keep one sequence per hierarchy, but a
// store made before they did, or an entity that joins a hierarchy in a migration, may hold
// keys made apart: the migration is refused when any of them collide.

extension MigrationPlanner {
    mutating func planSharedKeys() throws(StoreError) {
        guard let data else { return }
        var checked: Set<Int> = []
        for entity in destination.schema {
            for relationship in entity.relationships {
                let target = destination.schema[relationship.destinationIndex]
                guard !target.isSingleKind, checked.insert(target.index).inserted else { continue }
                let stored = target.kinds.compactMap { match.sourceEntity(of: destination.schema[$0]) }
                guard stored.count > 1 else { continue }
                let shared = try data.sharedKeyCount(stored)
                guard shared > 0 else { continue }
                refuse("\(entity.name).\(relationship.name): the objects of \(target.name)'s sub-entities "
                       + "(\(stored.map(\.name).joined(separator: ", "))) share \(shared == 1 ? "1 key" : "\(shared) keys"), made apart "
                       + "before they shared one sequence: a relationship to \(target.name) could not tell them apart")
            }
        }
    }
}
