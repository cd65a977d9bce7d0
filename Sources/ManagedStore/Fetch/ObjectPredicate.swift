/// A constant in a predicate: an attribute value (or nil) or an object ID.
public enum PredicateValue: Sendable, Hashable {
    case attribute(AttributeValue)
    case object(ManagedObjectID)

    public static let null = PredicateValue.attribute(.null)
}

/// An operand of a comparison.
public indirect enum PredicateExpression: Sendable, Hashable {
    /// A dotted key path from the fetched entity: `priority`, `project.name`.
    case keyPath(String)
    case constant(PredicateValue)
}

/// The comparison operators [NSComparisonPredicate.Operator].
public enum ComparisonOperator: String, Sendable, Hashable, CaseIterable {
    case equal = "=="
    case notEqual = "!="
    case lessThan = "<"
    case lessThanOrEqual = "<="
    case greaterThan = ">"
    case greaterThanOrEqual = ">="

    var isOrdering: Bool { self != .equal && self != .notEqual }
}

/// A filter on the objects of one entity [NSPredicate].
///
/// Built in code (`.key("priority") >= 2 && .key("done") == false`) or, from the next
/// release on, parsed from NSPredicate format strings. The same predicate runs as SQL in the
/// store and in memory over unsaved objects, with the same answer:
/// - comparing with nil: `== nil` and `!= nil` test for null; `<`, `>` and the like are false
///   when either side is nil, and so never match a null, also under NOT;
/// - strings compare by Unicode code point, numbers by value across numeric types.
public indirect enum ObjectPredicate: Sendable, Hashable {
    /// TRUEPREDICATE / FALSEPREDICATE.
    case constant(Bool)
    case comparison(PredicateExpression, ComparisonOperator, PredicateExpression)
    case and([ObjectPredicate])
    case or([ObjectPredicate])
    case not(ObjectPredicate)

    /// A key path operand, the start of a comparison: `.key("project.name") == "Apollo"`.
    public static func key(_ path: String) -> PredicateKey { PredicateKey(path: path) }
}

/// The left side of a comparison under construction.
public struct PredicateKey: Sendable, Hashable {
    public let path: String

    /// Lets `.key("priority") >= 2` read naturally where a predicate is expected.
    public static func key(_ path: String) -> PredicateKey { PredicateKey(path: path) }
}

public func == (lhs: PredicateKey, rhs: some AttributeValueConvertible) -> ObjectPredicate {
    .comparison(.keyPath(lhs.path), .equal, .constant(.attribute(rhs.attributeValue)))
}
public func != (lhs: PredicateKey, rhs: some AttributeValueConvertible) -> ObjectPredicate {
    .comparison(.keyPath(lhs.path), .notEqual, .constant(.attribute(rhs.attributeValue)))
}
public func < (lhs: PredicateKey, rhs: some AttributeValueConvertible) -> ObjectPredicate {
    .comparison(.keyPath(lhs.path), .lessThan, .constant(.attribute(rhs.attributeValue)))
}
public func <= (lhs: PredicateKey, rhs: some AttributeValueConvertible) -> ObjectPredicate {
    .comparison(.keyPath(lhs.path), .lessThanOrEqual, .constant(.attribute(rhs.attributeValue)))
}
public func > (lhs: PredicateKey, rhs: some AttributeValueConvertible) -> ObjectPredicate {
    .comparison(.keyPath(lhs.path), .greaterThan, .constant(.attribute(rhs.attributeValue)))
}
public func >= (lhs: PredicateKey, rhs: some AttributeValueConvertible) -> ObjectPredicate {
    .comparison(.keyPath(lhs.path), .greaterThanOrEqual, .constant(.attribute(rhs.attributeValue)))
}
/// `key == nil` / `key != nil`.
public func == (lhs: PredicateKey, rhs: _OptionalNilComparisonType) -> ObjectPredicate {
    .comparison(.keyPath(lhs.path), .equal, .constant(.null))
}
public func != (lhs: PredicateKey, rhs: _OptionalNilComparisonType) -> ObjectPredicate {
    .comparison(.keyPath(lhs.path), .notEqual, .constant(.null))
}
/// A to-one relationship compared with an object ID.
public func == (lhs: PredicateKey, rhs: ManagedObjectID) -> ObjectPredicate {
    .comparison(.keyPath(lhs.path), .equal, .constant(.object(rhs)))
}
public func != (lhs: PredicateKey, rhs: ManagedObjectID) -> ObjectPredicate {
    .comparison(.keyPath(lhs.path), .notEqual, .constant(.object(rhs)))
}
/// Two key paths compared with each other.
public func == (lhs: PredicateKey, rhs: PredicateKey) -> ObjectPredicate { .comparison(.keyPath(lhs.path), .equal, .keyPath(rhs.path)) }
public func != (lhs: PredicateKey, rhs: PredicateKey) -> ObjectPredicate { .comparison(.keyPath(lhs.path), .notEqual, .keyPath(rhs.path)) }
public func < (lhs: PredicateKey, rhs: PredicateKey) -> ObjectPredicate { .comparison(.keyPath(lhs.path), .lessThan, .keyPath(rhs.path)) }
public func > (lhs: PredicateKey, rhs: PredicateKey) -> ObjectPredicate { .comparison(.keyPath(lhs.path), .greaterThan, .keyPath(rhs.path)) }

public func && (lhs: ObjectPredicate, rhs: ObjectPredicate) -> ObjectPredicate {
    if case .and(let l) = lhs { return .and(l + [rhs]) }
    return .and([lhs, rhs])
}
public func || (lhs: ObjectPredicate, rhs: ObjectPredicate) -> ObjectPredicate {
    if case .or(let l) = lhs { return .or(l + [rhs]) }
    return .or([lhs, rhs])
}
public prefix func ! (predicate: ObjectPredicate) -> ObjectPredicate { .not(predicate) }
