/// The value of one property: an attribute's value or a relationship's destination(s). What
/// snapshots, fetched dictionaries, batch requests and a store's read of key paths hold.
public enum PropertyValue: Sendable, Hashable, CustomStringConvertible {
    case attribute(AttributeValue)
    case object(ManagedObjectID?)
    /// A to-many relationship's destinations, in primary-key order.
    case objects([ManagedObjectID])

    public var description: String {
        switch self {
        case .attribute(let v): return "\(v.anyValue.map { "\($0)" } ?? "nil")"
        case .object(let id): return id?.description ?? "nil"
        case .objects(let ids): return "[" + ids.map(\.description).joined(separator: ", ") + "]"
        }
    }
}

/// Property values by name: an object's state at one moment.
public typealias ObjectSnapshot = [String: PropertyValue]
