import Foundation

extension AttributeValue {
    /// Orders two non-null values the way the SQLite store does: numbers by value across integer,
    /// float, double and decimal; strings, UUIDs and URIs by Unicode code point (UTF-8 bytes);
    /// dates by time; false before true; binary bytewise. nil when the two cannot be compared.
    public static func compare(_ lhs: AttributeValue, _ rhs: AttributeValue) -> ComparisonResult? {
        func order<T: Comparable>(_ a: T, _ b: T) -> ComparisonResult {
            a < b ? .orderedAscending : (a == b ? .orderedSame : .orderedDescending)
        }
        func bytes(_ a: some Sequence<UInt8>, _ b: some Sequence<UInt8>) -> ComparisonResult {
            var i = a.makeIterator(), j = b.makeIterator()
            while true {
                switch (i.next(), j.next()) {
                case (nil, nil): return .orderedSame
                case (nil, _): return .orderedAscending
                case (_, nil): return .orderedDescending
                case let (x?, y?): if x != y { return x < y ? .orderedAscending : .orderedDescending }
                }
            }
        }
        switch (lhs, rhs) {
        case let (.integer(a), .integer(b)): return order(a, b)
        case let (.string(a), .string(b)): return bytes(a.utf8, b.utf8)
        case let (.date(a), .date(b)): return order(a.timeIntervalSinceReferenceDate, b.timeIntervalSinceReferenceDate)
        case let (.boolean(a), .boolean(b)): return order(a ? 1 : 0, b ? 1 : 0)
        case let (.uuid(a), .uuid(b)): return bytes(a.uuidString.utf8, b.uuidString.utf8)
        case let (.uri(a), .uri(b)): return bytes(a.absoluteString.utf8, b.absoluteString.utf8)
        case let (.binary(a), .binary(b)): return bytes(a, b)
        default: break
        }
        guard let a = lhs.numeric, let b = rhs.numeric else { return nil }
        switch (a, b) {
        case let (.decimal(x), _): return order(x, b.decimal)
        case let (_, .decimal(y)): return order(a.decimal, y)
        case let (.integer(x), .double(y)): return compareIntDouble(x, y)
        case let (.double(x), .integer(y)): return compareIntDouble(y, x).reversed
        case let (.double(x), .double(y)): return order(x, y)
        case let (.integer(x), .integer(y)): return order(x, y)
        }
    }

    private enum Numeric {
        case integer(Int64), double(Double), decimal(Decimal)
        var decimal: Decimal {
            switch self {
            case .integer(let v): return Decimal(v)
            case .double(let v): return Decimal(v)
            case .decimal(let v): return v
            }
        }
    }

    private var numeric: Numeric? {
        switch self {
        case .integer(let v): return .integer(v)
        case .double(let v): return .double(v)
        case .float(let v): return .double(Double(v))
        case .decimal(let v): return .decimal(v)
        default: return nil
        }
    }

    /// Compares exactly, as SQLite does, without rounding the integer to a double.
    private static func compareIntDouble(_ i: Int64, _ d: Double) -> ComparisonResult {
        if d.isNaN { return .orderedDescending }
        if d >= 9.223372036854775807e18 { return .orderedAscending }
        if d < -9.223372036854775808e18 { return .orderedDescending }
        let truncated = Int64(d.rounded(.down))
        if i != truncated { return i < truncated ? .orderedAscending : .orderedDescending }
        let fraction = d - d.rounded(.down)
        return fraction > 0 ? .orderedAscending : .orderedSame
    }
}

extension ComparisonResult {
    var reversed: ComparisonResult {
        switch self {
        case .orderedAscending: return .orderedDescending
        case .orderedDescending: return .orderedAscending
        case .orderedSame: return .orderedSame
        }
    }
}
