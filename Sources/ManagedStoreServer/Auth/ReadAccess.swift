import ManagedStoreCore

/// What a read reaches besides its own entity, checked on what the request's parsers made of
/// it (the parsed `include` tree and `select` key paths): one parser per grammar, and the check
/// sees exactly the relationships the read will follow.
extension AccessControl {
    /// A parent entity's objects are those of its sub-entities, each answered whole: a list, an
    /// aggregate or a batch change of the parent needs the same access to every one of them.
    func requireKinds(_ token: AccessToken?, _ level: AccessScope.Level, of entity: EntityDescription, in model: ManagedObjectModel) throws(Problem) {
        for kind in model.kindNames(of: entity.name) where kind != entity.name { try require(token, level, on: .entity(kind)) }
    }

    /// Read on `entity` and on each of its sub-entities.
    func requireRead(_ entity: EntityDescription, _ token: AccessToken?, in model: ManagedObjectModel) throws(Problem) {
        try require(token, .read, on: .entity(entity.name))
        try requireKinds(token, .read, of: entity, in: model)
    }

    /// `include` embeds the related objects whole: read on every entity the tree reaches from
    /// `entity`, and on each sub-entity of a parent it reaches.
    func requireRead(reachedBy include: IncludeTree, from entity: EntityDescription, _ token: AccessToken?, in model: ManagedObjectModel) throws(Problem) {
        for (name, child) in include.children.sorted(by: { $0.key < $1.key }) {
            guard let destination = entity.relationship(named: name).flatMap({ model.entity(named: $0.destination) }) else { continue }
            try requireRead(destination, token, in: model)
            try requireRead(reachedBy: child, from: destination, token, in: model)
        }
    }

    /// An aggregate answers the values its key paths reach: through a relationship, another
    /// entity's, which needs read as `include` does. (A filter or a sort through one does not:
    /// it answers no values of the other entity.)
    func requireRead(reachedBy aggregate: AggregateRequest, from entity: EntityDescription, _ token: AccessToken?, in model: ManagedObjectModel) throws(Problem) {
        for property in aggregate.properties {
            let keyPath: String?
            switch property.expression {
            case .groupKey(let path): keyPath = path
            case .function(_, let path): keyPath = path
            }
            var current = entity
            for step in (keyPath ?? "").split(separator: ".") {
                guard let destination = current.relationship(named: String(step)).flatMap({ model.entity(named: $0.destination) }) else { break }
                try requireRead(destination, token, in: model)
                current = destination
            }
        }
    }
}
