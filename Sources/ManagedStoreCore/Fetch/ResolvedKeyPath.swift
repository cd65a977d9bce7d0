/// A key path checked against the model: where it starts, the relationships it follows, and
/// where it ends. A path that follows a to-many relationship is a collection (ANY is implied).
package struct ResolvedKeyPath: Sendable, Hashable {
    package enum Root: Sendable, Hashable {
        /// The fetched object (or, inside a SUBQUERY, still the fetched object).
        case object
        /// A SUBQUERY variable: `$t` in `SUBQUERY(tags, $t, $t.label == "x")`.
        case variable(String)
    }

    package struct Step: Sendable, Hashable {
        package let entity: Int
        package let relationship: Int
        package let isToMany: Bool
    }

    package enum Terminal: Sendable, Hashable {
        /// An attribute's value.
        case attribute(entity: Int, index: Int)
        /// A to-one relationship's destination ID (read from the row without a join where possible).
        case toOne(entity: Int, relationship: Int)
        /// The object reached by the steps (a to-many relationship's destinations, or `$t` itself).
        case object(entity: Int)
        /// A result of an aggregate's groups, by its position: what a having predicate or a
        /// sort of groups names. It exists only in the SQL over the groups, never on an object.
        case groupColumn(index: Int, type: OperandType)
    }

    let text: String
    package let root: Root
    let rootEntity: Int
    package let steps: [Step]
    package let terminal: Terminal

    var isCollection: Bool { steps.contains(where: \.isToMany) }

    /// Resolves `text` from `rootEntity`, or from a SUBQUERY variable (`$t.label`) bound in `variables`.
    init(_ text: String, rootEntity root: Entity, variables: [String: Int] = [:], model: ManagedObjectModel) throws(FetchError) {
        // One attribute of the fetched entity, the common case: no splitting.
        if case .attribute(let a)? = root.property(named: text) {
            self.text = text
            self.root = .object
            self.rootEntity = root.index
            self.steps = []
            self.terminal = .attribute(entity: root.index, index: a)
            return
        }
        var names = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard !names.isEmpty, !names.contains(where: \.isEmpty) else { throw .unknownKeyPath(text, entity: root.name) }
        var entity = root
        if names[0].hasPrefix("$") {
            let variable = String(names[0].dropFirst())
            guard let bound = variables[variable] else {
                throw .invalidPredicate("$\(variable) is not a SUBQUERY variable here (substitution variables need withSubstitutionVariables)")
            }
            self.root = .variable(variable)
            entity = model.schema[bound]
            names.removeFirst()
        } else {
            self.root = .object
        }
        self.rootEntity = entity.index
        self.text = text
        var steps: [Step] = []
        guard !names.isEmpty else {
            self.steps = []
            self.terminal = .object(entity: entity.index)
            return
        }
        for (i, name) in names.enumerated() {
            let isLast = i == names.count - 1
            switch entity.property(named: name) {
            case .attribute(let a)?:
                guard isLast else { throw .unknownKeyPath(text, entity: root.name) }
                self.steps = steps
                self.terminal = .attribute(entity: entity.index, index: a)
                return
            case .relationship(let r)?:
                let relationship = entity.relationships[r]
                if isLast && !relationship.isToMany {
                    self.steps = steps
                    self.terminal = .toOne(entity: entity.index, relationship: r)
                    return
                }
                steps.append(Step(entity: entity.index, relationship: r, isToMany: relationship.isToMany))
                entity = model.schema[relationship.destinationIndex]
                if isLast {
                    self.steps = steps
                    self.terminal = .object(entity: entity.index)
                    return
                }
            case nil:
                throw .unknownKeyPath(text, entity: root.name)
            }
        }
        throw .unknownKeyPath(text, entity: root.name)
    }

    /// A result of an aggregate's groups, called `name` (no steps: a group has no relationships).
    init(groupColumn index: Int, named name: String, type: OperandType, rootEntity: Entity) {
        self.text = name
        self.root = .object
        self.rootEntity = rootEntity.index
        self.steps = []
        self.terminal = .groupColumn(index: index, type: type)
    }

    /// The type of the value at the end of the path.
    package func valueType(_ model: ManagedObjectModel) -> OperandType {
        switch terminal {
        case let .attribute(e, a): return .attribute(model.schema[e].attributes[a].type)
        case let .toOne(e, r): return .object(model.schema[e].relationships[r].destinationIndex)
        case let .object(e): return .object(e)
        case let .groupColumn(_, type): return type
        }
    }

    /// Entities whose objects' values this key path reads (for deciding when pending changes matter).
    var entitiesRead: Set<Int> {
        var result = Set(steps.map(\.entity))
        result.insert(rootEntity)
        switch terminal {
        case .attribute(let e, _), .toOne(let e, _), .object(let e): result.insert(e)
        case .groupColumn: break
        }
        return result
    }
}

/// What an operand holds, for type checks.
package enum OperandType: Sendable, Hashable {
    case attribute(AttributeType)
    /// An object of the entity with this index (its ID).
    case object(Int)
}
