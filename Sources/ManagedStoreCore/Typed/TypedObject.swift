import Foundation

/// An entity's typed view of its objects [an NSManagedObject subclass]: what
/// `managedstore generate swift` writes for each entity conforms. It wraps a `ManagedObject`
/// and changes nothing about contexts: the object lives on its context's queue as before, and
/// `object` offers everything the untyped API does.
public protocol TypedObject {
    /// The entity's name in the model.
    static var entityName: String { get }
    /// The object this view is of.
    var object: ManagedObject { get }
    /// The typed view of `object`, which must be of `entityName` (`ManagedObject.typed(as:)`
    /// checks that).
    init(_ object: ManagedObject)
}

/// The typed view of an entity that has objects of its own: every entity but an abstract one,
/// so that inserting an abstract entity's object does not compile.
public protocol InsertableTypedObject: TypedObject {}

extension InsertableTypedObject {
    /// A new object of the entity in `context` [insertNewObject(forEntityName:into:)].
    public static func insert(into context: ManagedObjectContext) -> Self {
        Self(context.insertNewObject(forEntityName: entityName))
    }
}

extension TypedObject {
    public var objectID: ManagedObjectID { object.objectID }

    /// A fetch request for the entity's objects [fetchRequest()].
    public static func fetchRequest(where predicate: ObjectPredicate? = nil, sortedBy sorts: [TypedSort<Self>] = [],
                                    limit: Int = 0) -> FetchRequest {
        FetchRequest(entityName: entityName, predicate: predicate, sortDescriptors: sorts.map(\.descriptor), fetchLimit: limit)
    }

    /// The entity's objects in `context` that match, in the order asked for. Call it on the
    /// context's queue.
    public static func fetch(in context: ManagedObjectContext, where predicate: ObjectPredicate? = nil,
                             sortedBy sorts: [TypedSort<Self>] = [], limit: Int = 0) throws(FetchError) -> [Self] {
        try context.fetch(fetchRequest(where: predicate, sortedBy: sorts, limit: limit)).map(Self.init)
    }

    // What the generated properties read and write through. A key through to-ones
    // (`Bookmark.zimFile.name`) reads the object at its end, or nil when a step holds none, and
    // writes there, or nowhere when a step holds none [value(forKeyPath:), setValue(_:forKeyPath:)].

    public func value<Value>(_ attribute: TypedAttribute<Self, Value>) -> Value? {
        guard let (holder, key) = object.endOfKeyPath(attribute.keyPath) else { return nil }
        return holder.value(key, as: Value.self)
    }

    public func setValue<Value>(_ value: Value?, for attribute: TypedAttribute<Self, Value>) {
        guard let (holder, key) = object.endOfKeyPath(attribute.keyPath) else { return }
        holder.setValue(value, forKey: key)
    }

    public func destination<Destination>(_ relationship: TypedToOne<Self, Destination>) -> Destination? {
        guard let (holder, key) = object.endOfKeyPath(relationship.keyPath) else { return nil }
        return holder.object(forKey: key).map(Destination.init)
    }

    public func setDestination<Destination>(_ destination: Destination?, for relationship: TypedToOne<Self, Destination>) {
        guard let (holder, key) = object.endOfKeyPath(relationship.keyPath) else { return }
        holder.setObject(destination?.object, forKey: key)
    }

    public func destinations<Destination>(_ relationship: TypedToMany<Self, Destination>) -> [Destination] {
        object.objects(forKey: relationship.keyPath).map(Destination.init)
    }

    public func setDestinations<Destination>(_ destinations: [Destination], for relationship: TypedToMany<Self, Destination>) {
        object.setObjects(destinations.map(\.object), forKey: relationship.keyPath)
    }
}

extension ManagedObject {
    /// This object as `T`'s typed view; nil when it is of another entity (an object of a
    /// sub-entity of `T`'s entity is one of `T` too).
    public func typed<T: TypedObject>(as type: T.Type) -> T? {
        if entityName == T.entityName { return T(self) }
        guard let model = context?.coordinator.model, let kind = model.resolvedEntity(named: T.entityName),
              kind.kinds.contains(entity.index) else { return nil }
        return T(self)
    }

    /// The object a key path's to-one steps lead to from this one, and the key left to read
    /// there: `zimFile.owner.name` gives the owner and `name`. Nil when a step holds no object.
    func endOfKeyPath(_ keyPath: String) -> (ManagedObject, String)? {
        guard keyPath.utf8.contains(UInt8(ascii: ".")) else { return (self, keyPath) }
        var steps = keyPath.split(separator: ".", omittingEmptySubsequences: false)
        let last = String(steps.removeLast())
        var holder = self
        for step in steps {
            guard let next = holder.object(forKey: String(step)) else { return nil }
            holder = next
        }
        return (holder, last)
    }
}
