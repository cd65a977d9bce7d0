// Predicates from typed keys: `Task.priority >= 3 && Task.done == false`. Each comparison is
// checked by the compiler (comparing a key with a value of another type does not compile) and
// gives an `ObjectPredicate`, which AND, OR and NOT (`&&`, `||`, `!`) combine as any other.
// (Typed combinations of their own were tried: their operator overloads made the type checker
// give up on untyped predicate expressions elsewhere.)

/// A sort of `Root`'s objects by a typed key: `Task.priority.descending`.
public struct TypedSort<Root: TypedObject>: Sendable {
    public let descriptor: ObjectSortDescriptor
}

extension TypedAttribute {
    public var ascending: TypedSort<Root> { TypedSort(descriptor: ObjectSortDescriptor(keyPath)) }
    public var descending: TypedSort<Root> { TypedSort(descriptor: ObjectSortDescriptor(keyPath, ascending: false)) }

    /// `key IN {values}`.
    public func isIn(_ values: [Value]) -> ObjectPredicate { .key(keyPath).isIn(values) }
}

extension TypedAttribute where Value: Comparable {
    /// `key BETWEEN {low, high}`.
    public func between(_ low: Value, _ high: Value) -> ObjectPredicate { .key(keyPath).between(low, high) }
}

extension TypedAttribute where Value == String {
    public var ascendingCaseInsensitive: TypedSort<Root> { TypedSort(descriptor: ObjectSortDescriptor(keyPath, options: [.caseInsensitive])) }
    public func beginsWith(_ prefix: String, options: ComparisonOptions = []) -> ObjectPredicate { .key(keyPath).beginsWith(prefix, options: options) }
    public func endsWith(_ suffix: String, options: ComparisonOptions = []) -> ObjectPredicate { .key(keyPath).endsWith(suffix, options: options) }
    public func contains(_ text: String, options: ComparisonOptions = []) -> ObjectPredicate { .key(keyPath).contains(text, options: options) }
    public func like(_ pattern: String, options: ComparisonOptions = []) -> ObjectPredicate { .key(keyPath).like(pattern, options: options) }
    public func matches(_ regex: String, options: ComparisonOptions = []) -> ObjectPredicate { .key(keyPath).matches(regex, options: options) }
}

public func == <Root, Value>(lhs: TypedAttribute<Root, Value>, rhs: Value) -> ObjectPredicate { .key(lhs.keyPath) == rhs }
public func != <Root, Value>(lhs: TypedAttribute<Root, Value>, rhs: Value) -> ObjectPredicate { .key(lhs.keyPath) != rhs }
public func == <Root, Value>(lhs: TypedAttribute<Root, Value>, rhs: _OptionalNilComparisonType) -> ObjectPredicate { .key(lhs.keyPath) == nil }
public func != <Root, Value>(lhs: TypedAttribute<Root, Value>, rhs: _OptionalNilComparisonType) -> ObjectPredicate { .key(lhs.keyPath) != nil }
public func < <Root, Value: Comparable>(lhs: TypedAttribute<Root, Value>, rhs: Value) -> ObjectPredicate { .key(lhs.keyPath) < rhs }
public func <= <Root, Value: Comparable>(lhs: TypedAttribute<Root, Value>, rhs: Value) -> ObjectPredicate { .key(lhs.keyPath) <= rhs }
public func > <Root, Value: Comparable>(lhs: TypedAttribute<Root, Value>, rhs: Value) -> ObjectPredicate { .key(lhs.keyPath) > rhs }
public func >= <Root, Value: Comparable>(lhs: TypedAttribute<Root, Value>, rhs: Value) -> ObjectPredicate { .key(lhs.keyPath) >= rhs }

/// The to-one holds `rhs`.
public func == <Root, Destination>(lhs: TypedToOne<Root, Destination>, rhs: Destination) -> ObjectPredicate {
    .key(lhs.keyPath) == rhs.objectID
}
/// The to-one holds another object than `rhs`, or none.
public func != <Root, Destination>(lhs: TypedToOne<Root, Destination>, rhs: Destination) -> ObjectPredicate {
    .key(lhs.keyPath) != rhs.objectID
}
public func == <Root, Destination>(lhs: TypedToOne<Root, Destination>, rhs: _OptionalNilComparisonType) -> ObjectPredicate {
    .key(lhs.keyPath) == nil
}
public func != <Root, Destination>(lhs: TypedToOne<Root, Destination>, rhs: _OptionalNilComparisonType) -> ObjectPredicate {
    .key(lhs.keyPath) != nil
}

/// Any of the to-many's destinations is `rhs`.
public func == <Root, Destination>(lhs: TypedToMany<Root, Destination>, rhs: Destination) -> ObjectPredicate {
    .key(lhs.keyPath) == rhs.objectID
}
/// As the untyped `.key(name) == nil` for the to-many.
public func == <Root, Destination>(lhs: TypedToMany<Root, Destination>, rhs: _OptionalNilComparisonType) -> ObjectPredicate {
    .key(lhs.keyPath) == nil
}
/// As the untyped `.key(name) != nil` for the to-many.
public func != <Root, Destination>(lhs: TypedToMany<Root, Destination>, rhs: _OptionalNilComparisonType) -> ObjectPredicate {
    .key(lhs.keyPath) != nil
}
