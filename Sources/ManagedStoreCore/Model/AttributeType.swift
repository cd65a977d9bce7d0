/// The type of an attribute, as named in the JSON model format [NSAttributeType].
public enum AttributeType: String, Sendable, CaseIterable, Codable {
    case integer16, integer32, integer64, decimal, double, float, string, boolean, date, binary, uuid, uri

    /// The range an integer attribute accepts; nil for other types.
    public var integerRange: ClosedRange<Int64>? {
        switch self {
        case .integer16: return Int64(Int16.min)...Int64(Int16.max)
        case .integer32: return Int64(Int32.min)...Int64(Int32.max)
        case .integer64: return Int64.min...Int64.max
        default: return nil
        }
    }

    public var isInteger: Bool { integerRange != nil }

    /// Types whose values are ordered, so `min` and `max` apply.
    public var isOrdered: Bool {
        switch self {
        case .integer16, .integer32, .integer64, .decimal, .double, .float, .date: return true
        default: return false
        }
    }
}
