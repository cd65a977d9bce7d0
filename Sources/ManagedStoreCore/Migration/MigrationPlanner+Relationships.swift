// Relationships in a lightweight migration, a relationship and its inverse at a time: every
// relationship has one, and where their links are stored (a foreign key on one side, or a
// join table) belongs to the pair. Which side stores them follows the names
// (`ManagedObjectModel.storage`), so a rename can move a one-to-one's links to the other
// table, or a many-to-many's to a join table of another name with its columns swapped.
//
// A pair is planned from the entities that declare it: a sub-entity shares its parent's
// relationships, and a key its parent's side keeps is a column of every table below it
// (`ManagedObjectModel.withSubentities`).


extension MigrationPlanner {
    mutating func planRelationships() throws(StoreError) {
        for entity in destination.schema {
            for relationship in entity.relationships {
                guard let inverseIndex = relationship.inverseIndex else {
                    try planOneWay(entity, relationship)
                    continue
                }
                guard destination.linkOwner(of: entity, relationship) === entity else { continue }  // inherited: planned from its parent
                let other = destination.schema[relationship.destinationIndex]
                let inverse = other.relationships[inverseIndex]
                // Each pair once, from its first side (a self-inverse relationship is its own pair).
                guard (entity.index, relationship.index) <= (other.index, inverse.index) else { continue }
                try planPair((entity, relationship), (other, inverse))
            }
        }
        for old in source.schema {
            for relationship in old.relationships {
                guard let inverseIndex = relationship.inverseIndex else {
                    if !isContinued(relationship, of: old) { planRemovedOneWay(old, relationship) }
                    continue
                }
                guard source.linkOwner(of: old, relationship) === old else { continue }  // inherited: planned from its parent
                let other = source.schema[relationship.destinationIndex]
                let inverse = other.relationships[inverseIndex]
                guard (old.index, relationship.index) <= (other.index, inverse.index) else { continue }
                if !isContinued(relationship, of: old) && !isContinued(inverse, of: other) {
                    planRemovedPair((old, relationship), (other, inverse))
                }
            }
        }
    }

    /// Whether some destination property continues the source `relationship` (as a
    /// relationship or not: a change of kind is refused from the destination's side).
    private func isContinued(_ relationship: Relationship, of entity: Entity) -> Bool {
        match.destinationEntity(of: entity) != nil && match.destinationPropertyName(relationship.name, of: entity) != nil
    }

    private mutating func planPair(_ first: (Entity, Relationship), _ second: (Entity, Relationship)) throws(StoreError) {
        // A self-inverse relationship (friends <-> friends) is both sides: look at it once.
        let isSelfInverse = first.0 === second.0 && first.1.index == second.1.index
        var refused = false
        for (entity, relationship) in isSelfInverse ? [first] : [first, second] {
            if let old = match.sourceEntity(of: entity), let oldName = match.sourcePropertyName(relationship.name, of: entity),
               old.attributeIndex(oldName) != nil {
                refuse("\(entity.name).\(relationship.name): was the attribute \(old.name).\(oldName), now a relationship, which cannot be inferred")
                refused = true
            }
        }
        guard !refused else { return }
        let oldFirst = match.sourceRelationship(of: first.1, in: first.0)
        let oldSecond = match.sourceRelationship(of: second.1, in: second.0)
        switch (oldFirst, oldSecond) {
        case (nil, nil):
            try planNewPair(first, second)
        case let (old?, nil):
            refuse(pairChange(first, was: old, other: second))
        case let (nil, old?):
            refuse(pairChange(second, was: old, other: first))
        case let (old?, oldInverse?):
            guard old.1.destinationIndex == oldInverse.0.index, old.1.inverseIndex == oldInverse.1.index else {
                refuse(pairChange(first, was: old, other: second))
                return
            }
            let sides = isSelfInverse ? [(first, old)] : [(first, old), (second, oldInverse)]
            // A to-one becoming to-many while its inverse stays to-many is inferred, as Core
            // Data infers it: the links move into a link list (`planWidening`).
            let widened = sides.firstIndex { $0.0.1.isToMany && !$0.1.1.isToMany }
            let widens = sides.count == 2 && widened != nil && sides[1 - widened!].0.1.isToMany && sides[1 - widened!].1.1.isToMany
            for ((entity, relationship), (_, was)) in sides where relationship.isToMany != was.isToMany && !widens {
                refuse("\(entity.name).\(relationship.name): changed from \(Self.kind(was)) to \(Self.kind(relationship)), which cannot be inferred")
                refused = true
            }
            // A to-many made ordered or unordered is inferred, as Core Data infers it, when the
            // pair keeps its names and storage (`planOrderChanges`).
            let reordered = sides.filter { $0.0.1.isOrdered != $0.1.1.isOrdered }.map(\.0)
            let renamed = sides.contains { $0.0.1.name != $0.1.1.name }
            if !reordered.isEmpty && (renamed || widens || isSelfInverse) {
                for (entity, relationship) in reordered {
                    refuse("\(entity.name).\(relationship.name): \(relationship.isOrdered ? "now" : "no longer") ordered, "
                           + "together with a rename or another change of the pair, which cannot be inferred yet")
                }
                refused = true
            }
            // The places of an ordered side are kept under the names of the key or link list
            // they sit beside; moving those (a rename) is not planned yet.
            let isOrdered = first.1.isOrdered || second.1.isOrdered
            if isOrdered, !widens, sides.contains(where: { $0.0.1.name != $0.1.1.name }) {
                refuse("\(first.0.name).\(first.1.name): renaming an ordered relationship or its inverse cannot be inferred yet")
                refused = true
            }
            guard !refused else { return }
            for (now, was) in sides { try planKeptRelationship(now, was: was) }
            if widens {
                planWidening(sides[widened!].0, other: sides[1 - widened!].0, now: (first, second), was: (old, oldInverse))
            } else {
                planStorage(first, second, was: old, oldInverse)
                for side in reordered { planOrderChange(side, pair: (first, second), was: (old, oldInverse)) }
            }
        }
    }

    /// Why `side`, continuing the source relationship `was`, is no longer in the same pair:
    /// its destination or its inverse is another.
    private func pairChange(_ side: (Entity, Relationship), was: (Entity, Relationship), other: (Entity, Relationship)) -> String {
        let place = "\(side.0.name).\(side.1.name)"
        let oldDestination = source.schema[was.1.destinationIndex]
        if match.sourceEntityIndex[other.0.index] != oldDestination.index {
            return "\(place): destination changed from \(oldDestination.name) to \(other.0.name), which cannot be inferred"
        }
        guard let wasInverse = was.1.inverseIndex else {
            return "\(place): was a one-way relationship, now one with an inverse, which cannot be inferred yet"
        }
        let oldInverse = "\(oldDestination.name).\(oldDestination.relationships[wasInverse].name)"
        let inverse = "\(other.0.name).\(other.1.name)"
        // The same name, yet not the same relationship: another property took over the old one's data.
        if inverse == oldInverse { return "\(place): inverse \(inverse) is a new relationship, not the old one of that name, which cannot be inferred" }
        return "\(place): inverse changed from \(oldInverse) to \(inverse), which cannot be inferred"
    }

    static func kind(_ relationship: Relationship) -> String { relationship.isToMany ? "to-many" : "to-one" }

    /// One side of a kept pair: its rename, and its rules (delete rule, optional).
    private mutating func planKeptRelationship(_ now: (Entity, Relationship), was: (Entity, Relationship)) throws(StoreError) {
        let (entity, relationship) = now
        if was.1.name != relationship.name {
            steps.append(.renameRelationship(entity: entity.name, from: was.1.name, to: relationship.name))
            // Sub-entities' changes are recorded under their own names.
            for kind in destination.withSubentities(entity) { historyProperty(was.1.name, of: kind, becomes: relationship.name) }
        }
        var rules: [String] = []
        if was.1.description.deleteRule != relationship.description.deleteRule { rules.append("deleteRule") }
        if was.1.description.isOptional != relationship.description.isOptional {
            if !relationship.description.isOptional, let data {
                var missing = 0
                for kind in source.withSubentities(was.0) { missing += try data.missingLinkCount(kind, kind.relationships[was.1.index], model: source) }
                if missing > 0 {
                    refuse("\(entity.name).\(relationship.name): now required, while \(entity.name) has \(Self.objects(missing)) without one")
                    return
                }
            }
            rules.append("optional")
        }
        if !rules.isEmpty { steps.append(.changeRules(entity: entity.name, property: relationship.name, changed: rules)) }
    }

    private mutating func planNewPair(_ first: (Entity, Relationship), _ second: (Entity, Relationship)) throws(StoreError) {
        for (entity, relationship) in [first, second] where !relationship.isToMany && !relationship.description.isOptional {
            var count = 0
            for kind in destination.withSubentities(entity) {
                if let old = match.sourceEntity(of: kind) { count += try objectCount(old) }
            }
            if count > 0 {
                refuse("\(entity.name).\(relationship.name): required relationship added while \(entity.name) has \(Self.objects(count))")
                return
            }
        }
        steps.append(.addRelationship(entity: first.0.name, relationship: first.1.name, isToMany: first.1.isToMany,
                                      inverseEntity: second.0.name, inverse: second.1.name, inverseIsToMany: second.1.isToMany))
        switch Self.links(first, second) {
        case let .foreignKey(holder, relationship):
            // A new entity's table is made with the column (and the place beside it); every
            // table below the holder has it too.
            for table in destination.withSubentities(holder) where match.sourceEntity(of: table) != nil {
                changes.addColumns.append((table.name, relationship.name, .key))
                if relationship.inverseIsOrdered { changes.addColumns.append((table.name, Relationship.positionName(ofKey: relationship.name), .key)) }
            }
        case let .joinTable(table, _, _):
            let isSelfInverse = first.0 === second.0 && first.1.index == second.1.index
            let positions = (isSelfInverse ? [first.1] : [first.1, second.1]).compactMap(\.positionName).sorted()
            changes.createJoinTables.append((table, positions))
        }
    }

    private mutating func planRemovedPair(_ first: (Entity, Relationship), _ second: (Entity, Relationship)) {
        steps.append(.removeRelationship(entity: first.0.name, relationship: first.1.name, inverseEntity: second.0.name, inverse: second.1.name))
        for (old, relationship) in [first, second] {
            if let entity = match.destinationEntity(of: old) { historyProperty(relationship.name, of: entity, becomes: nil) }
        }
        switch Self.links(first, second) {
        case let .foreignKey(holder, relationship):
            // A removed entity's table goes with the column; every table below the holder has it.
            for table in source.withSubentities(holder) {
                if let entity = match.destinationEntity(of: table) { changes.dropColumns.append((entity.name, relationship.name)) }
            }
        case let .joinTable(table, _, _):
            changes.dropJoinTables.append(table)
        }
    }

    /// Where a kept pair's links go: the same column (renamed with its relationship), the
    /// other side's table (a one-to-one whose rename moved them), or a join table of another
    /// name (its columns swapped when the other side now names it).
    private mutating func planStorage(_ first: (Entity, Relationship), _ second: (Entity, Relationship),
                                      was oldFirst: (Entity, Relationship), _ oldSecond: (Entity, Relationship)) {
        switch (Self.links(first, second), Self.links(oldFirst, oldSecond)) {
        case let (.foreignKey(holder, relationship), .foreignKey(oldHolder, oldRelationship)):
            if continues(holder, relationship, oldHolder, oldRelationship) {
                if oldRelationship.name != relationship.name {
                    for table in destination.withSubentities(holder) where match.sourceEntity(of: table) != nil {
                        changes.renameColumns.append((table.name, oldRelationship.name, relationship.name))
                    }
                }
            } else if destination.withSubentities(holder).count > 1 || source.withSubentities(oldHolder).count > 1 {
                refuse("\(first.0.name).\(first.1.name): its links would move to the other side's table, where an entity with sub-entities keeps them, which cannot be inferred yet")
            } else if let from = match.destinationEntity(of: oldHolder) {
                steps.append(.moveLinks(entity: first.0.name, relationship: first.1.name, toTableOf: holder.name))
                changes.addColumns.append((holder.name, relationship.name, .key))
                changes.fills.append(.links(table: holder.name, column: relationship.name, fromTable: from.name, fromColumn: oldRelationship.name))
                changes.dropColumns.append((from.name, oldRelationship.name))
            }
        case let (.joinTable(table, owner, ownerRelationship), .joinTable(oldTable, oldOwner, oldOwnerRelationship)):
            let sameOwner = continues(owner, ownerRelationship, oldOwner, oldOwnerRelationship)
            if table != oldTable || !sameOwner {
                changes.moveJoinTables.append((oldTable, table, swapsColumns: !sameOwner))
            }
        default:
            break  // cardinalities are the same, so the kinds of storage are: checked before
        }
    }

    /// A to-one (`widened`, now to-many) whose inverse (`other`) is to-many: the pair's links
    /// were the key column the to-one's side kept (beside it, the inverse's places when the
    /// inverse is ordered) and are now a join table. Each row holding a key becomes a link.
    private mutating func planWidening(_ widened: (Entity, Relationship), other: (Entity, Relationship),
                                       now: ((Entity, Relationship), (Entity, Relationship)),
                                       was: ((Entity, Relationship), (Entity, Relationship))) {
        guard case let .foreignKey(oldHolder, oldKey) = Self.links(was.0, was.1),
              case let .joinTable(table, owner, ownerRelationship) = Self.links(now.0, now.1) else {
            refuse("\(widened.0.name).\(widened.1.name): changed from to-one to to-many, whose links cannot be moved from where they are")
            return
        }
        steps.append(.makeToMany(entity: widened.0.name, relationship: widened.1.name, inverseEntity: other.0.name, inverse: other.1.name))
        let positions = [now.0.1, now.1.1].compactMap(\.positionName).sorted()
        changes.createJoinTables.append((table, positions))
        // `a` holds the keys of the side that names the table.
        let widenedNamesTable = owner === widened.0 && ownerRelationship.index == widened.1.index
        let (ownColumn, otherColumn) = widenedNamesTable ? ("a", "b") : ("b", "a")
        let oldPlace = oldKey.inverseIsOrdered ? Relationship.positionName(ofKey: oldKey.name) : nil
        var place: (joinColumn: String, fromColumn: String)?
        if let joinColumn = other.1.positionName, let oldPlace { place = (joinColumn, oldPlace) }
        for kind in source.withSubentities(oldHolder) {
            guard let holder = match.destinationEntity(of: kind) else { continue }
            changes.linkFills.append(SchemaChanges.LinkFill(table: table, ownColumn: ownColumn, otherColumn: otherColumn,
                                                            fromTable: holder.name, keyColumn: oldKey.name, place: place))
            changes.dropColumns.append((holder.name, oldKey.name))
            if let oldPlace { changes.dropColumns.append((holder.name, oldPlace)) }
        }
    }

    /// A to-many made ordered or unordered, its pair's names and storage kept: the places of
    /// its members are a column beside the key its inverse keeps (in every table below the
    /// key's holder), or a column of the pair's join table. A new column starts empty: every
    /// member unplaced, so in key order, the order it had. A dropped one takes the order.
    private mutating func planOrderChange(_ side: (Entity, Relationship), pair now: ((Entity, Relationship), (Entity, Relationship)),
                                          was: ((Entity, Relationship), (Entity, Relationship))) {
        let (entity, relationship) = side
        steps.append(.changeOrder(entity: entity.name, relationship: relationship.name, isOrdered: relationship.isOrdered))
        switch Self.links(now.0, now.1) {
        case let .foreignKey(holder, key):
            let column = Relationship.positionName(ofKey: key.name)
            for table in destination.withSubentities(holder) where match.sourceEntity(of: table) != nil {
                if relationship.isOrdered { changes.addColumns.append((table.name, column, .key)) } else { changes.dropColumns.append((table.name, column)) }
            }
        case let .joinTable(table, owner, ownerRelationship):
            // `_order_a` for the side that names the table, `_order_b` for the other.
            let namesTable = owner === entity && ownerRelationship.index == relationship.index
            let column = namesTable ? "_order_a" : "_order_b"
            if relationship.isOrdered { changes.addColumns.append((table, column, .key)) } else { changes.dropColumns.append((table, column)) }
        }
    }

    /// Whether the destination `relationship` of `entity` continues `oldRelationship` of `old`.
    private func continues(_ entity: Entity, _ relationship: Relationship, _ old: Entity, _ oldRelationship: Relationship) -> Bool {
        match.sourceEntityIndex[entity.index] == old.index && match.sourcePropertyName(relationship.name, of: entity) == oldRelationship.name
    }

    /// Where a pair's links are stored, named by the side that stores them.
    enum Links {
        /// In `relationship`'s column of `entity`'s table.
        case foreignKey(Entity, Relationship)
        /// In the join table `table`, whose `a` column holds the keys of `entity`,
        /// the side of `relationship`.
        case joinTable(String, Entity, Relationship)
    }

    static func links(_ first: (Entity, Relationship), _ second: (Entity, Relationship)) -> Links {
        switch first.1.storage {
        case .foreignKey:
            return .foreignKey(first.0, first.1)
        case .inverseForeignKey:
            return .foreignKey(second.0, second.1)
        case let .joinTable(table, isFirstSide):
            return isFirstSide ? .joinTable(table, first.0, first.1) : .joinTable(table, second.0, second.1)
        }
    }

    // MARK: One-way relationships

    /// A one-way relationship of the destination model: new (its column or link list made),
    /// or kept as it was (its rules may change); any other change is refused for now.
    private mutating func planOneWay(_ entity: Entity, _ relationship: Relationship) throws(StoreError) {
        let place = "\(entity.name).\(relationship.name)"
        guard let (old, was) = match.sourceRelationship(of: relationship, in: entity) else {
            if let old = match.sourceEntity(of: entity), let oldName = match.sourcePropertyName(relationship.name, of: entity),
               old.attributeIndex(oldName) != nil {
                refuse("\(place): was the attribute \(old.name).\(oldName), now a relationship, which cannot be inferred")
                return
            }
            let destinationName = destination.schema[relationship.destinationIndex].name
            steps.append(.addOneWayRelationship(entity: entity.name, relationship: relationship.name, isToMany: relationship.isToMany,
                                                destination: destinationName))
            if case let .joinTable(table, _) = relationship.storage {
                changes.createJoinTables.append((table, []))
            } else if match.sourceEntity(of: entity) != nil {
                // A new entity's table is made with the column.
                changes.addColumns.append((entity.name, relationship.name, .key))
            }
            return
        }
        guard was.inverseIndex == nil else {
            refuse("\(place): had an inverse, now one-way, which cannot be inferred yet")
            return
        }
        if match.sourceEntityIndex[relationship.destinationIndex] != was.destinationIndex {
            refuse("\(place): destination changed from \(source.schema[was.destinationIndex].name), which cannot be inferred")
            return
        }
        if relationship.isToMany != was.isToMany {
            refuse("\(place): changed from \(Self.kind(was)) to \(Self.kind(relationship)), which cannot be inferred")
            return
        }
        // The links are kept under the relationship's name (a column, or a list named after
        // the entity and the relationship): moving them on a rename is not planned yet.
        if relationship.storage != was.storage {
            refuse("\(place): renaming a one-way relationship (or, for a to-many, its entity) cannot be inferred yet")
            return
        }
        try planKeptRelationship((entity, relationship), was: (old, was))
    }

    /// A one-way relationship of the source model that nothing continues: it goes, with its links.
    private mutating func planRemovedOneWay(_ old: Entity, _ relationship: Relationship) {
        steps.append(.removeOneWayRelationship(entity: old.name, relationship: relationship.name,
                                               destination: source.schema[relationship.destinationIndex].name))
        let entity = match.destinationEntity(of: old)
        if let entity { historyProperty(relationship.name, of: entity, becomes: nil) }
        if case let .joinTable(table, _) = relationship.storage {
            changes.dropJoinTables.append(table)
        } else if let entity {
            // A removed entity's table goes with the column.
            changes.dropColumns.append((entity.name, relationship.name))
        }
    }
}
