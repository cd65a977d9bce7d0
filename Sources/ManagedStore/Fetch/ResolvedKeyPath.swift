/// A key path checked against the model: the to-one relationships it follows, and where it ends.
struct ResolvedKeyPath: Sendable, Hashable {
    enum Terminal: Sendable, Hashable {
        case attribute(entity: Int, index: Int)
        case relationship(entity: Int, index: Int)
    }

    let text: String
    /// (entity index, relationship index) of each to-one step before the terminal.
    let steps: [Step]
    let terminal: Terminal

    struct Step: Sendable, Hashable {
        let entity: Int
        let relationship: Int
    }

    static func == (l: ResolvedKeyPath, r: ResolvedKeyPath) -> Bool { l.text == r.text && l.steps == r.steps && l.terminal == r.terminal }
    func hash(into hasher: inout Hasher) { hasher.combine(text) }

    /// Resolves `text` from `root`. Every step but the last must be a to-one relationship.
    init(_ text: String, root: Entity, model: ManagedObjectModel) throws(FetchError) {
        let names = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard !names.isEmpty, !names.contains(where: \.isEmpty) else { throw .unknownKeyPath(text, entity: root.name) }
        var entity = root
        var steps: [Step] = []
        for (i, name) in names.enumerated() {
            let isLast = i == names.count - 1
            switch entity.propertyByName[name] {
            case .attribute(let a)?:
                guard isLast else { throw .unknownKeyPath(text, entity: root.name) }
                self.text = text
                self.steps = steps
                self.terminal = .attribute(entity: entity.index, index: a)
                return
            case .relationship(let r)?:
                let relationship = entity.relationships[r]
                if relationship.isToMany {
                    throw .unsupportedKeyPath(text, reason: "'\(name)' is a to-many relationship; ANY, ALL, @count and SUBQUERY are not supported yet")
                }
                if isLast {
                    self.text = text
                    self.steps = steps
                    self.terminal = .relationship(entity: entity.index, index: r)
                    return
                }
                steps.append(Step(entity: entity.index, relationship: r))
                entity = model.schema[relationship.destinationIndex]
            case nil:
                throw .unknownKeyPath(text, entity: root.name)
            }
        }
        throw .unknownKeyPath(text, entity: root.name)
    }

    /// Entities whose objects' values this key path reads (for deciding when pending changes matter).
    var entitiesRead: Set<Int> {
        var result = Set(steps.map(\.entity))
        switch terminal {
        case .attribute(let e, _), .relationship(let e, _): result.insert(e)
        }
        return result
    }
}
