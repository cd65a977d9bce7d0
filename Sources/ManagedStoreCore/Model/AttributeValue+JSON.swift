import Foundation

/// Why a JSON value cannot become an attribute value.
public enum AttributeJSONError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The JSON type or text does not fit the attribute type (code `invalid-type`).
    case typeMismatch(expected: AttributeType, got: String)

    public var description: String {
        switch self {
        case let .typeMismatch(expected, got): return "expected a \(expected.rawValue), got \(got)"
        }
    }
}

extension AttributeValue {
    /// Converts the JSON form of a value (see the API contract) for an attribute of `type`.
    ///
    /// Integers keep every digit: a value that does not fit an Int64 is a type mismatch, one
    /// that fits Int64 but not the attribute's type is kept so validation reports its range.
    public init(json: JSONValue, type: AttributeType) throws(AttributeJSONError) {
        func mismatch() -> AttributeJSONError { .typeMismatch(expected: type, got: json.typeName) }
        if json.isNull { self = .null; return }
        switch type {
        case .integer16, .integer32, .integer64:
            guard let v = json.int64Value else { throw mismatch() }
            self = .integer(v)
        case .decimal:
            let text: String
            switch json {
            case .string(let s): text = s
            case .number(let n): text = n
            default: throw mismatch()
            }
            // More digits than Decimal holds is refused, never rounded.
            guard let d = Decimal.exactly(text) else {
                throw .typeMismatch(expected: type, got: "\"\(text.prefix(40))\" (not an exact decimal of at most 38 digits)")
            }
            self = .decimal(d)
        case .double:
            guard let v = json.doubleValue, v.isFinite else { throw mismatch() }
            self = .double(v)
        case .float:
            guard let v = json.doubleValue, let f = Float(exactly: v) ?? Float?(Float(v)), f.isFinite else { throw mismatch() }
            self = .float(f)
        case .string:
            guard let s = json.stringValue else { throw mismatch() }
            self = .string(s)
        case .boolean:
            guard let b = json.boolValue else { throw mismatch() }
            self = .boolean(b)
        case .date:
            guard let s = json.stringValue, let d = RFC3339.date(from: s) else { throw mismatch() }
            self = .date(d)
        case .binary:
            guard let s = json.stringValue, let d = Data(base64Encoded: s) else { throw mismatch() }
            self = .binary(d)
        case .uuid:
            guard let s = json.stringValue, let u = UUID(uuidString: s) else { throw mismatch() }
            self = .uuid(u)
        case .uri:
            guard let s = json.stringValue, !s.isEmpty, let u = URL(string: s) else { throw mismatch() }
            self = .uri(u)
        }
    }

    /// The JSON form of the value (`JSONWriter.write(_:)`, which defines it), as a JSON value.
    public var jsonValue: JSONValue {
        var writer = JSONWriter(reservingCapacity: 32)
        writer.write(self)
        // What the writer wrote is JSON by construction; a number keeps its digits.
        return (try? JSONParser().parse(writer.bytes)) ?? .null
    }

    static func shortest(_ v: Double, float: Float? = nil) -> String {
        let text = float.map { "\($0)" } ?? "\(v)"
        // Swift prints the shortest round-tripping digits; JSON has no "1e+20" vs "1e20" issue.
        return text.hasSuffix(".0") ? String(text.dropLast(2)) : text
    }

    /// `-12.5`, `3`, `1e-7`: JSON number syntax, which `Decimal(string:)` would otherwise
    /// accept a prefix of ("12abc" is 12).
    static func isDecimalText(_ text: String) -> Bool {
        var bytes = Substring(text).utf8[...]
        func digits() -> Int {
            var n = 0
            while let c = bytes.first, c >= 48, c <= 57 { bytes = bytes.dropFirst(); n += 1 }
            return n
        }
        if bytes.first == UInt8(ascii: "-") || bytes.first == UInt8(ascii: "+") { bytes = bytes.dropFirst() }
        guard digits() > 0 else { return false }
        if bytes.first == UInt8(ascii: ".") { bytes = bytes.dropFirst(); guard digits() > 0 else { return false } }
        if bytes.first == UInt8(ascii: "e") || bytes.first == UInt8(ascii: "E") {
            bytes = bytes.dropFirst()
            if bytes.first == UInt8(ascii: "-") || bytes.first == UInt8(ascii: "+") { bytes = bytes.dropFirst() }
            guard digits() > 0 else { return false }
        }
        return bytes.isEmpty
    }
}
