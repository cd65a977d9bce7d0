/// One group of an aggregate request's answer: its results, in the order of the request's
/// properties [one dictionary of NSDictionaryResultType].
///
/// Group keys on an attribute hold the attribute's value, on a to-one relationship the
/// destination's ID (nil when it has none); functions hold attribute values (`count`, sums
/// of integers: `.integer`; averages of integers, doubles and floats: `.double`; sums,
/// averages, minimums and maximums of decimals: `.decimal`).
public struct AggregateGroup: Sendable, Hashable {
    /// The names of the results, in the request's order.
    public let names: [String]
    /// The results, in the same order.
    public let values: [PropertyValue]

    /// A group with these results (`names` and `values` of the same length).
    public init(names: [String], values: [PropertyValue]) {
        self.names = names
        self.values = values
    }

    /// The result called `name`; nil when the request has none of that name.
    public subscript(name: String) -> PropertyValue? {
        names.firstIndex(of: name).map { values[$0] }
    }
}
