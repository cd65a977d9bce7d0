/// The uniqueness constraints a change set must keep, as every store checks them: the groups of
/// equal constrained values among its inserted and updated objects (a null among a
/// constraint's values never conflicts), which objects leave their values behind (deleted, or
/// updated to others), and the conflict a group makes with the stored objects that hold its
/// values.
package struct UniquenessCheck {
    package struct Group: Hashable {
        /// The entity that declared the constraint: objects of all its kinds (`Entity.kinds`)
        /// share the group, and the stored objects of every kind count against it.
        package let entity: Int
        /// The constraint's position in `Entity.uniquenessConstraints`.
        package let constraint: Int
        package let values: [AttributeValue]

        // Values as the stores' unique indexes tell them apart: strings by code point.
        package static func == (a: Group, b: Group) -> Bool {
            a.entity == b.entity && a.constraint == b.constraint && a.values.count == b.values.count
                && zip(a.values, b.values).allSatisfy { StoredValueIdentity.same($0, $1) }
        }

        package func hash(into hasher: inout Hasher) {
            hasher.combine(entity)
            hasher.combine(constraint)
            for value in values { StoredValueIdentity.hash(value, into: &hasher) }
        }
    }

    /// The groups in the order the change set first names them.
    package private(set) var groups: [Group] = []
    /// The save's objects of each group.
    package private(set) var members: [Group: [ManagedObjectID]] = [:]
    /// Objects whose stored values this save replaces or deletes: a stored row of theirs does
    /// not conflict.
    package private(set) var leaving: Set<ManagedObjectID>

    package init(_ changes: ChangeSet) {
        leaving = Set(changes.deletes.map(\.id))
        for insert in changes.inserts { add(insert.id, insert.entity, insert.attributes) }
        for update in changes.updates where !update.entity.uniquenessConstraints.isEmpty {
            add(update.id, update.entity, update.attributes)
            leaving.insert(update.id)
        }
    }

    private mutating func add(_ objectID: ManagedObjectID, _ entity: Entity, _ attributes: [AttributeValue]) {
        for (c, constraint) in entity.uniquenessConstraints.enumerated() {
            let values = constraint.map { attributes[$0] }
            if values.contains(where: \.isNull) { continue }
            // An inherited constraint has the same position, over the same attributes, in the
            // entity that declared it (EntityInheritance.swift).
            let group = Group(entity: entity.uniquenessOwners[c], constraint: c, values: values)
            if members[group] == nil { groups.append(group) }
            members[group, default: []].append(objectID)
        }
    }

    /// The conflict of `group`, given the stored objects holding its values (`stored`, of each
    /// of the group entity's kinds in turn, in key order, leaving ones included); nil when it
    /// has none.
    package func conflict(_ group: Group, stored: [ManagedObjectID], model: ManagedObjectModel) -> ConstraintConflict? {
        let entity = model.schema[group.entity]
        let constraint = entity.uniquenessConstraints[group.constraint]
        let objects = members[group] ?? []
        // Stored holders this save does not take the values from; an updated member keeps
        // them (its update leaves them as they were), so it is one of the holders too.
        let staying = stored.filter { !leaving.contains($0) }
        let holders = stored.filter { !leaving.contains($0) || objects.contains($0) }
        guard objects.count > 1 || !staying.isEmpty else { return nil }
        var values: [String: AttributeValue] = [:]
        for (i, a) in constraint.enumerated() { values[entity.attributes[a].name] = group.values[i] }
        return ConstraintConflict(entityName: entity.name, constraint: constraint.map { entity.attributes[$0].name }, values: values,
                                  conflictingObjects: holders, objects: objects)
    }
}
