
/// Which element of the model a store was made with (the source) each element of a new model
/// (the destination) continues, as Core Data's inferred mapping decides it: an element
/// continues the source element its `renamingIdentifier` names, else the one with its own
/// name. Entities are matched in the model, properties (attributes and relationships
/// together, as they share one namespace) within matched entities. Kinds are not compared
/// here: an attribute that continues a relationship is the planner's to refuse.
struct ModelCorrespondence {
    let source: ManagedObjectModel
    let destination: ManagedObjectModel
    /// Per destination entity: the index of the source entity it continues; nil for a new one.
    let sourceEntityIndex: [Int?]
    /// Per source entity: the index of the destination entity continuing it; nil when removed.
    let destinationEntityIndex: [Int?]
    /// Per destination entity: the source property name each of its properties continues.
    private let sourcePropertyName: [[String: String]]
    /// Per source entity: the destination property name continuing each of its properties.
    private let destinationPropertyName: [[String: String]]

    init(source: ManagedObjectModel, destination: ManagedObjectModel) {
        self.source = source
        self.destination = destination
        let entityMatches = Self.match(destination.entities.map { ($0.name, $0.renamingIdentifier) }, in: source.entities.map(\.name))
        sourceEntityIndex = entityMatches
        var back = [Int?](repeating: nil, count: source.entities.count)
        for (d, s) in entityMatches.enumerated() { if let s { back[s] = d } }
        destinationEntityIndex = back
        var forward: [[String: String]] = []
        var backward = [[String: String]](repeating: [:], count: source.entities.count)
        for (d, entity) in destination.entities.enumerated() {
            guard let s = entityMatches[d] else { forward.append([:]); continue }
            let sourceEntity = source.entities[s]
            let sourceNames = sourceEntity.attributes.map(\.name) + sourceEntity.relationships.map(\.name)
            let elements = entity.attributes.map { ($0.name, $0.renamingIdentifier) } + entity.relationships.map { ($0.name, $0.renamingIdentifier) }
            var names: [String: String] = [:]
            for (i, match) in Self.match(elements, in: sourceNames).enumerated() {
                guard let match else { continue }
                names[elements[i].0] = sourceNames[match]
                backward[s][sourceNames[match]] = elements[i].0
            }
            forward.append(names)
        }
        sourcePropertyName = forward
        destinationPropertyName = backward
    }

    /// For each element, the index in `sourceNames` of the one it continues. The names that
    /// renaming identifiers give are taken first, so that an element renamed from "title" keeps
    /// the old title's data even when another element is now called "title"; each source
    /// element is continued at most once.
    static func match(_ elements: [(name: String, renamingIdentifier: String?)], in sourceNames: [String]) -> [Int?] {
        var result = [Int?](repeating: nil, count: elements.count)
        var taken = Set<Int>()
        for (i, element) in elements.enumerated() {
            guard let identifier = element.renamingIdentifier, let s = sourceNames.firstIndex(of: identifier), !taken.contains(s) else { continue }
            result[i] = s
            taken.insert(s)
        }
        for (i, element) in elements.enumerated() where result[i] == nil {
            guard let s = sourceNames.firstIndex(of: element.name), !taken.contains(s) else { continue }
            result[i] = s
            taken.insert(s)
        }
        return result
    }

    /// The source entity `entity` (of the destination) continues.
    func sourceEntity(of entity: Entity) -> Entity? {
        sourceEntityIndex[entity.index].map { source.schema[$0] }
    }

    /// The destination entity continuing `entity` (of the source).
    func destinationEntity(of entity: Entity) -> Entity? {
        destinationEntityIndex[entity.index].map { destination.schema[$0] }
    }

    /// The name of the source property the destination property `name` of `entity` continues.
    func sourcePropertyName(_ name: String, of entity: Entity) -> String? {
        sourcePropertyName[entity.index][name]
    }

    /// The name of the destination property continuing the source property `name` of `entity`.
    func destinationPropertyName(_ name: String, of entity: Entity) -> String? {
        destinationPropertyName[entity.index][name]
    }

    /// The source relationship the destination relationship `relationship` of `entity`
    /// continues, when it continues a relationship (not an attribute, and not nothing).
    func sourceRelationship(of relationship: Relationship, in entity: Entity) -> (Entity, Relationship)? {
        guard let sourceEntity = sourceEntity(of: entity), let name = sourcePropertyName(relationship.name, of: entity),
              let r = sourceEntity.relationshipIndex(name) else { return nil }
        return (sourceEntity, sourceEntity.relationships[r])
    }
}
