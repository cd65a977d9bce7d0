/// The kinds of the keys a context has read in to-ones to parent entities (Folder.featured ->
/// Link, whose objects may be Videos): what `materialize` names each destination by, without a
/// read per object. Fetches and fault batches fill it for all their rows in one read per parent
/// entity, in the same read as the rows.
///
/// A key's kind never changes once committed: every entity of a hierarchy takes its keys from
/// one sequence, and a key is handed out once. Only a read of uncommitted rows (the writer's,
/// inside a save that may still roll back and hand the key out again) could be wrong, so a
/// context that reads through the writer keeps nothing here.
struct DestinationKindCache {
    private struct Key: Hashable {
        let root: Int
        let key: Int64
    }

    private var kinds: [Key: Int] = [:]
    /// Past this many keys the cache starts over: a read context that is never reset must not
    /// grow without bound.
    static let limit = 100_000

    func kind(of key: Int64, in destination: Entity) -> Int? { kinds[Key(root: destination.keyRoot, key: key)] }

    mutating func note(_ found: [Int64: Int], in destination: Entity) {
        if kinds.count + found.count > Self.limit { kinds.removeAll(keepingCapacity: true) }
        for (key, kind) in found { kinds[Key(root: destination.keyRoot, key: key)] = kind }
    }

    mutating func removeAll() { if !kinds.isEmpty { kinds.removeAll() } }
}

extension ManagedObjectContext {
    /// Whether what this context reads is committed, so that the kinds it finds may be kept.
    private var keepsDestinationKinds: Bool { !readsThroughWriter && activeGroup == nil }

    /// Reads, in `session`, the kinds of the keys `rows` (of `entity`) hold in to-ones to
    /// parent entities that the cache does not know yet. Nothing to do (and no cost beyond a
    /// test) for an entity without such to-ones.
    func noteDestinationKinds<Rows: Sequence<StoredRow>>(of rows: Rows, entity: Entity, session: any StoreReadSession) throws(StoreError) {
        let toParents = coordinator.model.foreignKeysToParents[entity.index]
        guard !toParents.isEmpty, keepsDestinationKinds else { return }
        for (position, destinationIndex) in toParents {
            let destination = coordinator.model.schema[destinationIndex]
            var unknown: Set<Int64> = []
            for row in rows {
                if let key = row.foreignKeys[position], destinationKinds.kind(of: key, in: destination) == nil { unknown.insert(key) }
            }
            guard !unknown.isEmpty else { continue }
            destinationKinds.note(try session.kinds(ofKeys: Array(unknown), in: destination, model: coordinator.model), in: destination)
        }
    }

    /// One object's stored row, with the kinds of its keys to parent entities read in the
    /// same read (`noteDestinationKinds`): what a fault or a refresh materializes.
    func readStoredRow(of entity: Entity, key: Int64) throws -> StoredRow? {
        try readStore { session in
            let row = try session.row(of: entity, key: key)
            if let row { try noteDestinationKinds(of: CollectionOfOne(row), entity: entity, session: session) }
            return row
        }
    }

    /// The ID of the object `key` names among the kinds of `destination` (a parent entity):
    /// from the cache, else read from the store as this context reads it.
    func destinationID(_ key: Int64, of destination: Entity) -> ManagedObjectID {
        if let kind = destinationKinds.kind(of: key, in: destination) {
            return ManagedObjectID(storeIdentifier: coordinator.storeIdentifier, entityName: coordinator.model.schema[kind].name, key: .permanent(key))
        }
        do {
            let id = try readStore { session in try coordinator.destinationIDs.ids([key], of: destination, session: session)[0] }
            if keepsDestinationKinds, let kind = coordinator.model.resolvedEntity(named: id.entityName), kind.index != destination.index {
                destinationKinds.note([key: kind.index], in: destination)
            }
            return id
        } catch {
            // Materializing cannot throw: a store that fails this read has failed the fault
            // firing it, which traps the same way (`fireFault`). No request reaches it with a
            // working store; `existingObject(with:)` is the throwing way in.
            preconditionFailure("ManagedStore could not read which kind of \(destination.name) key \(key) names: \(error)")
        }
    }
}
