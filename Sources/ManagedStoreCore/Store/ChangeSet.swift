/// Everything one save writes, as plain values: what a context hands the store.
///
/// IDs may be temporary; the writer gives each inserted object its primary key and maps every
/// reference to a temporary ID onto it.
package struct ChangeSet: Sendable {
    package struct Insert: Sendable {
        package let id: ManagedObjectID
        package let entity: Entity
        package let attributes: [AttributeValue]
        /// The object's relationships as it holds them (shared, not copied: a bulk insert makes
        /// one of these per object); the stored to-one keys are read from them.
        let relationships: [RelationshipState]

        /// The target of stored to-one key `position` (of `entity.foreignKeyRelationships`).
        package func foreignKey(at position: Int) -> ManagedObjectID? {
            if case .toOne(let id) = relationships[entity.foreignKeyRelationships[position]] { return id }
            return nil
        }

        var refersToObjects: Bool {
            entity.foreignKeyRelationships.indices.contains { foreignKey(at: $0) != nil }
        }
    }

    package struct Update: Sendable {
        package let id: ManagedObjectID
        package let entity: Entity
        /// The version the context read; the store must still hold it.
        package let baseVersion: Int64
        /// Every attribute's current value, and which of them changed.
        package let attributes: [AttributeValue]
        package let changedAttributes: [Int]
        /// Every stored to-one key's current target (aligned with `entity.foreignKeyRelationships`)
        /// and the positions that changed.
        package let foreignKeys: [ManagedObjectID?]
        package let changedForeignKeys: [Int]
    }

    package struct Delete: Sendable {
        package let id: ManagedObjectID
        package let entity: Entity
        package let baseVersion: Int64
    }

    /// One link of a many-to-many relationship: `a` and `b` are the objects in the order the
    /// link list keeps them (`RelationshipStorage.joinTable`).
    package struct Link: Sendable, Hashable {
        /// The link list's name, shared by the relationship and its inverse.
        package let table: String
        package let a: ManagedObjectID
        package let b: ManagedObjectID
        /// The relationship's name, for error messages.
        package let relationship: String

        package static func == (l: Link, r: Link) -> Bool { l.table == r.table && l.a == r.a && l.b == r.b }
        package func hash(into hasher: inout Hasher) { hasher.combine(table); hasher.combine(a); hasher.combine(b) }
    }

    /// The whole order of one ordered to-many relationship of one object, written after every
    /// insert, update and link of the save: member `i` gets position `i`. IDs may be temporary.
    package struct Ordering: Sendable {
        package let owner: ManagedObjectID
        package let entity: Entity
        package let relationship: Int
        package let members: [ManagedObjectID]
    }

    /// An object whose version must still be the one a change was based on, although this
    /// save writes nothing of it (`ManagedObject.baseVersion`).
    package struct VersionCheck: Sendable {
        package let id: ManagedObjectID
        package let entity: Entity
        package let baseVersion: Int64
    }

    /// What the save records in the persistent history (nil: it records nothing).
    package var history: HistoryDraft?

    package var inserts: [Insert] = []
    package var versionChecks: [VersionCheck] = []
    package var updates: [Update] = []
    package var deletes: [Delete] = []
    package var addedLinks: Set<Link> = []
    package var removedLinks: Set<Link> = []
    package var orderings: [Ordering] = []

    /// Whether anything written refers to another object (links, or stored to-one keys).
    package var refersToObjects: Bool {
        if !addedLinks.isEmpty || !removedLinks.isEmpty || !orderings.isEmpty { return true }
        // By index: `contains` would copy each element (and retain its arrays) for the test.
        for i in updates.indices where !updates[i].changedForeignKeys.isEmpty { return true }
        for i in inserts.indices where inserts[i].refersToObjects { return true }
        return false
    }

    var isEmpty: Bool {
        inserts.isEmpty && updates.isEmpty && deletes.isEmpty && addedLinks.isEmpty && removedLinks.isEmpty && orderings.isEmpty
    }
}

/// Why the store refused a change set; the transaction was rolled back.
package enum ChangeSetRejection: Error {
    /// Objects whose stored version is not the base version (row nil: deleted in the store),
    /// and uniqueness violations: all of them, so a client sees every conflict at once.
    case conflicts(versions: [(id: ManagedObjectID, row: StoredRow?)], constraints: [ConstraintConflict])
    /// References to objects that do not exist (or are deleted by this same save).
    case invalidReferences([(owner: ManagedObjectID, relationship: String, target: ManagedObjectID)])
    /// The store failed underneath.
    case store(StoreError)
}

/// The history record of one save, before the store gives it a token and its inserted objects
/// their keys: what the saving context knows of each object it changed.
package struct HistoryDraft: Sendable {
    package struct Entry: Sendable {
        package let id: ManagedObjectID
        package let entity: Entity
        package let type: PersistentHistoryChangeType
        /// Names of the properties changed (empty for inserts and deletes).
        let properties: [String]
        /// Values before the change, in property order; destinations may be temporary IDs of
        /// objects inserted by the same save.
        package let previous: [(name: String, value: Previous)]
    }

    package enum Previous: Sendable {
        case attribute(AttributeValue)
        case destinations(added: [ManagedObjectID], removed: [ManagedObjectID])
    }

    package let author: String?
    package let contextName: String?
    package var entries: [Entry] = []
}
