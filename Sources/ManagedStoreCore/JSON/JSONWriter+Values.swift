import Foundation

// Attribute values and object IDs written straight into a JSON buffer: the same text as
// `AttributeValue.jsonValue` and `ManagedObjectID.description`, without the intermediate
// Strings and JSONValues (one object, or a page of a fetch).

extension JSONWriter {
    /// An attribute value in its JSON form (`AttributeValue.jsonValue`).
    public mutating func write(_ value: AttributeValue) {
        switch value {
        case .null: writeRaw("null")
        case .integer(let v): writeInteger(v)
        case .boolean(let b): writeRaw(b ? "true" : "false")
        case .string(let s): writeString(s)
        case .double(let v) where v.isFinite:
            // A whole number below 2^53 prints as its digits ("3", as `shortest` gives for 3.0),
            // without formatting a String first. -0 keeps its sign through `shortest`.
            if v == v.rounded(.towardZero), abs(v) < 9_007_199_254_740_992, !(v == 0 && v.sign == .minus) {
                writeInteger(Int64(v))
            } else {
                bytes.append(contentsOf: AttributeValue.shortest(v).utf8)
            }
        case .date(let d):
            bytes.append(UInt8(ascii: "\""))
            RFC3339.append(d, to: &bytes)
            bytes.append(UInt8(ascii: "\""))
        default: write(value.jsonValue)
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
