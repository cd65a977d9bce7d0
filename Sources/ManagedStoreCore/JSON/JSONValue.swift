// A JSON document as a value, with numbers kept as their source text.
//
// Keeping the digits lets a `decimal` attribute stay exact and lets an integer attribute
// reject a value outside its range instead of silently rounding it through a Double.

/// One JSON value. Numbers keep the exact text they were written with.
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    /// A number as written (validated JSON number syntax), e.g. `-12`, `3.25e2`.
    case number(String)
    case string(String)
    case array([JSONValue])
    /// Members in document order; a later duplicate key wins on lookup.
    case object([(String, JSONValue)])

    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case let (.bool(a), .bool(b)): return a == b
        case let (.number(a), .number(b)): return a == b
        case let (.string(a), .string(b)): return a == b
        case let (.array(a), .array(b)): return a == b
        case let (.object(a), .object(b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: return false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .bool(let b): hasher.combine(b)
        case .number(let n): hasher.combine(n)
        case .string(let s): hasher.combine(s)
        case .array(let a): hasher.combine(a)
        case .object(let members):
            for (key, value) in members { hasher.combine(key); hasher.combine(value) }
        }
    }

    /// The value of `key` when this is an object (the last duplicate wins), else nil.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.last(where: { $0.0 == key })?.1
    }

    public var stringValue: String? { if case .string(let s) = self { return s } else { return nil } }
    public var boolValue: Bool? { if case .bool(let b) = self { return b } else { return nil } }
    public var arrayValue: [JSONValue]? { if case .array(let a) = self { return a } else { return nil } }
    public var objectMembers: [(String, JSONValue)]? { if case .object(let m) = self { return m } else { return nil } }
    public var isNull: Bool { if case .null = self { return true } else { return false } }

    /// The number as an exact Int64, or nil if it is not an integer or out of range.
    public var int64Value: Int64? {
        guard case .number(let text) = self else { return nil }
        if let exact = Int64(text) { return exact }
        // `1e3` and `2.0` are integers written another way: accept them only when exact.
        guard let decimal = Decimal.exactly(text), decimal == decimal.rounded() else { return nil }
        return Int64(decimal.description)
    }

    public var doubleValue: Double? {
        guard case .number(let text) = self else { return nil }
        return Double(text)
    }

    /// A short name of the JSON type, for error messages.
    public var typeName: String {
        switch self {
        case .null: return "null"
        case .bool: return "boolean"
        case .number: return "number"
        case .string: return "string"
        case .array: return "array"
        case .object: return "object"
        }
    }
}

import Foundation

extension Decimal {
    func rounded() -> Decimal {
        var value = self
        var result = Decimal()
        NSDecimalRound(&result, &value, 0, .plain)
        return result
    }
}
