
/// Builds a `LightweightMigration`: entities and attributes here, uniqueness constraints and
/// indexes in MigrationPlanner+Constraints.swift, relationships in MigrationPlanner+Relationships.swift.
struct MigrationPlanner {
    let match: ModelCorrespondence
    let data: (any MigrationDataSource)?
    var steps: [MigrationStep] = []
    var refusals: [String] = []
    var changes = SchemaChanges()
    /// Object counts of source entities, by index: asked for by several checks.
    private var counts: [Int: Int] = [:]

    init(match: ModelCorrespondence, data: (any MigrationDataSource)?) {
        self.match = match
        self.data = data
    }

    var source: ManagedObjectModel { match.source }
    var destination: ManagedObjectModel { match.destination }

    mutating func refuse(_ reason: String) { refusals.append(reason) }

    /// How many objects the source entity `entity` has (0 without data).
    mutating func objectCount(_ entity: Entity) throws(StoreError) -> Int {
        if let known = counts[entity.index] { return known }
        let count = try data?.objectCount(entity) ?? 0
        counts[entity.index] = count
        return count
    }

    static func objects(_ count: Int) -> String { count == 1 ? "1 object" : "\(count) objects" }

    /// Records that the history rows of `entity` (a destination entity) name a property
    /// `name` that is now called `newName` (nil: removed), so that a merge policy asking
    /// what changed after a version still finds the property's changes under its new name.
    mutating func historyProperty(_ name: String, of entity: Entity, becomes newName: String?) {
        changes.historyProperties[entity.name, default: [:]][name] = .some(newName)
    }

    // MARK: Entities

    mutating func planEntities() throws(StoreError) {
        // Removed entities first: their tables go before anything else takes their names.
        for old in source.schema where match.destinationEntity(of: old) == nil {
            steps.append(.removeEntity(old.name, objects: try objectCount(old)))
            changes.dropTables.append(old.name)
        }
        for entity in destination.schema {
            guard let old = match.sourceEntity(of: entity) else {
                steps.append(.addEntity(entity.name))
                changes.createTables.append(entity)
                changes.createIndexes.append(entity)
                continue
            }
            if old.name != entity.name {
                steps.append(.renameEntity(from: old.name, to: entity.name))
                changes.renameEntities.append((old.name, entity.name))
            }
            try planAttributes(of: entity, from: old)
            try planConstraintsAndIndexes(of: entity, from: old)
            // The indexes are made again whenever they would differ in any way (names follow
            // the entity, columns the properties): simpler than altering each, and SQLite
            // cannot drop or rename around a column an index still uses.
            if SchemaChanges.indexLayout(old) != SchemaChanges.indexLayout(entity) {
                changes.dropIndexes.append(old)
                changes.createIndexes.append(entity)
            }
        }
    }

    // MARK: Attributes

    mutating func planAttributes(of entity: Entity, from old: Entity) throws(StoreError) {
        for attribute in entity.attributes {
            let place = "\(entity.name).\(attribute.name)"
            guard let oldName = match.sourcePropertyName(attribute.name, of: entity) else {
                try planNewAttribute(attribute, of: entity, from: old)
                continue
            }
            guard let a = old.attributeIndex(oldName) else {
                refuse("\(place): was the relationship \(old.name).\(oldName), now an attribute, which cannot be inferred")
                continue
            }
            let was = old.attributes[a]
            guard was.type == attribute.type else {
                refuse("\(place): type changed from \(was.type.rawValue) to \(attribute.type.rawValue), which cannot be inferred")
                continue
            }
            if was.name != attribute.name {
                steps.append(.renameAttribute(entity: entity.name, from: was.name, to: attribute.name))
                changes.renameColumns.append((entity.name, was.name, attribute.name))
                historyProperty(was.name, of: entity, becomes: attribute.name)
            }
            if was.isOptional && !attribute.isOptional {
                try planRequired(attribute, of: entity, was: was, in: old)
            } else if !was.isOptional && attribute.isOptional {
                steps.append(.makeAttributeOptional(entity: entity.name, attribute: attribute.name))
            }
            let rules = Self.changedRules(was, attribute)
            if !rules.isEmpty { steps.append(.changeRules(entity: entity.name, property: attribute.name, changed: rules)) }
        }
        for was in old.attributes where match.destinationPropertyName(was.name, of: old) == nil {
            steps.append(.removeAttribute(entity: entity.name, attribute: was.name))
            changes.dropColumns.append((entity.name, was.name))
            historyProperty(was.name, of: entity, becomes: nil)
        }
    }

    private mutating func planNewAttribute(_ attribute: AttributeDescription, of entity: Entity, from old: Entity) throws(StoreError) {
        if !attribute.isOptional && attribute.defaultValue.isNull {
            let count = try objectCount(old)
            guard count == 0 else {
                refuse("\(entity.name).\(attribute.name): required attribute added without a default while \(entity.name) has \(Self.objects(count))")
                return
            }
        }
        steps.append(.addAttribute(entity: entity.name, attribute: attribute.name, type: attribute.type,
                                   isOptional: attribute.isOptional, defaultValue: attribute.defaultValue))
        changes.addColumns.append((entity.name, attribute.name, .attribute(attribute.type)))
        // Existing objects take the default, as Core Data's inferred mapping gives them.
        if !attribute.defaultValue.isNull {
            changes.fills.append(.value(table: entity.name, column: attribute.name, value: attribute.defaultValue, onlyNulls: false))
        }
    }

    /// An optional attribute becomes required: the objects without a value take the default,
    /// and without a default there must be none.
    private mutating func planRequired(_ attribute: AttributeDescription, of entity: Entity, was: AttributeDescription, in old: Entity) throws(StoreError) {
        let empty = try data?.nullCount(old, column: was.name) ?? 0
        if attribute.defaultValue.isNull && empty > 0 {
            refuse("\(entity.name).\(attribute.name): now required without a default, while \(entity.name) has \(Self.objects(empty)) without a value")
            return
        }
        steps.append(.makeAttributeRequired(entity: entity.name, attribute: attribute.name, defaultValue: attribute.defaultValue, filled: empty))
        if !attribute.defaultValue.isNull {
            changes.fills.append(.value(table: entity.name, column: attribute.name, value: attribute.defaultValue, onlyNulls: true))
        }
    }

    /// The validation rules (as the JSON model format names them) that differ.
    static func changedRules(_ was: AttributeDescription, _ now: AttributeDescription) -> [String] {
        var changed: [String] = []
        if was.defaultValue != now.defaultValue { changed.append("default") }
        if was.minValue != now.minValue { changed.append("min") }
        if was.maxValue != now.maxValue { changed.append("max") }
        if was.minLength != now.minLength { changed.append("minLength") }
        if was.maxLength != now.maxLength { changed.append("maxLength") }
        if was.pattern != now.pattern { changed.append("pattern") }
        return changed
    }
}
