import Foundation

/// A checked, immutable set of entities [NSManagedObjectModel].
///
/// Build one in Swift from `EntityDescription`s or load the JSON model format; either way every
/// problem (unknown types, missing or mismatched inverses, duplicate or reserved names) is
/// reported together in a `ModelError` naming the entity and property.
public final class ManagedObjectModel: Sendable {
    public let name: String
    public let version: Int
    /// Every entity as the stores, contexts and the API see it: a sub-entity with everything it
    /// inherits, its parent's properties first (`EntityInheritance`).
    public let entities: [EntityDescription]
    /// The entities as their author wrote them: a sub-entity with its own properties only.
    /// What the model's file formats hold.
    public let authoredEntities: [EntityDescription]
    /// A stable hash of the model's content, stored in each store: a store made from a model
    /// with another hash is migrated (or refused) when opened. As in Core Data, the
    /// `renamingIdentifier`s are not part of it: they say where the content came from, not
    /// what it is, so adding one to an element does not make the store need a migration.
    public let versionHash: String

    package let schema: [Entity]
    let entityIndexByName: [String: Int]
    /// Per entity (by index): the one-way relationships whose destination it is, as (holder
    /// entity, relationship index); what deleting one of its objects visits.
    private let oneWayHolders: [[(entity: Int, relationship: Int)]]
    /// Per entity (by index): its stored to-one keys whose destination has sub-entities, as
    /// (position in `StoredRow.foreignKeys`, destination entity): the keys whose kind must be
    /// read (`DestinationKindCache`). Empty for most entities.
    package let foreignKeysToParents: [[(position: Int, destination: Int)]]
    /// Per entity (by index): whether its objects name every destination without a read of
    /// the destinations' kinds (no relationship leads to an entity with sub-entities), so
    /// that one object is read by its key in one statement of the store
    /// (`PersistentStoreCoordinator.withReadContext(readingOnly:)`).
    let readsObjectInOneStatement: [Bool]

    /// The model's stored fetch requests, in the order given [fetchRequestTemplatesByName].
    public let fetchRequestTemplates: [FetchRequestTemplate]

    public init(name: String, version: Int = 1, entities: [EntityDescription],
                fetchRequestTemplates: [FetchRequestTemplate] = []) throws(ModelError) {
        self.fetchRequestTemplates = fetchRequestTemplates
        self.name = name
        self.version = version
        self.authoredEntities = entities
        let authored = entities
        let inheritance = EntityInheritance(authored)
        let (flattened, problems) = ModelChecker.check(authored, inheritance)
        guard let whole = flattened, problems.isEmpty else { throw ModelError(problems) }
        // What stores, contexts and the API see has no transient attribute: they are held by
        // objects in memory only (`Entity.transientAttributes`), so no table, column, JSON
        // member or object schema can carry one by mistake.
        let entities = whole.map(\.storedPart)
        self.entities = entities
        var indexByName: [String: Int] = [:]
        for (i, e) in entities.enumerated() { indexByName[e.name] = i }
        self.entityIndexByName = indexByName
        let places = EntityHierarchyPlace.places(of: entities, inheritance: inheritance)
        self.schema = entities.enumerated().map { index, entity in
            let relationships = entity.relationships.enumerated().map { r, rel in
                let destinationIndex = indexByName[rel.destination]!  // checked by ModelChecker
                let destination = entities[destinationIndex]
                guard let inverseName = rel.inverse else {
                    return Relationship(index: r, description: rel, destinationIndex: destinationIndex, inverseIndex: nil, inverseName: nil,
                                        inverseIsOrdered: false, storage: Self.oneWayStorage(entity: entity.name, rel))
                }
                let inverseIndex = destination.relationships.firstIndex { $0.name == inverseName }!  // checked
                let inverse = destination.relationships[inverseIndex]
                // Named after the entity that declares it, so that a sub-entity shares its
                // parent's links (one list for every kind, as the inverse sees them).
                let declaring = inheritance.ancestors[index].first { entities[$0].relationship(named: rel.name) != nil }
                    .map { entities[$0].name } ?? entity.name
                return Relationship(index: r, description: rel, destinationIndex: destinationIndex,
                                    inverseIndex: inverseIndex, inverseName: inverse.name, inverseIsOrdered: inverse.isOrdered,
                                    storage: Self.storage(entity: declaring, rel, inverse: inverse))
            }
            return Entity(index: index, description: entity, relationships: relationships, place: places[index],
                          transientAttributes: whole[index].attributes.filter(\.isTransient))
        }
        var holders = [[(entity: Int, relationship: Int)]](repeating: [], count: entities.count)
        for holder in schema {
            for relationship in holder.relationships where relationship.inverseIndex == nil {
                // An object of any kind of the destination can be held (a parent's kinds too).
                let destination = schema[relationship.destinationIndex]
                for kind in [destination.index] + destination.kinds.filter({ $0 != destination.index }) {
                    holders[kind].append((holder.index, relationship.index))
                }
            }
        }
        self.oneWayHolders = holders
        let resolved = schema
        self.foreignKeysToParents = resolved.map { entity in
            entity.foreignKeyRelationships.enumerated().compactMap { position, r in
                let destination = entity.relationships[r].destinationIndex
                return resolved[destination].isSingleKind ? nil : (position, destination)
            }
        }
        self.readsObjectInOneStatement = resolved.map { entity in
            entity.relationships.allSatisfy { resolved[$0.destinationIndex].isSingleKind }
        }
        // Transient attributes and fetched properties change nothing stored, so they are not
        // part of the hash either: adding or removing one needs no migration.
        self.versionHash = Self.hash(of: Self.jsonValue(name: name, version: version, entities: authored.map(\.hashedPart),
                                                        renamingIdentifiers: false))
        // Templates and fetched properties are checked against the finished schema: their key
        // paths resolve through it.
        let templateProblems = Self.resolveTemplates(fetchRequestTemplates, in: self).problems + fetchedPropertyProblems()
        guard templateProblems.isEmpty else { throw ModelError(templateProblems) }
    }

    /// The description of the entity called `name`, if the model has one.
    public func entity(named name: String) -> EntityDescription? {
        entityIndexByName[name].map { entities[$0] }
    }

    /// The transient attributes of the entity called `name`, with those it inherits, parents'
    /// first: never stored, so not in `entities` (an object holds their values in memory).
    public func transientAttributes(ofEntity name: String) -> [AttributeDescription] {
        resolvedEntity(named: name)?.transientAttributes ?? []
    }

    /// Every one-way relationship whose destination is `entity`: (holder entity, relationship index).
    /// Empty for most entities: then a delete has nothing more to do, at no cost.
    package func oneWayRelationships(to entity: Entity) -> [(entity: Int, relationship: Int)] {
        oneWayHolders[entity.index]
    }

    /// The names of the entities whose objects a fetch of the entity called `name` returns:
    /// itself unless abstract, and every concrete entity below it (`Entity.kinds`).
    package func kindNames(of name: String) -> [String] {
        resolvedEntity(named: name).map { $0.kinds.map { schema[$0].name } } ?? []
    }

    /// The names of the entities the entity called `name` inherits from, its parent first.
    package func ancestorNames(of name: String) -> [String] {
        var names: [String] = []
        var current = resolvedEntity(named: name)?.parentIndex
        while let index = current {
            names.append(schema[index].name)
            current = schema[index].parentIndex
        }
        return names
    }

    package func resolvedEntity(named name: String) -> Entity? {
        // A model has few entities: comparing names beats hashing them (every insert asks).
        if schema.count <= 16 { return schema.first { $0.name == name } }
        return entityIndexByName[name].map { schema[$0] }
    }

    /// Decides which side of a relationship stores its links.
    ///
    /// To-one opposite to-many: the to-one side holds a foreign key (as Core Data does).
    /// One-to-one: the side that sorts first by "Entity.relationship" holds it, the other reads it.
    /// Many-to-many: a join table named after the side that sorts first.
    private static func storage(entity: String, _ rel: RelationshipDescription, inverse: RelationshipDescription) -> RelationshipStorage {
        let ownKey = "\(entity).\(rel.name)"
        let inverseKey = "\(rel.destination).\(inverse.name)"
        let ownSideFirst = ownKey.utf8.lexicographicallyPrecedes(inverseKey.utf8) || ownKey == inverseKey
        switch (rel.isToMany, inverse.isToMany) {
        case (false, true):
            return .foreignKey
        case (true, false):
            return .inverseForeignKey
        case (false, false):
            return ownSideFirst ? .foreignKey : .inverseForeignKey
        case (true, true):
            let (tableOwner, ownerRel) = ownSideFirst ? (entity, rel.name) : (rel.destination, inverse.name)
            // A self-inverse relationship (friends <-> friends) keeps each link once, in both orders.
            return .joinTable(table: "_join_\(tableOwner)_\(ownerRel)", isFirstSide: ownSideFirst)
        }
    }

    /// A one-way relationship keeps its links on its own side: a to-one in its row, a to-many
    /// in a link list of its own (its keys in `a`, the destinations' in `b`).
    private static func oneWayStorage(entity: String, _ rel: RelationshipDescription) -> RelationshipStorage {
        rel.isToMany ? .joinTable(table: "_join_\(entity)_\(rel.name)", isFirstSide: true) : .foreignKey
    }

    /// FNV-1a 64 over the canonical JSON text: stable across runs and platforms.
    private static func hash(of value: JSONValue) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in value.serialized(sortingKeys: true).utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}

/// Finds every problem in a set of entity descriptions.
struct ModelChecker {
    /// The entities with what they inherit (`EntityInheritance.flattened`).
    let entities: [EntityDescription]
    /// The same entities as written: the properties, constraints and indexes each declares.
    /// A problem of an inherited property is reported once, on the entity that declares it.
    let authored: [EntityDescription]

    /// A checker of entities without inheritance, or whose parents could not be resolved.
    init(entities: [EntityDescription]) {
        self.init(entities: entities, authored: entities)
    }

    init(entities: [EntityDescription], authored: [EntityDescription]) {
        self.entities = entities
        self.authored = authored
    }

    /// Every problem of `authored`, its inheritance included: what building a model from it
    /// would report.
    static func problems(of authored: [EntityDescription]) -> [ModelProblem] {
        check(authored, EntityInheritance(authored)).problems
    }

    /// The entities with what they inherit (nil when the parents cannot be resolved), and
    /// every problem of `authored`.
    static func check(_ authored: [EntityDescription], _ inheritance: EntityInheritance) -> (flattened: [EntityDescription]?, problems: [ModelProblem]) {
        guard inheritance.problems.isEmpty else { return (nil, ModelChecker(entities: authored).problems() + inheritance.problems) }
        let flattened = inheritance.flattened(authored)
        return (flattened, ModelChecker(entities: flattened, authored: authored).problems())
    }

    func problems() -> [ModelProblem] {
        var problems: [ModelProblem] = []
        var seenEntities: Set<String> = []
        for (entity, own) in zip(entities, authored) {
            if let problem = Self.nameProblem(entity.name) {
                problems.append(ModelProblem(entity: entity.name, message: "entity name \(problem)"))
            }
            // SQLite table names ignore case, so "Task" and "task" would share a table.
            if !seenEntities.insert(entity.name.lowercased()).inserted {
                problems.append(ModelProblem(entity: entity.name, message: "duplicate entity name"))
            }
            problems += check(entity, own: own)
        }
        problems += renamingProblems(entities.map { ($0.name, $0.renamingIdentifier) }, entity: nil)
        return problems
    }

    /// Two elements that say they were renamed from the same name would both claim that
    /// element's stored data in a migration: refuse them, naming both.
    func renamingProblems(_ elements: [(name: String, renamingIdentifier: String?)], entity: String?) -> [ModelProblem] {
        var claimedBy: [String: String] = [:]
        var problems: [ModelProblem] = []
        for (name, identifier) in elements {
            guard let identifier else { continue }
            if let first = claimedBy[identifier] {
                let message = "renamingIdentifier '\(identifier)' is also the renamingIdentifier of \(first): two elements cannot both be renamed from it"
                problems.append(ModelProblem(entity: entity ?? name, property: entity == nil ? nil : name, message: message))
            } else {
                claimedBy[identifier] = name
            }
        }
        return problems
    }

    static func nameProblem(_ name: String) -> String? {
        guard let first = name.unicodeScalars.first else { return "is empty" }
        if first == "_" { return "starts with '_', which is reserved" }
        let isIdentifier = name.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_") }
        guard isIdentifier, !("0"..."9").contains(first) else { return "must be letters, digits and '_', starting with a letter" }
        return nil
    }

    /// The problems of `entity` (with what it inherits) in what `own` declares.
    func check(_ entity: EntityDescription, own: EntityDescription) -> [ModelProblem] {
        var problems: [ModelProblem] = []
        func problem(_ property: String?, _ message: String) {
            problems.append(ModelProblem(entity: entity.name, property: property, message: message))
        }
        let inheritedNames = Set((entity.attributes.dropLast(own.attributes.count).map(\.name)
                                  + entity.relationships.dropLast(own.relationships.count).map(\.name)
                                  + entity.fetchedProperties.dropLast(own.fetchedProperties.count).map(\.name)).map { $0.lowercased() })
        var seen: Set<String> = []
        for name in own.attributes.map(\.name) + own.relationships.map(\.name) + own.fetchedProperties.map(\.name) {
            if let p = Self.nameProblem(name) { problem(name, "property name \(p)") }
            if inheritedNames.contains(name.lowercased()) {
                problem(name, "is also a property of parent entity \(entity.parent ?? "?"): a sub-entity cannot declare it again")
            } else if !seen.insert(name.lowercased()).inserted {
                problem(name, "duplicate property name")
            }
        }
        problems += renamingProblems(own.attributes.map { ($0.name, $0.renamingIdentifier) }
                                     + own.relationships.map { ($0.name, $0.renamingIdentifier) }, entity: entity.name)
        for attribute in own.attributes { problems += check(attribute, in: entity) }
        for rel in own.relationships {
            guard let destination = entities.first(where: { $0.name == rel.destination }) else {
                problem(rel.name, "unknown destination entity '\(rel.destination)'")
                continue
            }
            problems += countProblems(rel).map { ModelProblem(entity: entity.name, property: rel.name, message: $0) }
            guard let inverseName = rel.inverse else {
                if rel.isToMany && !rel.isOptional {
                    problem(rel.name, "a to-many relationship cannot be non-optional: give it a minCount of 1 instead")
                }
                continue  // one-way: nothing points back
            }
            guard let inverse = destination.relationship(named: inverseName) else {
                problem(rel.name, "inverse '\(inverseName)' is not a relationship of \(destination.name)")
                continue
            }
            if inverse.destination != entity.name || inverse.inverse != rel.name {
                problem(rel.name, "inverse \(destination.name).\(inverse.name) does not point back to \(entity.name).\(rel.name)")
            }
            if rel.isToMany && !rel.isOptional {
                problem(rel.name, "a to-many relationship cannot be non-optional: give it a minCount of 1 instead")
            }
        }
        for (kind, lists) in [("uniqueness constraint", own.uniquenessConstraints), ("index", own.indexes)] {
            for list in lists {
                if list.isEmpty { problem(nil, "empty \(kind)") }
                for name in list {
                    if entity.attribute(named: name)?.isTransient == true {
                        problem(name, "\(kind) names a transient attribute, which is never stored")
                    } else if entity.attribute(named: name) == nil {
                        let isToOne = entity.relationship(named: name).map { !$0.isToMany } ?? false
                        if !(kind == "index" && isToOne) { problem(name, "\(kind) names an unknown attribute") }
                    }
                }
            }
        }
        return problems
    }

    func check(_ attribute: AttributeDescription, in entity: EntityDescription) -> [ModelProblem] {
        var problems: [ModelProblem] = []
        func problem(_ message: String) {
            problems.append(ModelProblem(entity: entity.name, property: attribute.name, message: message))
        }
        if !attribute.defaultValue.fits(attribute.type) {
            problem("default value \(attribute.defaultValue.kindName) does not fit type \(attribute.type.rawValue)")
        }
        for (key, bound) in [("min", attribute.minValue), ("max", attribute.maxValue)] {
            guard let bound else { continue }
            if !attribute.type.isOrdered { problem("'\(key)' applies to numbers and dates, not \(attribute.type.rawValue)") }
            else if bound.isNull || !bound.fits(attribute.type) { problem("'\(key)' does not fit type \(attribute.type.rawValue)") }
        }
        if attribute.type != .string && (attribute.minLength != nil || attribute.maxLength != nil || attribute.pattern != nil) {
            problem("'minLength', 'maxLength' and 'pattern' apply to strings only")
        }
        if let minLength = attribute.minLength, minLength < 0 { problem("'minLength' is negative") }
        if let minLength = attribute.minLength, let maxLength = attribute.maxLength, minLength > maxLength {
            problem("'minLength' is greater than 'maxLength'")
        }
        if attribute.valueTransformerName != nil && attribute.type != .binary {
            problem("'valueTransformer' applies to binary attributes only (the bytes a Transformable's transformer writes)")
        }
        if let pattern = attribute.pattern, let error = WholeStringRegex.shared.error(pattern) {
            problem("'pattern' is not a valid regular expression: \(error)")
        }
        return problems
    }

    /// What is wrong with a relationship's count rule and order, if anything.
    func countProblems(_ rel: RelationshipDescription) -> [String] {
        var problems: [String] = []
        if !rel.isToMany {
            if rel.hasCountRule { problems.append("'minCount' and 'maxCount' apply to to-many relationships only") }
            if rel.isOrdered { problems.append("'ordered' applies to to-many relationships only") }
            return problems
        }
        for (key, count) in [("minCount", rel.minCount), ("maxCount", rel.maxCount)] {
            if let count, count < 0 { problems.append("'\(key)' is negative") }
        }
        if let minCount = rel.minCount, let maxCount = rel.maxCount, minCount > maxCount {
            problems.append("'minCount' is greater than 'maxCount'")
        }
        return problems
    }
}
