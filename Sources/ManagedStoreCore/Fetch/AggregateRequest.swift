/// One named result of an aggregate request: a key to group by [propertiesToGroupBy], or a
/// function of the group's rows [NSExpressionDescription].
///
/// Unless named otherwise, a group key is named by its key path as written and a function by
/// the function's name: `.sum("pages")` is "sum", `.sum("pages", as: "pages")` is "pages".
public struct AggregateProperty: Sendable, Hashable {
    public enum Expression: Sendable, Hashable {
        /// Objects with equal values here fall into one group: an attribute, or a key path
        /// through to-one relationships (`author`, `author.name`); a to-one groups by object ID.
        case groupKey(String)
        /// `function` over the group's non-null values of `keyPath`; `.count` with no key path
        /// counts the group's objects.
        case function(AggregateFunction, keyPath: String?)
    }

    /// The key of the result in each group (and in having predicates and sort descriptors).
    public var name: String
    /// What the result is: a group key or a function.
    public var expression: Expression

    /// A result called `name`; the static functions below name it by default.
    public init(name: String, expression: Expression) {
        self.name = name
        self.expression = expression
    }

    /// Group by `keyPath`, named `name` or, by default, the key path itself.
    public static func groupKey(_ keyPath: String, as name: String? = nil) -> AggregateProperty {
        AggregateProperty(name: name ?? keyPath, expression: .groupKey(keyPath))
    }

    /// The number of objects in the group [count:].
    public static func count(as name: String = "count") -> AggregateProperty {
        AggregateProperty(name: name, expression: .function(.count, keyPath: nil))
    }

    /// The number of objects whose `keyPath` is not null.
    public static func count(_ keyPath: String, as name: String = "count") -> AggregateProperty {
        AggregateProperty(name: name, expression: .function(.count, keyPath: keyPath))
    }

    /// The sum of a number: exact for integers (an error beyond Int64, never a wrap) and
    /// decimals (an error beyond 38 digits), a double for doubles and floats; 0 for no values.
    public static func sum(_ keyPath: String, as name: String = "sum") -> AggregateProperty {
        AggregateProperty(name: name, expression: .function(.sum, keyPath: keyPath))
    }

    /// The average of a number: a double for integers, doubles and floats; a decimal of 38
    /// significant digits (rounded half up) for decimals; null for no values.
    public static func avg(_ keyPath: String, as name: String = "avg") -> AggregateProperty {
        AggregateProperty(name: name, expression: .function(.avg, keyPath: keyPath))
    }

    /// The smallest value of an attribute (strings in code-point order); null for no values.
    public static func min(_ keyPath: String, as name: String = "min") -> AggregateProperty {
        AggregateProperty(name: name, expression: .function(.min, keyPath: keyPath))
    }

    /// The largest value of an attribute (strings in code-point order); null for no values.
    public static func max(_ keyPath: String, as name: String = "max") -> AggregateProperty {
        AggregateProperty(name: name, expression: .function(.max, keyPath: keyPath))
    }
}

/// A request for aggregates of the objects of one entity, grouped [NSFetchRequest with
/// NSDictionaryResultType, propertiesToGroupBy and havingPredicate].
///
/// ```swift
/// var request = AggregateRequest(entityName: "Book", properties: [
///     .groupKey("author"), .count(as: "books"), .sum("pages", as: "pages")])
/// request.havingPredicate = try ObjectPredicate(format: "books > 2")
/// request.sortDescriptors = [ObjectSortDescriptor("pages", ascending: false)]
/// let groups = try context.aggregate(request)   // groups[0]["pages"]
/// ```
///
/// The objects matching `predicate` are grouped by the group keys among `properties` (with
/// none, all of them are one group, also when there are none); `havingPredicate` keeps the
/// groups whose results match, and `sortDescriptors` order the groups by their results' names,
/// ties broken by the group keys ascending. It is a read of the store, like dictionary
/// results: this context's unsaved changes are not seen.
public struct AggregateRequest: Sendable, Hashable {
    /// The entity whose objects are grouped.
    public var entityName: String
    /// Which objects are aggregated; all when nil.
    public var predicate: ObjectPredicate?
    /// The results of each group, in order.
    public var properties: [AggregateProperty]
    /// A predicate over each group's results, by name (`books > 2 AND pages > 500`).
    public var havingPredicate: ObjectPredicate?
    /// Keys are the names of `properties`; nulls first ascending, last descending.
    public var sortDescriptors: [ObjectSortDescriptor]
    /// At most this many groups; 0 means no limit.
    public var fetchLimit: Int
    /// Groups to skip, after `havingPredicate` and in the order of `sortDescriptors`.
    public var fetchOffset: Int
    /// How long the query may run in SQLite before it stops with `.fetch(.timedOut)`; nil for no limit.
    public var timeout: Duration?

    /// A request for `properties` of the objects of `entityName` matching `predicate`.
    public init(entityName: String, properties: [AggregateProperty], predicate: ObjectPredicate? = nil,
                havingPredicate: ObjectPredicate? = nil, sortDescriptors: [ObjectSortDescriptor] = [],
                fetchLimit: Int = 0, fetchOffset: Int = 0) {
        self.entityName = entityName
        self.properties = properties
        self.predicate = predicate
        self.havingPredicate = havingPredicate
        self.sortDescriptors = sortDescriptors
        self.fetchLimit = fetchLimit
        self.fetchOffset = fetchOffset
    }

    /// The names of the group keys, in order [propertiesToGroupBy].
    public var propertiesToGroupBy: [String] {
        properties.compactMap { if case .groupKey = $0.expression { return $0.name } else { return nil } }
    }
}
