import Foundation

/// A fetched property [NSFetchedPropertyDescription]: a property whose value is a fetch of
/// another entity's objects, with `$FETCH_SOURCE` in its predicate standing for the object
/// asked (`$FETCH_SOURCE.name` for a value of it). Nothing of it is stored: it is answered as
/// the fetch when asked (`ManagedObjectContext.fetch(fetchedProperty:of:)`, and over HTTP
/// `GET /v1/objects/{Entity}/{pk}/{name}`). Core Data's `$FETCHED_PROPERTY` (the property's own
/// description, for its user info) has no meaning here and is refused.
public struct FetchedPropertyDescription: Sendable, Hashable {
    public var name: String
    /// The entity whose objects it fetches.
    public var destinationEntityName: String
    /// The predicate in NSPredicate's format; nil fetches every object of the destination.
    public var predicateFormat: String?

    public init(name: String, destinationEntityName: String, predicateFormat: String? = nil) {
        self.name = name
        self.destinationEntityName = destinationEntityName
        self.predicateFormat = predicateFormat
    }

    /// The variable that stands for the object whose property is asked.
    static let sourceVariable = "FETCH_SOURCE"
}

extension ManagedObjectModel {
    /// What is wrong with each entity's fetched properties: an unknown destination, a
    /// predicate that does not parse or names what the entities do not have, another variable
    /// than `$FETCH_SOURCE`. Each is checked with sample values of the source's type.
    func fetchedPropertyProblems() -> [ModelProblem] {
        var problems: [ModelProblem] = []
        let sampleStore = UUID()
        for (index, entity) in entities.enumerated() {
            // An inherited fetched property is checked once, on the entity that declares it.
            let own = Set(authoredEntities.first { $0.name == entity.name }?.fetchedProperties.map(\.name) ?? [])
            for property in entity.fetchedProperties where own.contains(property.name) {
                func problem(_ message: String) { problems.append(ModelProblem(entity: entity.name, property: property.name, message: message)) }
                guard let destination = resolvedEntity(named: property.destinationEntityName) else {
                    problem("a fetched property of unknown entity '\(property.destinationEntityName)'")
                    continue
                }
                do {
                    let source = schema[index]
                    let sampleID = ManagedObjectID(storeIdentifier: sampleStore, entityName: source.kinds.first.map { schema[$0].name } ?? source.name, key: .permanent(1))
                    let predicate = try fetchedPropertyPredicate(property, sourceID: sampleID) { keyPath throws(FetchError) in
                        try ResolvedKeyPath(keyPath, rootEntity: source, model: self).sampleValue(self, store: sampleStore)
                    }
                    if let predicate {
                        _ = try PredicateChecker(model: self, root: destination, storeIdentifier: sampleStore).checkTopLevel(predicate)
                    }
                } catch {
                    problem("its predicate \(property.predicateFormat ?? "") cannot be used: \(error)")
                }
            }
        }
        return problems
    }

    /// The predicate of `property` for the source object `sourceID`: `$FETCH_SOURCE` replaced by
    /// its ID and `$FETCH_SOURCE.path` by `value(path)`; nil when the property has none.
    func fetchedPropertyPredicate(_ property: FetchedPropertyDescription, sourceID: ManagedObjectID,
                                  value: (String) throws(FetchError) -> PredicateValue) throws(FetchError) -> ObjectPredicate? {
        guard let format = property.predicateFormat else { return nil }
        let parsed: ObjectPredicate
        do { parsed = try ObjectPredicate(format: format, argumentArray: []) } catch {
            throw .invalidPredicate("\(error.message) at column \(error.column)")
        }
        return try parsed.replacingSource(sourceID, value: value)
    }
}

extension ManagedObjectContext {
    /// The objects of `object`'s fetched property `name`, as a fetch of its destination answers
    /// them now [the value of an NSFetchedPropertyDescription]: `$FETCH_SOURCE` is `object`,
    /// `$FETCH_SOURCE.path` the value `object` holds there (unsaved changes included).
    public func fetch(fetchedProperty name: String, of object: ManagedObject) throws(FetchError) -> [ManagedObject] {
        try fetch(fetchRequest(forFetchedProperty: name, of: object))
    }

    /// The fetch request that answers `object`'s fetched property `name`, to refine (a sort, a
    /// limit) before fetching. An unknown name throws `unknownKeyPath`.
    public func fetchRequest(forFetchedProperty name: String, of object: ManagedObject) throws(FetchError) -> FetchRequest {
        assertOnQueue()
        guard let property = object.entity.descriptionValue.fetchedProperty(named: name) else {
            throw .unknownKeyPath(name, entity: object.entityName)
        }
        let predicate = try coordinator.model.fetchedPropertyPredicate(property, sourceID: object.objectID) { path throws(FetchError) in
            try object.predicateValue(atKeyPath: path)
        }
        return FetchRequest(entityName: property.destinationEntityName, predicate: predicate)
    }
}

extension ManagedObject {
    /// The value at `path` (attributes, through to-one relationships), as a predicate constant.
    func predicateValue(atKeyPath path: String) throws(FetchError) -> PredicateValue {
        var current: ManagedObject? = self
        let names = path.split(separator: ".").map(String.init)
        for (i, name) in names.enumerated() {
            guard let object = current else { return .null }
            switch object.entity.property(named: name) {
            case .attribute?:
                guard i == names.count - 1 else { throw .unknownKeyPath(path, entity: entityName) }
                return .attribute(object.attributeValue(forKey: name))
            case .relationship(let r)? where !object.entity.relationships[r].isToMany:
                let next = object.object(forKey: name)
                if i == names.count - 1 { return next.map { .object($0.objectID) } ?? .null }
                current = next
            default:
                throw .unsupportedKeyPath(path, reason: "$FETCH_SOURCE's key paths follow attributes and to-one relationships")
            }
        }
        return .null
    }
}

extension ResolvedKeyPath {
    /// A value of the type this key path ends in: what a fetched property's predicate is checked
    /// with when the model is built.
    func sampleValue(_ model: ManagedObjectModel, store: UUID) throws(FetchError) -> PredicateValue {
        guard !isCollection else { throw .unsupportedKeyPath(text, reason: "$FETCH_SOURCE's key paths follow attributes and to-one relationships") }
        switch valueType(model) {
        case .object(let entity):
            let kind = model.schema[entity].kinds.first ?? entity
            return .object(ManagedObjectID(storeIdentifier: store, entityName: model.schema[kind].name, key: .permanent(1)))
        case .attribute(let type):
            switch type {
            case .integer16, .integer32, .integer64: return .attribute(.integer(0))
            case .decimal: return .attribute(.decimal(0))
            case .double: return .attribute(.double(0))
            case .float: return .attribute(.float(0))
            case .string: return .attribute(.string(""))
            case .boolean: return .attribute(.boolean(false))
            case .date: return .attribute(.date(Date(timeIntervalSinceReferenceDate: 0)))
            case .binary: return .attribute(.binary(Data()))
            case .uuid: return .attribute(.uuid(UUID()))
            case .uri: return .attribute(.uri(URL(string: "https://example.org")!))
            }
        }
    }
}

extension ObjectPredicate {
    /// The predicate with `$FETCH_SOURCE` and `$FETCH_SOURCE.path` replaced; any other free
    /// variable is refused (a fetched property takes no substitution variables).
    fileprivate func replacingSource(_ id: ManagedObjectID, value: (String) throws(FetchError) -> PredicateValue,
                                     bound: Set<String> = []) throws(FetchError) -> ObjectPredicate {
        switch self {
        case .constant: return self
        case .and(let ps): return .and(try ps.map { p throws(FetchError) in try p.replacingSource(id, value: value, bound: bound) })
        case .or(let ps): return .or(try ps.map { p throws(FetchError) in try p.replacingSource(id, value: value, bound: bound) })
        case .not(let p): return .not(try p.replacingSource(id, value: value, bound: bound))
        case .comparison(var c):
            c.lhs = try c.lhs.replacingSource(id, value: value, bound: bound)
            c.rhs = try c.rhs.replacingSource(id, value: value, bound: bound)
            return .comparison(c)
        }
    }
}

extension PredicateExpression {
    fileprivate func replacingSource(_ id: ManagedObjectID, value: (String) throws(FetchError) -> PredicateValue,
                                     bound: Set<String>) throws(FetchError) -> PredicateExpression {
        let source = FetchedPropertyDescription.sourceVariable
        switch self {
        case .variable(source) where !bound.contains(source): return .constant(.object(id))
        case .variable(let name) where !bound.contains(name):
            throw .invalidPredicate("$\(name): a fetched property's predicate takes $\(source) only")
        case .keyPath(let text) where text.hasPrefix("$\(source).") && !bound.contains(source):
            return .constant(try value(String(text.dropFirst(source.count + 2))))
        case .list(let items):
            return .list(try items.map { item throws(FetchError) in try item.replacingSource(id, value: value, bound: bound) })
        case let .subqueryCount(collection, variable, predicate):
            return .subqueryCount(collection: collection, variable: variable,
                                  predicate: try predicate.replacingSource(id, value: value, bound: bound.union([variable])))
        default:
            return self
        }
    }
}
