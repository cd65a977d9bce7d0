/// One sort key of a fetch [NSSortDescriptor]: an attribute, or a key path through to-one
/// relationships to one.
///
/// Ascending puts nulls first, descending puts them last; strings order by code point, or
/// folded with `options` (`.caseInsensitive` is `[c]` ordering). Every fetch ends its order with
/// the primary key, ascending, so every order is total.
public struct ObjectSortDescriptor: Sendable, Hashable {
    public var keyPath: String
    public var ascending: Bool
    public var options: ComparisonOptions

    public init(_ keyPath: String, ascending: Bool = true, options: ComparisonOptions = []) {
        self.keyPath = keyPath
        self.ascending = ascending
        self.options = options
    }
}
