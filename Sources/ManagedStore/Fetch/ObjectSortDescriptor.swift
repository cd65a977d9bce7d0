/// One sort key of a fetch [NSSortDescriptor]: an attribute or a to-one key path.
///
/// Ascending puts nulls first, descending puts them last; strings order by code point.
/// Every fetch ends its order with the primary key, ascending, so every order is total.
public struct ObjectSortDescriptor: Sendable, Hashable {
    public var keyPath: String
    public var ascending: Bool

    public init(_ keyPath: String, ascending: Bool = true) {
        self.keyPath = keyPath
        self.ascending = ascending
    }
}
