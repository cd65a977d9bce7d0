import Foundation

/// The value of one relationship as an object holds it.
enum RelationshipState: Sendable {
    /// Not read from the store yet: a relationship fault.
    case unloaded
    case toOne(ManagedObjectID?)
    case toMany(Set<ManagedObjectID>)
}

/// An object of the graph, living in one context [NSManagedObject].
///
/// Not Sendable, on purpose: an object belongs to its context's queue. Pass its `objectID` to
/// another context or task and call `object(with:)` there. Every accessor checks that it runs on
/// its context's queue and traps with an explanation otherwise.
///
/// A fetched object is a fault (`isFault`) until a property is read; relationships fault on
/// their own, and a to-many relationship is read from the store the first time it is used.
///
/// The stored state is `@exclusivity(unchecked)`: Swift's run-time exclusivity checks run on
/// every access, a share of a bulk insert worth taking back. What makes that safe: an object is used only on its context's
/// queue (every entry point checks), so no two threads touch it; and every access inside this
/// module is a short read or write that calls nothing able to reach the same object again (no
/// property is passed `inout`, no modify access spans a call into user code).
public final class ManagedObject: Hashable, CustomStringConvertible {
    @exclusivity(unchecked) public internal(set) var objectID: ManagedObjectID
    let entity: Entity
    /// Weak: the context keeps objects with changes alive, and nothing keeps a context alive
    /// through one of its objects.
    @exclusivity(unchecked) weak var context: ManagedObjectContext?

    /// True until the object's row has been read into `attributes` and `relationships`.
    @exclusivity(unchecked) public internal(set) var isFault: Bool
    /// A row fetched with the object but not yet turned into values (what a fetch leaves in a fault).
    @exclusivity(unchecked) var prefetchedRow: StoredRow?
    /// The batch this fault is read with, when it came from a fetch with a batch size.
    @exclusivity(unchecked) var faultBatch: FaultBatch?

    @exclusivity(unchecked) var attributes: [AttributeValue] = []
    @exclusivity(unchecked) var relationships: [RelationshipState] = []
    /// The values as last read from or saved to the store: the cached snapshot of a conflict.
    @exclusivity(unchecked) var committedAttributes: [AttributeValue] = []
    /// The values of the entity's transient attributes (`Entity.transientAttributes`), never
    /// stored; empty while all are null (most entities have none, and this costs them nothing).
    @exclusivity(unchecked) var transientValues: [AttributeValue] = []
    @exclusivity(unchecked) var committedRelationships: [RelationshipState] = []
    /// The order of the ordered to-many relationships (by relationship index) as this context
    /// knows it, and as last read or saved. Membership is `relationships`, which wins where the
    /// two disagree (`ManagedObjectContext.orderedValue`). Empty unless the entity has ordered
    /// relationships.
    @exclusivity(unchecked) var destinationOrder: [Int: [ManagedObjectID]] = [:]
    @exclusivity(unchecked) var committedDestinationOrder: [Int: [ManagedObjectID]] = [:]
    /// The optimistic-locking version the values were read at; 0 while never saved.
    @exclusivity(unchecked) var committedVersion: Int64 = 0

    /// The optimistic-locking version the object's values were read at (firing a fault reads
    /// it); 0 for an object never saved. Each save that changes the object adds one.
    public var version: Int64 {
        fireFaultIfNeeded()
        return committedVersion
    }

    /// The version a change is based on when it is not the one this context read: set
    /// through `baseVersion`, cleared by a save, `rollback()` or `reset()`.
    @exclusivity(unchecked) var claimedBaseVersion: Int64?

    /// The version your changes to this object are based on [optimistic locking against a
    /// version read elsewhere]. nil (the default) means the version this context read. Set it
    /// when the object's values were seen by someone else first (a version someone else read and sent back): the
    /// next save then fails with a conflict unless the store still holds exactly this version,
    /// even if this save changes nothing of the object, and the conflict reports every other
    /// conflict and uniqueness violation of the save with it. The values at that version are
    /// not known to the context, so the conflict's `cachedSnapshot` is nil.
    public var baseVersion: Int64? {
        get { requireContext(); return claimedBaseVersion }
        set {
            let context = requireContext()
            precondition(!isInserted, "ManagedObject \(objectID): an inserted object has no stored version to be based on")
            claimedBaseVersion = newValue
            context.noteBaseVersion(self)
        }
    }

    /// The version the store must hold for this object's changes to save.
    var expectedVersion: Int64 { claimedBaseVersion ?? committedVersion }

    /// The properties set explicitly since the object was inserted, read or last saved, equal
    /// values included (`noteSet`): bits for the first 64 properties, a set for the rest.
    @exclusivity(unchecked) var setBits: UInt64 = 0
    @exclusivity(unchecked) var setBeyond64: Set<Int> = []

    @exclusivity(unchecked) public internal(set) var isInserted = false
    @exclusivity(unchecked) public internal(set) var isDeleted = false
    /// Property indexes set explicitly since the last save (attributes first, then relationships).
    @exclusivity(unchecked) var changedAttributes: Set<Int> = []
    @exclusivity(unchecked) var changedRelationships: Set<Int> = []
    /// Already in the context's updated list (kept to avoid duplicates).
    @exclusivity(unchecked) var isListedAsUpdated = false
    /// Changed only through inverse maintenance of a loaded relationship.
    @exclusivity(unchecked) var isListedAsTouched = false
    /// The object's row was gone from the store when its fault fired.
    @exclusivity(unchecked) public internal(set) var isInaccessible = false
    /// Set once the object was deleted and that delete saved, or it was rolled back out.
    @exclusivity(unchecked) var isRemoved = false
    /// The context's generation when the object was registered: a `reset()` starts a new one,
    /// which detaches every object of the old at once, without visiting each.
    let generation: Int

    /// The object can no longer be used: removed, or its context was reset since.
    var isDetached: Bool {
        get { isRemoved || context?.generation != generation }
        set { isRemoved = newValue }
    }

    init(entity: Entity, objectID: ManagedObjectID, context: ManagedObjectContext, isFault: Bool) {
        self.entity = entity
        self.objectID = objectID
        self.context = context
        self.isFault = isFault
        self.generation = context.generation
    }

    public static func == (lhs: ManagedObject, rhs: ManagedObject) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }

    public var description: String {
        isFault ? "<\(objectID) fault>" : "<\(objectID) v\(committedVersion)\(isInserted ? " inserted" : "")\(isUpdated ? " updated" : "")\(isDeleted ? " deleted" : "")>"
    }

    public var entityName: String { entity.name }

    /// The description of the object's entity.
    public var entityDescription: EntityDescription { entity.descriptionValue }

    /// Every attribute's value, in the entity's attribute order (fires a fault).
    public var attributeValues: [AttributeValue] {
        requireContext()
        fireFaultIfNeeded()
        return attributes
    }

    /// The context the object lives in; nil once that context was reset or deallocated.
    public var managedObjectContext: ManagedObjectContext? { isDetached ? nil : context }

    /// True when the object has changes that the next save writes.
    public var isUpdated: Bool { !changedAttributes.isEmpty || !changedRelationships.isEmpty }
    public var hasChanges: Bool { isInserted || isDeleted || isUpdated }

    // MARK: Access checks

    /// The object's context, after checking that the caller is on its queue.
    @discardableResult
    func requireContext(_ function: StaticString = #function) -> ManagedObjectContext {
        // One load of the weak reference (this runs for every property access).
        guard let context, !isRemoved, context.generation == generation else {
            preconditionFailure("ManagedObject \(objectID): \(function) on an object whose context was reset, "
                + "deallocated, or that was deleted and saved. Keep the context alive, or fetch the object again by its ID.")
        }
        context.assertOnQueue(function)
        return context
    }

    @inline(__always)
    func fireFaultIfNeeded() {
        if isFault { requireContext().fireFault(self) }
    }

    func propertyRef(_ key: String, _ function: StaticString = #function) -> PropertyRef {
        guard let ref = entity.property(named: key) else {
            preconditionFailure("\(entity.name) has no property '\(key)' (\(function)). Its properties are: "
                + (entity.attributes.map(\.name) + entity.relationships.map(\.name)).joined(separator: ", "))
        }
        return ref
    }

    func attributeIndex(_ key: String, _ function: StaticString = #function) -> Int {
        guard case .attribute(let index) = propertyRef(key, function) else {
            preconditionFailure("\(entity.name).\(key) is a relationship; use object(forKey:) / objects(forKey:) (\(function))")
        }
        return index
    }

    // MARK: Attributes

    /// The value of attribute `key` [primitiveValue(forKey:)], a transient one's too.
    public func attributeValue(forKey key: String) -> AttributeValue {
        // One look-up on the common path; a transient is looked for only where no stored
        // property has the name.
        guard case .attribute(let index)? = entity.property(named: key) else {
            if let transient = entity.transientIndex(key) { return transientValue(at: transient) }
            return attributes[attributeIndex(key)]  // traps, naming the entity's properties
        }
        requireContext()
        fireFaultIfNeeded()
        return attributes[index]
    }

    /// Sets attribute `key`. A value of the wrong type or out of range is kept and reported by
    /// validation when the context saves (`invalid-type`, `too-large`, ...), as in Core Data.
    /// A transient attribute's value is kept on the object only: no save writes it.
    public func setAttributeValue(_ value: AttributeValue, forKey key: String) {
        guard case .attribute(let index)? = entity.property(named: key) else {
            if let transient = entity.transientIndex(key) { return setTransientValue(value, at: transient) }
            return setAttribute(value, at: attributeIndex(key))  // traps, naming the entity's properties
        }
        setAttribute(value, at: index)
    }

    // MARK: Transient attributes

    /// Whether `key` names a transient attribute (no stored property has the name); false at
    /// once for an entity without transients, the common case.
    private func isTransientName(_ key: String) -> Bool {
        !entity.transientAttributes.isEmpty && entity.property(named: key) == nil && entity.transientIndex(key) != nil
    }

    func transientValue(at index: Int) -> AttributeValue {
        requireContext()
        return transientValues.isEmpty ? .null : transientValues[index]
    }

    func setTransientValue(_ value: AttributeValue, at index: Int) {
        requireContext()
        // Misuse by the program, trapped as a stored attribute's misuse is (`setAttribute`).
        // Nothing a client sends reaches here: the server sets no transient (a write naming one
        // is 400 in `ObjectBody`). A stored attribute's wrong type waits for validation; a
        // transient is never validated, so its type is checked here.
        precondition(!isDeleted, "ManagedObject \(objectID): setting '\(entity.transientAttributes[index].name)' on a deleted object")
        precondition(value.isNull || value.fits(entity.transientAttributes[index].type),
                     "\(entity.name).\(entity.transientAttributes[index].name) is a transient \(entity.transientAttributes[index].type.rawValue): cannot hold a \(value.kindName)")
        if transientValues.isEmpty {
            guard !value.isNull else { return }
            transientValues = Array(repeating: .null, count: entity.transientAttributes.count)
        }
        transientValues[index] = value
    }

    func setAttribute(_ value: AttributeValue, at index: Int) {
        let context = requireContext()
        precondition(!isDeleted, "ManagedObject \(objectID): setting '\(entity.attributes[index].name)' on a deleted object")
        fireFaultIfNeeded()
        noteSet(index)
        if attributes[index] == value {
            // Nothing to write, but the next save must still end what was set (R).
            if !isInserted { context.noteUpdated(self) }
            return
        }
        attributes[index] = value
        if !isInserted {
            changedAttributes.insert(index)
            context.noteUpdated(self)
        }
    }

    /// Remembers that property `index` (attributes first, then relationships) was set by the
    /// application (not through an inverse), even to the value it had: what a change "sets" (R)
    /// for a merge policy (`overwrite` keeps it, though the store holds the same value), and
    /// what an insert brings when a merge policy folds it into the object holding its unique
    /// values. One bit each up to 64 properties: no allocation on the insert path.
    func noteSet(_ index: Int) {
        if index < 64 { setBits |= 1 << UInt64(index) } else { setBeyond64.insert(index) }
    }

    /// Whether property `index` was set since the object was inserted, read or last saved.
    func wasSet(_ index: Int) -> Bool {
        index < 64 ? setBits & (1 << UInt64(index)) != 0 : setBeyond64.contains(index)
    }

    /// Forgets which properties were set (after a save, a rollback or a refresh).
    func clearSetProperties() {
        setBits = 0
        if !setBeyond64.isEmpty { setBeyond64 = [] }
    }

    /// The attribute as a Swift type: `object.value("title", as: String.self)`; nil when null
    /// or of another type.
    public func value<T: AttributeValueConvertible>(_ key: String, as type: T.Type = T.self) -> T? {
        T(attributeValue: attributeValue(forKey: key))
    }

    /// Inlinable so that the call is specialized for `T` at the caller, not run generically.
    @inlinable
    public func setValue<T: AttributeValueConvertible>(_ value: T?, forKey key: String) {
        setAttributeValue(value?.attributeValue ?? .null, forKey: key)
    }

    /// Key-value access by name [value(forKey:)]: an attribute's Swift value (`Int64`, `String`,
    /// `Date`, ...), a to-one relationship's `ManagedObject`, or a to-many's `[ManagedObject]`
    /// in primary-key order. Setting takes the same kinds of values, or nil.
    public subscript(key: String) -> Any? {
        get {
            if isTransientName(key) { return attributeValue(forKey: key).anyValue }
            switch propertyRef(key) {
            case .attribute: return attributeValue(forKey: key).anyValue
            case .relationship(let r): return entity.relationships[r].isToMany ? objects(forKey: key) : object(forKey: key)
            }
        }
        set {
            if isTransientName(key) {
                guard let value = AttributeValue(any: newValue) else {
                    preconditionFailure("\(entity.name).\(key): cannot hold a value of type \(type(of: newValue!)) in an attribute")
                }
                setAttributeValue(value, forKey: key)
                return
            }
            switch propertyRef(key) {
            case .attribute:
                guard let value = AttributeValue(any: newValue) else {
                    preconditionFailure("\(entity.name).\(key): cannot store a value of type \(type(of: newValue!)) in an attribute")
                }
                setAttributeValue(value, forKey: key)
            case .relationship(let r):
                if entity.relationships[r].isToMany {
                    guard let objects = newValue as? [ManagedObject] ?? (newValue as? Set<ManagedObject>).map(Array.init) ?? (newValue == nil ? [] : nil) else {
                        preconditionFailure("\(entity.name).\(key) is to-many: set an array or set of ManagedObject")
                    }
                    setObjects(objects, forKey: key)
                } else {
                    guard newValue == nil || newValue is ManagedObject else {
                        preconditionFailure("\(entity.name).\(key) is to-one: set a ManagedObject or nil")
                    }
                    setObject(newValue as? ManagedObject, forKey: key)
                }
            }
        }
    }

    // MARK: Snapshots

    /// Attribute and to-one values as they are now.
    public func currentValues() -> ObjectSnapshot {
        requireContext()
        fireFaultIfNeeded()
        return snapshot(attributes: attributes, relationships: relationships)
    }

    /// Attribute and to-one values as last read from or saved to the store [committedValues(forKeys:)].
    public func committedValues() -> ObjectSnapshot {
        requireContext()
        fireFaultIfNeeded()
        return isInserted ? [:] : snapshot(attributes: committedAttributes, relationships: committedRelationships)
    }

    /// The properties set since the last save, with their new values [changedValues()].
    public func changedValues() -> ObjectSnapshot {
        requireContext()
        var result: ObjectSnapshot = [:]
        for a in changedAttributes where attributes[a] != committedAttributes[a] {
            result[entity.attributes[a].name] = .attribute(attributes[a])
        }
        for r in changedRelationships {
            switch relationships[r] {
            case .toOne(let id): result[entity.relationships[r].name] = .object(id)
            case .toMany(let ids): result[entity.relationships[r].name] = .objects(ids.sortedByKey())
            case .unloaded: break
            }
        }
        return result
    }

    func snapshot(attributes: [AttributeValue], relationships: [RelationshipState]) -> ObjectSnapshot {
        var result: ObjectSnapshot = [:]
        for (i, a) in entity.attributes.enumerated() where i < attributes.count { result[a.name] = .attribute(attributes[i]) }
        for r in entity.relationships where r.index < relationships.count {
            if case .toOne(let id) = relationships[r.index] { result[r.name] = .object(id) }
        }
        return result
    }
}

extension Collection where Element == ManagedObjectID {
    /// IDs in primary-key order (temporary IDs last, in creation order): the API's order of to-many values.
    func sortedByKey() -> [ManagedObjectID] {
        sorted { a, b in
            switch (a.key, b.key) {
            case let (.permanent(x), .permanent(y)): return x < y
            case (.permanent, .temporary): return true
            case (.temporary, .permanent): return false
            case let (.temporary(x), .temporary(y)): return x < y
            }
        }
    }
}
