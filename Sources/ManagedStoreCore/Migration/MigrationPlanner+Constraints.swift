// Uniqueness constraints and indexes in a lightweight migration: compared by their property
// names, a new constraint checked against the stored data.


extension MigrationPlanner {
    /// Compares the lists under the new property names: a list naming a removed property is gone.
    mutating func planConstraintsAndIndexes(of entity: Entity, from old: Entity) throws(StoreError) {
        let match = self.match
        let renamed = { (names: [String]) -> [String]? in
            var result: [String] = []
            for name in names {
                guard let now = match.destinationPropertyName(name, of: old) else { return nil }
                result.append(now)
            }
            return result
        }
        let oldConstraints = old.descriptionValue.uniquenessConstraints, newConstraints = entity.descriptionValue.uniquenessConstraints
        for constraint in oldConstraints where renamed(constraint).map({ !newConstraints.contains($0) }) ?? true {
            steps.append(.dropUniquenessConstraint(entity: entity.name, properties: renamed(constraint) ?? constraint))
        }
        let kept = oldConstraints.compactMap(renamed)
        for (c, constraint) in newConstraints.enumerated() where !kept.contains(constraint) {
            if let reason = try spanningProblem(constraint, owner: destination.schema[entity.uniquenessOwners[c]]) {
                if !refusals.contains(reason) { refuse(reason) }
            } else if let duplicate = try duplicate(under: constraint, of: entity, from: old) {
                refuse("\(entity.name): uniqueness constraint (\(constraint.joined(separator: ", "))) cannot be added: \(duplicate)")
            } else {
                steps.append(.addUniquenessConstraint(entity: entity.name, properties: constraint))
            }
        }
        let oldIndexes = old.descriptionValue.indexes, newIndexes = entity.descriptionValue.indexes
        for index in oldIndexes where renamed(index).map({ !newIndexes.contains($0) }) ?? true {
            steps.append(.dropIndex(entity: entity.name, properties: renamed(index) ?? index))
        }
        let keptIndexes = oldIndexes.compactMap(renamed)
        for index in newIndexes where !keptIndexes.contains(index) {
            steps.append(.addIndex(entity: entity.name, properties: index))
        }
    }

    /// A constraint of an entity with sub-entities holds across all of them, which no unique
    /// index can check: when it is new to a kind and more than one kind has stored objects,
    /// their values are not compared with each other here yet, so the migration is refused.
    private mutating func spanningProblem(_ constraint: [String], owner: Entity) throws(StoreError) -> String? {
        guard owner.kinds.count > 1 else { return nil }
        var holding: [String] = []
        for kind in owner.kinds.map({ destination.schema[$0] }) {
            if let old = match.sourceEntity(of: kind), try objectCount(old) > 0 { holding.append(kind.name) }
        }
        guard holding.count > 1 else { return nil }
        return "\(owner.name): uniqueness constraint (\(constraint.joined(separator: ", "))) spans \(holding.joined(separator: ", ")), "
            + "which already hold objects: a migration does not compare their values across sub-entities yet"
    }

    /// Objects that would break the new uniqueness `constraint` once migrated, described;
    /// nil when there are none (or no data to read). Each value is read as it will be: a
    /// kept column, a column whose NULLs take the default, or a new attribute's default.
    private func duplicate(under constraint: [String], of entity: Entity, from old: Entity) throws(StoreError) -> String? {
        guard let data else { return nil }
        var values: [MigrationValue] = []
        for name in constraint {
            guard let a = entity.attributeIndex(name) else { return nil }  // the model checker allows attributes only
            let attribute = entity.attributes[a]
            if let oldName = match.sourcePropertyName(name, of: entity), let o = old.attributeIndex(oldName) {
                let was = old.attributes[o]
                guard was.type == attribute.type else { return nil }  // refused as a type change
                if was.isOptional && !attribute.isOptional && !attribute.defaultValue.isNull {
                    values.append(.columnOrDefault(oldName, attribute.defaultValue, attribute.type))
                } else {
                    values.append(.column(oldName, attribute.type))
                }
            } else {
                values.append(.constant(attribute.defaultValue, attribute.type))
            }
        }
        guard let found = try data.firstDuplicate(old, values) else { return nil }
        let shared = zip(constraint, found.values).map { "\($0) = \(MigrationStep.text($1))" }.joined(separator: ", ")
        return "\(found.count) objects share \(shared)"
    }
}
