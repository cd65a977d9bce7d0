/// A constant in a predicate: an attribute value (or nil) or an object ID.
public enum PredicateValue: Sendable, Hashable {
    case attribute(AttributeValue)
    case object(ManagedObjectID)

    public static let null = PredicateValue.attribute(.null)
}

/// An aggregate function [NSExpression's @count, @sum, @avg, @min, @max, count:, sum:, …]: over
/// a to-many key path in a predicate, or over each group's objects in an `AggregateRequest`.
public enum AggregateFunction: String, Sendable, Hashable, CaseIterable {
    case count, sum, avg, min, max
}

/// An operand of a comparison [NSExpression].
public indirect enum PredicateExpression: Sendable, Hashable {
    /// A dotted key path from the fetched entity (`priority`, `project.name`, `tags.label`),
    /// or from a SUBQUERY variable (`$t.label`).
    case keyPath(String)
    case constant(PredicateValue)
    /// `{1, 2, 3}`: the right side of IN and BETWEEN.
    case list([PredicateExpression])
    /// `$NAME`: a substitution variable, replaced by `withSubstitutionVariables`.
    case variable(String)
    /// `tags.@count`, `tasks.@sum.priority`: `collection` is a key path ending in a to-many
    /// relationship; `attribute` (not for count) is a key path from its destination.
    case aggregate(AggregateFunction, collection: String, attribute: String?)
    /// `SUBQUERY(tags, $t, $t.label BEGINSWITH "a").@count`: the number of objects of
    /// `collection` for which `predicate` holds, with `variable` standing for each.
    case subqueryCount(collection: String, variable: String, predicate: ObjectPredicate)
}

/// The comparison operators [NSComparisonPredicate.Operator].
public enum ComparisonOperator: String, Sendable, Hashable, CaseIterable {
    case equal = "=="
    case notEqual = "!="
    case lessThan = "<"
    case lessThanOrEqual = "<="
    case greaterThan = ">"
    case greaterThanOrEqual = ">="
    case beginsWith = "BEGINSWITH"
    case endsWith = "ENDSWITH"
    case contains = "CONTAINS"
    /// `*` matches any run of characters and `?` one character; nothing else is special.
    case like = "LIKE"
    /// An ICU regular expression that must match the whole string.
    case matches = "MATCHES"
    /// The left side is one of the values of the right side (a list or a to-many key path).
    case `in` = "IN"
    /// `x BETWEEN {low, high}`: low <= x <= high.
    case between = "BETWEEN"

    var isOrdering: Bool {
        switch self {
        case .lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual: return true
        default: return false
        }
    }

    package var isStringOperator: Bool {
        switch self {
        case .beginsWith, .endsWith, .contains, .like, .matches: return true
        default: return false
        }
    }
}

/// How a comparison treats a to-many left side [NSComparisonPredicate.Modifier].
public enum ComparisonModifier: String, Sendable, Hashable {
    /// No modifier: ANY is implied when the left side is a to-many key path.
    case direct
    case any = "ANY"
    case all = "ALL"
    case none = "NONE"
}

/// `[c]`, `[d]`, `[cd]` [NSComparisonPredicate.Options].
public struct ComparisonOptions: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    public static let caseInsensitive = ComparisonOptions(rawValue: 1)
    public static let diacriticInsensitive = ComparisonOptions(rawValue: 2)

    /// `[c]`, `[d]` or `[cd]` as written in a format string; "" for none.
    public var formatSuffix: String {
        var s = ""
        if contains(.caseInsensitive) { s += "c" }
        if contains(.diacriticInsensitive) { s += "d" }
        return s.isEmpty ? "" : "[\(s)]"
    }
}

/// One comparison of a predicate [NSComparisonPredicate].
public struct ComparisonPredicate: Sendable, Hashable {
    public var modifier: ComparisonModifier
    public var lhs: PredicateExpression
    public var op: ComparisonOperator
    public var rhs: PredicateExpression
    public var options: ComparisonOptions

    public init(_ lhs: PredicateExpression, _ op: ComparisonOperator, _ rhs: PredicateExpression,
                modifier: ComparisonModifier = .direct, options: ComparisonOptions = []) {
        self.modifier = modifier
        self.lhs = lhs
        self.op = op
        self.rhs = rhs
        self.options = options
    }
}

/// A filter on the objects of one entity [NSPredicate].
///
/// Parse one from NSPredicate's format language (`try ObjectPredicate(format: "priority >= %d
/// AND title BEGINSWITH[c] %@", 2, "re")`) or build it in code (`.key("priority") >= 2 &&
/// .key("done") == false`). The same predicate runs as SQL in the store and in memory over
/// unsaved objects, with the same answer:
/// - comparing with nil: `== nil` and `!= nil` test for null; `<`, `>` and the like are false
///   when either side is nil, and so never match a null, also under NOT;
/// - strings compare by Unicode code point; `[c]` and `[d]` fold case and diacritics the same
///   way in SQL and in memory;
/// - a to-many key path means ANY unless ALL or NONE says otherwise.
public indirect enum ObjectPredicate: Sendable, Hashable {
    /// TRUEPREDICATE / FALSEPREDICATE.
    case constant(Bool)
    case comparison(ComparisonPredicate)
    case and([ObjectPredicate])
    case or([ObjectPredicate])
    case not(ObjectPredicate)

    /// A key path operand, the start of a comparison: `.key("project.name") == "Apollo"`.
    public static func key(_ path: String) -> PredicateKey { PredicateKey(path: path) }

    static func compare(_ lhs: String, _ op: ComparisonOperator, _ rhs: PredicateValue) -> ObjectPredicate {
        .comparison(ComparisonPredicate(.keyPath(lhs), op, .constant(rhs)))
    }
}

/// The left side of a comparison under construction.
public struct PredicateKey: Sendable, Hashable {
    public let path: String

    /// Lets `.key("priority") >= 2` read naturally where a predicate is expected.
    public static func key(_ path: String) -> PredicateKey { PredicateKey(path: path) }

    /// `key BEGINSWITH[options] prefix`, and so on for the other string operators.
    public func beginsWith(_ prefix: String, options: ComparisonOptions = []) -> ObjectPredicate { string(.beginsWith, prefix, options) }
    public func endsWith(_ suffix: String, options: ComparisonOptions = []) -> ObjectPredicate { string(.endsWith, suffix, options) }
    public func contains(_ text: String, options: ComparisonOptions = []) -> ObjectPredicate { string(.contains, text, options) }
    public func like(_ pattern: String, options: ComparisonOptions = []) -> ObjectPredicate { string(.like, pattern, options) }
    public func matches(_ regex: String, options: ComparisonOptions = []) -> ObjectPredicate { string(.matches, regex, options) }

    /// `key IN {values}`.
    public func isIn(_ values: [any AttributeValueConvertible]) -> ObjectPredicate {
        .comparison(ComparisonPredicate(.keyPath(path), .in, .list(values.map { .constant(.attribute($0.attributeValue)) })))
    }

    /// `key BETWEEN {low, high}`.
    public func between(_ low: some AttributeValueConvertible, _ high: some AttributeValueConvertible) -> ObjectPredicate {
        .comparison(ComparisonPredicate(.keyPath(path), .between, .list([.constant(.attribute(low.attributeValue)), .constant(.attribute(high.attributeValue))])))
    }

    private func string(_ op: ComparisonOperator, _ text: String, _ options: ComparisonOptions) -> ObjectPredicate {
        .comparison(ComparisonPredicate(.keyPath(path), op, .constant(.attribute(.string(text))), options: options))
    }
}

public func == (lhs: PredicateKey, rhs: some AttributeValueConvertible) -> ObjectPredicate { .compare(lhs.path, .equal, .attribute(rhs.attributeValue)) }
public func != (lhs: PredicateKey, rhs: some AttributeValueConvertible) -> ObjectPredicate { .compare(lhs.path, .notEqual, .attribute(rhs.attributeValue)) }
public func < (lhs: PredicateKey, rhs: some AttributeValueConvertible) -> ObjectPredicate { .compare(lhs.path, .lessThan, .attribute(rhs.attributeValue)) }
public func <= (lhs: PredicateKey, rhs: some AttributeValueConvertible) -> ObjectPredicate { .compare(lhs.path, .lessThanOrEqual, .attribute(rhs.attributeValue)) }
public func > (lhs: PredicateKey, rhs: some AttributeValueConvertible) -> ObjectPredicate { .compare(lhs.path, .greaterThan, .attribute(rhs.attributeValue)) }
public func >= (lhs: PredicateKey, rhs: some AttributeValueConvertible) -> ObjectPredicate { .compare(lhs.path, .greaterThanOrEqual, .attribute(rhs.attributeValue)) }
/// `key == nil` / `key != nil`.
public func == (lhs: PredicateKey, rhs: _OptionalNilComparisonType) -> ObjectPredicate { .compare(lhs.path, .equal, .null) }
public func != (lhs: PredicateKey, rhs: _OptionalNilComparisonType) -> ObjectPredicate { .compare(lhs.path, .notEqual, .null) }
/// A relationship compared with an object ID.
public func == (lhs: PredicateKey, rhs: ManagedObjectID) -> ObjectPredicate { .compare(lhs.path, .equal, .object(rhs)) }
public func != (lhs: PredicateKey, rhs: ManagedObjectID) -> ObjectPredicate { .compare(lhs.path, .notEqual, .object(rhs)) }
/// Two key paths compared with each other.
public func == (lhs: PredicateKey, rhs: PredicateKey) -> ObjectPredicate { .comparison(ComparisonPredicate(.keyPath(lhs.path), .equal, .keyPath(rhs.path))) }
public func != (lhs: PredicateKey, rhs: PredicateKey) -> ObjectPredicate { .comparison(ComparisonPredicate(.keyPath(lhs.path), .notEqual, .keyPath(rhs.path))) }
public func < (lhs: PredicateKey, rhs: PredicateKey) -> ObjectPredicate { .comparison(ComparisonPredicate(.keyPath(lhs.path), .lessThan, .keyPath(rhs.path))) }
public func > (lhs: PredicateKey, rhs: PredicateKey) -> ObjectPredicate { .comparison(ComparisonPredicate(.keyPath(lhs.path), .greaterThan, .keyPath(rhs.path))) }

public func && (lhs: ObjectPredicate, rhs: ObjectPredicate) -> ObjectPredicate {
    if case .and(let l) = lhs { return .and(l + [rhs]) }
    return .and([lhs, rhs])
}
public func || (lhs: ObjectPredicate, rhs: ObjectPredicate) -> ObjectPredicate {
    if case .or(let l) = lhs { return .or(l + [rhs]) }
    return .or([lhs, rhs])
}
public prefix func ! (predicate: ObjectPredicate) -> ObjectPredicate { .not(predicate) }
