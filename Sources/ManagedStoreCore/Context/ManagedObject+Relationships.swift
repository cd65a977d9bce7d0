/// Relationship access. Setting one side keeps the inverse side up to date in memory at once,
/// as Core Data does, and the store keeps it up to date on save.
extension ManagedObject {
    func relationshipIndex(_ key: String, toMany: Bool, _ function: StaticString = #function) -> Int {
        guard case .relationship(let index) = propertyRef(key, function) else {
            preconditionFailure("\(entity.name).\(key) is an attribute, not a relationship (\(function))")
        }
        precondition(entity.relationships[index].isToMany == toMany,
                     "\(entity.name).\(key) is \(toMany ? "to-one" : "to-many"); use \(toMany ? "object(forKey:)" : "objects(forKey:)") (\(function))")
        return index
    }

    /// The ID a to-one relationship points at, without turning the destination into an object.
    public func objectID(forKey key: String) -> ManagedObjectID? {
        let r = relationshipIndex(key, toMany: false)
        return requireContext().toOneValue(of: self, r)
    }

    /// The destination of a to-one relationship (a fault until used).
    public func object(forKey key: String) -> ManagedObject? {
        let context = requireContext()
        return objectID(forKey: key).map { context.object(with: $0) }
    }

    /// Points a to-one relationship at `object` (of the same context) or at nothing.
    public func setObject(_ object: ManagedObject?, forKey key: String) {
        let r = relationshipIndex(key, toMany: false)
        let context = requireContext()
        if let object { context.checkDestination(object, of: self, r) }
        context.setToOne(self, r, object?.objectID)
    }

    /// The IDs of a to-many relationship's destinations, in primary-key order; an ordered
    /// relationship's in their own order.
    public func objectIDs(forKey key: String) -> [ManagedObjectID] {
        let r = relationshipIndex(key, toMany: true)
        let context = requireContext()
        if entity.relationships[r].isOrdered { return context.orderedValue(of: self, r) }
        return context.toManyValue(of: self, r).sortedByKey()
    }

    /// The destinations of a to-many relationship, in primary-key order; an ordered
    /// relationship's in their own order (each a fault until used).
    public func objects(forKey key: String) -> [ManagedObject] {
        let context = requireContext()
        return objectIDs(forKey: key).map { context.object(with: $0) }
    }

    /// The number of destinations of a to-many relationship.
    public func count(forKey key: String) -> Int {
        let r = relationshipIndex(key, toMany: true)
        return requireContext().toManyValue(of: self, r).count
    }

    /// Replaces the destinations of a to-many relationship; an ordered relationship takes the
    /// order of `objects` (an object given twice counts once, at its first place).
    public func setObjects(_ objects: [ManagedObject], forKey key: String) {
        let r = relationshipIndex(key, toMany: true)
        let context = requireContext()
        for object in objects { context.checkDestination(object, of: self, r) }
        let ids = objects.map(\.objectID)
        context.setToMany(self, r, Set(ids), order: entity.relationships[r].isOrdered ? ids : nil)
    }

    /// Adds `object` to a to-many relationship (last, in an ordered one) [mutableSetValue(forKey:).add].
    public func addObject(_ object: ManagedObject, toKey key: String) {
        let r = relationshipIndex(key, toMany: true)
        let context = requireContext()
        context.checkDestination(object, of: self, r)
        var set = context.toManyValue(of: self, r)
        if set.insert(object.objectID).inserted { context.setToMany(self, r, set) }
    }

    /// Removes `object` from a to-many relationship.
    public func removeObject(_ object: ManagedObject, fromKey key: String) {
        let r = relationshipIndex(key, toMany: true)
        let context = requireContext()
        var set = context.toManyValue(of: self, r)
        if set.remove(object.objectID) != nil { context.setToMany(self, r, set) }
    }

    /// Whether a relationship is still a fault (not read from the store).
    public func hasFault(forRelationshipNamed key: String) -> Bool {
        guard case .relationship(let r) = propertyRef(key) else {
            preconditionFailure("\(entity.name).\(key) is not a relationship")
        }
        requireContext()
        return isFault || { if case .unloaded = relationships[r] { return true } else { return false } }()
    }
}
