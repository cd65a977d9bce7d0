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
            // A constraint a parent declared holds across its kinds: their values are compared
            // with each other (once, from whichever kind comes first).
            let owner = destination.schema[entity.uniquenessOwners[c]]
            if let duplicate = try duplicate(under: constraint, owner: owner) {
                let reason = "\(owner.name): uniqueness constraint (\(constraint.joined(separator: ", "))) cannot be added: \(duplicate)"
                if !refusals.contains(reason) { refuse(reason) }
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

    /// Objects that would break the new uniqueness `constraint` of `owner` once migrated,
    /// described; nil when there are none (or no data to read). The objects are those of
    /// every kind of `owner` that the store already has.
    private func duplicate(under constraint: [String], owner: Entity) throws(StoreError) -> String? {
        guard let data else { return nil }
        var parts: [(entity: Entity, values: [MigrationValue])] = []
        for kind in (owner.isSingleKind ? [owner.index] : owner.kinds).map({ destination.schema[$0] }) {
            guard let old = match.sourceEntity(of: kind) else { continue }
            guard let values = migrationValues(constraint, of: kind, from: old) else { return nil }
            parts.append((old, values))
        }
        guard let found = try data.firstDuplicate(across: parts) else { return nil }
        let shared = zip(constraint, found.values).map { "\($0) = \(MigrationStep.text($1))" }.joined(separator: ", ")
        return "\(found.count) objects share \(shared)"
    }

    /// How each value of `constraint` is read for `entity`'s objects as they will be: a kept
    /// column, a column whose NULLs take the default, or a new attribute's default. Nil when
    /// no check applies (a type change, refused elsewhere).
    private func migrationValues(_ constraint: [String], of entity: Entity, from old: Entity) -> [MigrationValue]? {
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
        return values
    }
}
