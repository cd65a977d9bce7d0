// The typed keys of a typed view: each names a property of `Root`'s entity (or, through
// to-ones, of an entity it leads to) and knows the type of what it holds, so that predicates,
// sorts and the generated properties are checked by the compiler.

/// An attribute of `Root`'s entity holding values of `Value`: the typed key of predicates and
/// sorts (`Task.priority >= 3`, `Task.title.ascending`) and of the generated properties. Reached
/// through to-ones (`Bookmark.zimFile.name`) it is the attribute at the end of the path.
public struct TypedAttribute<Root: TypedObject, Value: AttributeValueConvertible>: Sendable, Hashable {
    /// The key path from `Root`'s entity: `name`, or `zimFile.name` through a to-one.
    public let keyPath: String
    public init(_ keyPath: String) { self.keyPath = keyPath }

    @available(*, deprecated, renamed: "keyPath", message: "a typed key may lead through to-ones: its key path")
    public var name: String { keyPath }
}

/// A to-one relationship of `Root`'s entity whose destination is a `Destination`. Its
/// destination's attributes and to-ones are members of it: `Bookmark.zimFile.name` is a
/// `TypedAttribute<Bookmark, String>` for the key path `zimFile.name`, checked by the compiler
/// like any other (the members are the destination view's static keys, found by key path; a
/// destination key that is also named `keyPath` is reached as `[dynamicMember: \.keyPath]`).
@dynamicMemberLookup
public struct TypedToOne<Root: TypedObject, Destination: TypedObject>: Sendable, Hashable {
    /// The key path from `Root`'s entity: `zimFile`, or `zimFile.owner` through another to-one.
    public let keyPath: String
    public init(_ keyPath: String) { self.keyPath = keyPath }

    /// An attribute of the destination, from `Root`.
    public subscript<Value>(dynamicMember key: KeyPath<Destination.Type, TypedAttribute<Destination, Value>>) -> TypedAttribute<Root, Value> {
        TypedAttribute(keyPath + "." + Destination.self[keyPath: key].keyPath)
    }

    /// A to-one of the destination, from `Root`: the path goes on.
    public subscript<Next>(dynamicMember key: KeyPath<Destination.Type, TypedToOne<Destination, Next>>) -> TypedToOne<Root, Next> {
        TypedToOne<Root, Next>(keyPath + "." + Destination.self[keyPath: key].keyPath)
    }
}

/// A to-many relationship of `Root`'s entity whose destinations are `Destination`s. A key path
/// does not go on through it: a predicate through a to-many needs `ANY` or `ALL`
/// (`ObjectPredicate`'s untyped keys).
public struct TypedToMany<Root: TypedObject, Destination: TypedObject>: Sendable, Hashable {
    /// The relationship's name.
    public let keyPath: String
    public init(_ keyPath: String) { self.keyPath = keyPath }

    @available(*, deprecated, renamed: "keyPath")
    public var name: String { keyPath }
}

/// The one relationship key of earlier generated views, for both kinds.
@available(*, deprecated, message: "a to-one is TypedToOne (its destination's keys are its members), a to-many TypedToMany")
public typealias TypedRelationship<Root: TypedObject, Destination: TypedObject> = TypedToMany<Root, Destination>
