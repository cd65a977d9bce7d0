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

/// An attribute of `Root`'s entity holding values of `Value`: the typed key of predicates and
/// sorts (`Task.priority >= 3`, `Task.title.ascending`) and of the generated properties.
public struct TypedAttribute<Root: TypedObject, Value: AttributeValueConvertible>: Sendable, Hashable {
    public let name: String
    public init(_ name: String) { self.name = name }
}

/// A relationship of `Root`'s entity whose destinations are `Destination`'s objects.
public struct TypedRelationship<Root: TypedObject, Destination: TypedObject>: Sendable, Hashable {
    public let name: String
    public init(_ name: String) { self.name = name }
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

    // What the generated properties read and write through.

    public func value<Value>(_ attribute: TypedAttribute<Self, Value>) -> Value? {
        object.value(attribute.name, as: Value.self)
    }

    public func setValue<Value>(_ value: Value?, for attribute: TypedAttribute<Self, Value>) {
        object.setValue(value, forKey: attribute.name)
    }

    public func destination<Destination>(_ relationship: TypedRelationship<Self, Destination>) -> Destination? {
        object.object(forKey: relationship.name).map(Destination.init)
    }

    public func setDestination<Destination>(_ destination: Destination?, for relationship: TypedRelationship<Self, Destination>) {
        object.setObject(destination?.object, forKey: relationship.name)
    }

    public func destinations<Destination>(_ relationship: TypedRelationship<Self, Destination>) -> [Destination] {
        object.objects(forKey: relationship.name).map(Destination.init)
    }

    public func setDestinations<Destination>(_ destinations: [Destination], for relationship: TypedRelationship<Self, Destination>) {
        object.setObjects(destinations.map(\.object), forKey: relationship.name)
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
}
