import Foundation

// The JSON form of attribute values, in one place: `write(_: AttributeValue)` defines it
// (numbers as numbers, decimals as exact strings, dates as RFC 3339, binary as base64);
// `AttributeValue.jsonValue` is its output parsed, and `write(_:type:)` takes the same
// text and integers straight from a stored row. Object IDs too: `"Entity/pk"`.

/// A stored attribute value read in place (a column of a store's row), for writing it without
/// making an `AttributeValue` first.
@usableFromInline package protocol AttributeColumn {
    var isNull: Bool { get }
    /// The integer stored (integers and booleans).
    var integer: Int64 { get }
    /// Lends the stored text's UTF-8 bytes (strings).
    func withText(_ body: (UnsafeBufferPointer<UInt8>) -> Void)
    /// The value, for every other type.
    func value(as type: AttributeType) -> AttributeValue
}

extension JSONWriter {
    /// An attribute value in its JSON form: the one definition of it.
    public mutating func write(_ value: AttributeValue) {
        switch value {
        case .null: writeRaw("null")
        case .integer(let v): writeInteger(v)
        case .boolean(let b): writeRaw(b ? "true" : "false")
        case .string(let s): writeString(s)
        case .double(let v):
            guard v.isFinite else { return writeRaw("null") }
            // A whole number below 2^53 prints as its digits ("3", as `shortest` gives for 3.0),
            // without formatting a String first. -0 keeps its sign through `shortest`.
            if v == v.rounded(.towardZero), abs(v) < 9_007_199_254_740_992, !(v == 0 && v.sign == .minus) {
                writeInteger(Int64(v))
            } else {
                bytes.append(contentsOf: AttributeValue.shortest(v).utf8)
            }
        case .float(let v):
            guard v.isFinite else { return writeRaw("null") }
            bytes.append(contentsOf: AttributeValue.shortest(Double(v), float: v).utf8)
        case .decimal(let d): writeString(d.description)
        case .date(let d):
            bytes.append(UInt8(ascii: "\""))
            RFC3339.append(d, to: &bytes)
            bytes.append(UInt8(ascii: "\""))
        case .binary(let d): writeString(d.base64EncodedString())
        case .uuid(let u): writeString(u.uuidString)
        case .uri(let u): writeString(u.absoluteString)
        }
    }

    /// A stored value of an attribute of `type` in its JSON form, as `write(column.value(as:))`
    /// writes it: text and integers go from the row into the buffer without a String between.
    /// (Inlinable, so that the store's module specializes it for its column type.)
    @inlinable
    package mutating func write(_ column: some AttributeColumn, type: AttributeType) {
        if column.isNull { return writeRaw("null") }
        switch type {
        case .string: column.withText { writeString(utf8: $0) }
        case .integer16, .integer32, .integer64: writeInteger(column.integer)
        case .boolean: writeRaw(column.integer != 0 ? "true" : "false")
        default: write(column.value(as: type))
        }
    }

    /// A property value in its JSON form: an attribute's, an object ID or null, an array of IDs.
    public mutating func write(_ value: PropertyValue) {
        switch value {
        case .attribute(let attribute): write(attribute)
        case .object(let id?): write(id)
        case .object(nil): writeRaw("null")
        case .objects(let ids):
            writeRaw("[")
            for (i, id) in ids.enumerated() {
                if i > 0 { writeRaw(",") }
                write(id)
            }
            writeRaw("]")
        }
    }

    /// An object ID as its JSON string, `"Entity/pk"`.
    public mutating func write(_ id: ManagedObjectID) {
        guard let pk = id.primaryKey else { return writeString(id.description) }
        writeString(id.entityName)
        bytes.removeLast()  // reopen the string: the key follows the name
        bytes.append(UInt8(ascii: "/"))
        writeInteger(pk)
        bytes.append(UInt8(ascii: "\""))
    }
}
