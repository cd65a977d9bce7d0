// Entity inheritance [NSEntityDescription.superentity], resolved once when a model is built.
//
// Each entity is stored on its own, with every property it inherits: a sub-entity's
// description, as the stores, contexts and the API see it (`ManagedObjectModel.entities`), is
// its ancestors' attributes, relationships, uniqueness constraints and indexes, root first,
// then its own. Because inherited properties come first and in the same order, a property has
// the same index in an entity and in every sub-entity: a key path resolved against a parent
// entity reads the same slot of a sub-entity's object. What holds a hierarchy together is
// kept beside (`Entity.kinds`, `Entity.uniquenessOwners`): a fetch of a parent entity
// gathers the objects of each of its kinds, and a uniqueness constraint spans every kind of
// the entity that declared it.

/// The parents of a set of entity descriptions, checked: every parent exists and no entity is
/// its own ancestor.
struct EntityInheritance {
    /// Per entity (in the given order): its ancestors' positions, root first.
    let ancestors: [[Int]]
    let problems: [ModelProblem]

    init(_ entities: [EntityDescription]) {
        var position: [String: Int] = [:]
        for (i, entity) in entities.enumerated() where position[entity.name] == nil { position[entity.name] = i }
        var problems: [ModelProblem] = []
        var ancestors = [[Int]](repeating: [], count: entities.count)
        for (i, entity) in entities.enumerated() {
            var chain: [Int] = []
            var current = entity.parent
            while let name = current {
                guard let p = position[name] else {
                    if chain.isEmpty { problems.append(ModelProblem(entity: entity.name, message: "unknown parent entity '\(name)'")) }
                    chain = []
                    break
                }
                if p == i || chain.contains(p) {
                    problems.append(ModelProblem(entity: entity.name, message: "inherits from itself (through \(([entity.name] + chain.reversed().map { entities[$0].name } + [name]).joined(separator: " -> ")))"))
                    chain = []
                    break
                }
                chain.append(p)
                current = entities[p].parent
            }
            ancestors[i] = chain.reversed()
        }
        self.ancestors = ancestors
        self.problems = problems
    }

    /// Each entity with everything it inherits, root first, then its own.
    func flattened(_ entities: [EntityDescription]) -> [EntityDescription] {
        entities.enumerated().map { i, entity in
            guard !ancestors[i].isEmpty else { return entity }
            var whole = entity
            let chain = ancestors[i].map { entities[$0] }
            whole.attributes = chain.flatMap(\.attributes) + entity.attributes
            whole.relationships = chain.flatMap(\.relationships) + entity.relationships
            whole.uniquenessConstraints = chain.flatMap(\.uniquenessConstraints) + entity.uniquenessConstraints
            whole.indexes = chain.flatMap(\.indexes) + entity.indexes
            whole.fetchedProperties = chain.flatMap(\.fetchedProperties) + entity.fetchedProperties
            return whole
        }
    }
}

/// Where an entity sits in its hierarchy, by entity index (`ManagedObjectModel.schema`).
package struct EntityHierarchyPlace: Sendable {
    /// The entity it inherits from, if any.
    package let parent: Int?
    /// The entities whose objects a fetch of this one returns: itself unless abstract, and
    /// every concrete entity below it, in model order.
    package let kinds: [Int]
    /// Per uniqueness constraint (`Entity.uniquenessConstraints`): the entity that declared
    /// it. Its values must be unique across every kind of that entity.
    package let uniquenessOwners: [Int]
    /// The root of its hierarchy: every entity of the hierarchy takes its keys from the root's
    /// sequence, so a key names one object in the whole hierarchy (as Core Data's Z_PK does),
    /// and a relationship to a parent entity can hold just the key.
    package let keyRoot: Int
    /// Every entity of its hierarchy (abstract ones too), root first, in model order: the
    /// sequences a key allocation takes the largest of, since stores made before keys were
    /// shared kept one per entity.
    package let keySharers: [Int]

    static func places(of entities: [EntityDescription], inheritance: EntityInheritance) -> [EntityHierarchyPlace] {
        entities.indices.map { i in
            let parent = inheritance.ancestors[i].last
            let kinds = entities.indices.filter { k in
                !entities[k].isAbstract && (k == i || inheritance.ancestors[k].contains(i))
            }
            var owners: [Int] = []
            for declaring in inheritance.ancestors[i] + [i] {
                owners += Array(repeating: declaring, count: entities[declaring].uniquenessConstraints.count)
            }
            let root = inheritance.ancestors[i].first ?? i
            let sharers = entities.indices.filter { (inheritance.ancestors[$0].first ?? $0) == root }
            return EntityHierarchyPlace(parent: parent, kinds: kinds, uniquenessOwners: owners,
                                        keyRoot: root, keySharers: sharers)
        }
    }
}
