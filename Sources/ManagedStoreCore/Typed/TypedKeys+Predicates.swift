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
    public var ascending: TypedSort<Root> { TypedSort(descriptor: ObjectSortDescriptor(name)) }
    public var descending: TypedSort<Root> { TypedSort(descriptor: ObjectSortDescriptor(name, ascending: false)) }

    /// `key IN {values}`.
    public func isIn(_ values: [Value]) -> ObjectPredicate { .key(name).isIn(values) }
}

extension TypedAttribute where Value: Comparable {
    /// `key BETWEEN {low, high}`.
    public func between(_ low: Value, _ high: Value) -> ObjectPredicate { .key(name).between(low, high) }
}

extension TypedAttribute where Value == String {
    public var ascendingCaseInsensitive: TypedSort<Root> { TypedSort(descriptor: ObjectSortDescriptor(name, options: [.caseInsensitive])) }
    public func beginsWith(_ prefix: String, options: ComparisonOptions = []) -> ObjectPredicate { .key(name).beginsWith(prefix, options: options) }
    public func endsWith(_ suffix: String, options: ComparisonOptions = []) -> ObjectPredicate { .key(name).endsWith(suffix, options: options) }
    public func contains(_ text: String, options: ComparisonOptions = []) -> ObjectPredicate { .key(name).contains(text, options: options) }
    public func like(_ pattern: String, options: ComparisonOptions = []) -> ObjectPredicate { .key(name).like(pattern, options: options) }
    public func matches(_ regex: String, options: ComparisonOptions = []) -> ObjectPredicate { .key(name).matches(regex, options: options) }
}

public func == <Root, Value>(lhs: TypedAttribute<Root, Value>, rhs: Value) -> ObjectPredicate { .key(lhs.name) == rhs }
public func != <Root, Value>(lhs: TypedAttribute<Root, Value>, rhs: Value) -> ObjectPredicate { .key(lhs.name) != rhs }
public func == <Root, Value>(lhs: TypedAttribute<Root, Value>, rhs: _OptionalNilComparisonType) -> ObjectPredicate { .key(lhs.name) == nil }
public func != <Root, Value>(lhs: TypedAttribute<Root, Value>, rhs: _OptionalNilComparisonType) -> ObjectPredicate { .key(lhs.name) != nil }
public func < <Root, Value: Comparable>(lhs: TypedAttribute<Root, Value>, rhs: Value) -> ObjectPredicate { .key(lhs.name) < rhs }
public func <= <Root, Value: Comparable>(lhs: TypedAttribute<Root, Value>, rhs: Value) -> ObjectPredicate { .key(lhs.name) <= rhs }
public func > <Root, Value: Comparable>(lhs: TypedAttribute<Root, Value>, rhs: Value) -> ObjectPredicate { .key(lhs.name) > rhs }
public func >= <Root, Value: Comparable>(lhs: TypedAttribute<Root, Value>, rhs: Value) -> ObjectPredicate { .key(lhs.name) >= rhs }

/// A to-one holds `rhs` (or, for a to-many, any of its destinations is it).
public func == <Root, Destination>(lhs: TypedRelationship<Root, Destination>, rhs: Destination) -> ObjectPredicate {
    .key(lhs.name) == rhs.objectID
}
public func == <Root, Destination>(lhs: TypedRelationship<Root, Destination>, rhs: _OptionalNilComparisonType) -> ObjectPredicate {
    .key(lhs.name) == nil
}
public func != <Root, Destination>(lhs: TypedRelationship<Root, Destination>, rhs: _OptionalNilComparisonType) -> ObjectPredicate {
    .key(lhs.name) != nil
}
