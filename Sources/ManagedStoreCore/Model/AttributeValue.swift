import Foundation

/// The value of one attribute, in the exact Swift representation of its type.
///
/// `decimal` stays a `Decimal` (stored as its exact text), `date` keeps the full `Double`
/// precision of `Date` (sub-millisecond), and every integer type is an `Int64` whose range is
/// checked against the attribute's type when the object is validated.
public enum AttributeValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case decimal(Decimal)
    case double(Double)
    case float(Float)
    case string(String)
    case boolean(Bool)
    case date(Date)
    case binary(Data)
    case uuid(UUID)
    case uri(URL)

    public var isNull: Bool { if case .null = self { return true } else { return false } }

    /// Whether this value may be stored in an attribute of `type` (null fits every type).
    public func fits(_ type: AttributeType) -> Bool {
        switch (self, type) {
        case (.null, _): return true
        case (.integer(let v), _): return type.integerRange?.contains(v) ?? false
        case (.decimal, .decimal), (.double, .double), (.float, .float), (.string, .string),
             (.boolean, .boolean), (.date, .date), (.binary, .binary), (.uuid, .uuid), (.uri, .uri):
            return true
        default: return false
        }
    }

    /// A name of the value's kind for error messages.
    public var kindName: String {
        switch self {
        case .null: return "null"
        case .integer: return "integer"
        case .decimal: return "decimal"
        case .double: return "double"
        case .float: return "float"
        case .string: return "string"
        case .boolean: return "boolean"
        case .date: return "date"
        case .binary: return "binary"
        case .uuid: return "uuid"
        case .uri: return "uri"
        }
    }

    /// The value as a plain Swift value (`Int64`, `String`, `Date`, ...), nil for null.
    public var anyValue: Any? {
        switch self {
        case .null: return nil
        case .integer(let v): return v
        case .decimal(let v): return v
        case .double(let v): return v
        case .float(let v): return v
        case .string(let v): return v
        case .boolean(let v): return v
        case .date(let v): return v
        case .binary(let v): return v
        case .uuid(let v): return v
        case .uri(let v): return v
        }
    }
}

/// A Swift type that converts to and from an `AttributeValue`, for typed property access.
public protocol AttributeValueConvertible {
    var attributeValue: AttributeValue { get }
    init?(attributeValue: AttributeValue)
}

extension Int64: AttributeValueConvertible {
    public var attributeValue: AttributeValue { .integer(self) }
    public init?(attributeValue: AttributeValue) {
        guard case .integer(let v) = attributeValue else { return nil }
        self = v
    }
}

extension Int: AttributeValueConvertible {
    public var attributeValue: AttributeValue { .integer(Int64(self)) }
    public init?(attributeValue: AttributeValue) {
        guard case .integer(let v) = attributeValue, let exact = Int(exactly: v) else { return nil }
        self = exact
    }
}

extension Int32: AttributeValueConvertible {
    public var attributeValue: AttributeValue { .integer(Int64(self)) }
    public init?(attributeValue: AttributeValue) {
        guard case .integer(let v) = attributeValue, let exact = Int32(exactly: v) else { return nil }
        self = exact
    }
}

extension Int16: AttributeValueConvertible {
    public var attributeValue: AttributeValue { .integer(Int64(self)) }
    public init?(attributeValue: AttributeValue) {
        guard case .integer(let v) = attributeValue, let exact = Int16(exactly: v) else { return nil }
        self = exact
    }
}

extension Double: AttributeValueConvertible {
    public var attributeValue: AttributeValue { .double(self) }
    public init?(attributeValue: AttributeValue) {
        switch attributeValue {
        case .double(let v): self = v
        case .float(let v): self = Double(v)
        default: return nil
        }
    }
}

extension Float: AttributeValueConvertible {
    public var attributeValue: AttributeValue { .float(self) }
    public init?(attributeValue: AttributeValue) {
        guard case .float(let v) = attributeValue else { return nil }
        self = v
    }
}

extension Decimal: AttributeValueConvertible {
    public var attributeValue: AttributeValue { .decimal(self) }
    public init?(attributeValue: AttributeValue) {
        guard case .decimal(let v) = attributeValue else { return nil }
        self = v
    }
}

extension String: AttributeValueConvertible {
    public var attributeValue: AttributeValue { .string(self) }
    public init?(attributeValue: AttributeValue) {
        guard case .string(let v) = attributeValue else { return nil }
        self = v
    }
}

extension Bool: AttributeValueConvertible {
    public var attributeValue: AttributeValue { .boolean(self) }
    public init?(attributeValue: AttributeValue) {
        guard case .boolean(let v) = attributeValue else { return nil }
        self = v
    }
}

extension Date: AttributeValueConvertible {
    public var attributeValue: AttributeValue { .date(self) }
    public init?(attributeValue: AttributeValue) {
        guard case .date(let v) = attributeValue else { return nil }
        self = v
    }
}

extension Data: AttributeValueConvertible {
    public var attributeValue: AttributeValue { .binary(self) }
    public init?(attributeValue: AttributeValue) {
        guard case .binary(let v) = attributeValue else { return nil }
        self = v
    }
}

extension UUID: AttributeValueConvertible {
    public var attributeValue: AttributeValue { .uuid(self) }
    public init?(attributeValue: AttributeValue) {
        guard case .uuid(let v) = attributeValue else { return nil }
        self = v
    }
}

extension URL: AttributeValueConvertible {
    public var attributeValue: AttributeValue { .uri(self) }
    public init?(attributeValue: AttributeValue) {
        guard case .uri(let v) = attributeValue else { return nil }
        self = v
    }
}

extension AttributeValue {
    /// Converts a plain Swift value (or nil) into an attribute value; nil if its type is not supported.
    public init?(any value: Any?) {
        guard let value else { self = .null; return }
        if let convertible = value as? AttributeValueConvertible { self = convertible.attributeValue; return }
        if let v = value as? AttributeValue { self = v; return }
        if let v = value as? Int8 { self = .integer(Int64(v)); return }
        if let v = value as? UInt8 { self = .integer(Int64(v)); return }
        if let v = value as? UInt16 { self = .integer(Int64(v)); return }
        if let v = value as? UInt32 { self = .integer(Int64(v)); return }
        return nil
    }
}
