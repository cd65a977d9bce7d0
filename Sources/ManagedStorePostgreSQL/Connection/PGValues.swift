import Foundation
import ManagedStoreCore

/// Attribute values as PostgreSQL's text forms, both ways. Each type's column keeps the value
/// exactly: integers as `bigint`, decimals as `numeric`, doubles and dates as `double
/// precision` (a date as seconds since the reference date, Foundation's own representation, so
/// no bit of it is rounded), floats as `real`, strings as `text` compared by code point
/// (`COLLATE "C"`), data as `bytea`.
enum PGValues {
    /// The column type of an attribute type.
    static func columnType(_ type: AttributeType) -> String {
        switch type {
        case .integer16, .integer32, .integer64: return "bigint"
        case .decimal: return "numeric"
        case .double, .date: return "double precision"
        case .float: return "real"
        case .string, .uri: return "text COLLATE \"C\""
        case .boolean: return "boolean"
        case .binary: return "bytea"
        case .uuid: return "uuid"
        }
    }

    /// Whether PostgreSQL orders and compares a column of `type` as the evaluator does: numbers
    /// exactly, strings by code point (COLLATE "C" on UTF-8), booleans, dates as seconds.
    static func ordersAsEvaluator(_ type: AttributeType) -> Bool {
        switch type {
        case .integer16, .integer32, .integer64, .decimal, .double, .float, .string, .boolean, .date: return true
        case .binary, .uuid, .uri: return false
        }
    }

    /// The type of an array of `type`'s values: what a column of `columnType(type)` is filled
    /// from by `unnest` (a string's collation is its column's, not its array's).
    static func elementArrayType(_ type: AttributeType) -> String {
        switch type {
        case .string, .uri: return "text[]"
        default: return columnType(type) + "[]"
        }
    }

    /// Values' texts (nil for null) as one array in PostgreSQL's text form, each element quoted
    /// (`{"a","b \"c\"",NULL}`): a parameter that `unnest` turns back into the values.
    static func quotedArray(_ values: [String?]) -> String {
        var bytes: [UInt8] = [UInt8(ascii: "{")]
        bytes.reserveCapacity(values.count * 16)
        for (i, value) in values.enumerated() {
            if i > 0 { bytes.append(UInt8(ascii: ",")) }
            guard let value else { bytes.append(contentsOf: "NULL".utf8); continue }
            bytes.append(UInt8(ascii: "\""))
            for byte in value.utf8 {
                if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { bytes.append(UInt8(ascii: "\\")) }
                bytes.append(byte)
            }
            bytes.append(UInt8(ascii: "\""))
        }
        bytes.append(UInt8(ascii: "}"))
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `value` as a parameter's text; nil for null. A string holding U+0000 cannot be stored
    /// (PostgreSQL's text has no such character): refused, not cut short.
    static func text(_ value: AttributeValue) throws(StoreError) -> String? {
        switch value {
        case .null: return nil
        case .integer(let v): return String(v)
        case .decimal(let v): return v.isNaN ? "NaN" : "\(v)"
        case .double(let v): return doubleText(v)
        case .float(let v): return v.isFinite ? "\(v)" : doubleText(Double(v))
        case .string(let v):
            guard !v.utf8.contains(0) else {
                throw .engine(code: PGSQLState.code("22021"), message: "a string with U+0000 cannot be stored in PostgreSQL", sql: nil)
            }
            return v
        case .boolean(let v): return v ? "t" : "f"
        case .date(let v): return doubleText(v.timeIntervalSinceReferenceDate)
        case .binary(let v): return byteaText(v)
        case .uuid(let v): return v.uuidString
        case .uri(let v): return v.absoluteString
        }
    }

    static func doubleText(_ v: Double) -> String {
        if v.isNaN { return "NaN" }
        if v.isInfinite { return v < 0 ? "-Infinity" : "Infinity" }
        return "\(v)"
    }

    static func byteaText(_ data: Data) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var bytes: [UInt8] = [UInt8(ascii: "\\"), UInt8(ascii: "x")]
        bytes.reserveCapacity(2 + data.count * 2)
        for byte in data {
            bytes.append(digits[Int(byte >> 4)])
            bytes.append(digits[Int(byte & 15)])
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The value of a column of `type` read as `text` (nil: null).
    static func value(_ text: String?, type: AttributeType) -> AttributeValue {
        guard let text else { return .null }
        switch type {
        case .integer16, .integer32, .integer64: return Int64(text).map(AttributeValue.integer) ?? .null
        case .decimal: return Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")).map(AttributeValue.decimal) ?? .null
        case .double: return Double(text).map(AttributeValue.double) ?? .null
        case .float: return Float(text).map(AttributeValue.float) ?? .null
        case .string: return .string(text)
        case .boolean: return .boolean(text == "t")
        case .date: return Double(text).map { .date(Date(timeIntervalSinceReferenceDate: $0)) } ?? .null
        case .binary: return .binary(bytea(text))
        case .uuid: return UUID(uuidString: text).map(AttributeValue.uuid) ?? .null
        case .uri: return URL(string: text).map(AttributeValue.uri) ?? .null
        }
    }

    /// `bytea`'s hex output form (`\x0a1b...`) as bytes.
    static func bytea(_ text: String) -> Data {
        let utf8 = Array(text.utf8)
        guard utf8.count >= 2, utf8[0] == UInt8(ascii: "\\"), utf8[1] == UInt8(ascii: "x") else { return Data(utf8) }
        func nibble(_ c: UInt8) -> UInt8 {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
            default: return c &- UInt8(ascii: "A") &+ 10
            }
        }
        var data = Data(capacity: (utf8.count - 2) / 2)
        var i = 2
        while i + 1 < utf8.count {
            data.append(nibble(utf8[i]) << 4 | nibble(utf8[i + 1]))
            i += 2
        }
        return data
    }

    /// An array of keys as one parameter (`ANY($1::bigint[])`).
    static func keyArray<S: Sequence>(_ keys: S) -> String where S.Element == Int64 {
        "{" + keys.map(String.init).joined(separator: ",") + "}"
    }

    /// A `bigint[]` in PostgreSQL's text form (`{1,2,3}`, `{}`) as keys; nulls are skipped.
    static func keys(fromArray text: String) -> [Int64] {
        text.utf8.split(whereSeparator: { $0 == UInt8(ascii: ",") || $0 == UInt8(ascii: "{") || $0 == UInt8(ascii: "}") })
            .compactMap { Int64(String(decoding: $0, as: UTF8.self)) }
    }

    /// Model names (letters, digits and '_', `ManagedObjectModel.nameProblem`) as a `text[]` literal.
    static func textArray(_ names: [String]) -> String { "{" + names.joined(separator: ",") + "}" }

    /// `name` as a quoted identifier.
    static func quote(_ name: String) -> String { "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }

    /// `text` as a string literal (the connection keeps `standard_conforming_strings` on, its
    /// default: a backslash is itself).
    static func literal(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "''") + "'" }
}
