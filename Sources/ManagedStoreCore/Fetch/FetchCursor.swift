import Foundation

/// "The objects after this one in this order": an opaque keyset-pagination cursor.
///
/// It holds the sort values and primary key of the last object of a page, so the next page
/// starts right after it even when objects were inserted or deleted in between (an offset
/// would skip or repeat them). It also holds a fingerprint of the order, and a fetch request with
/// another order refuses it.
public struct FetchCursor: Sendable, Hashable, CustomStringConvertible {
    let fingerprint: String
    package let values: [AttributeValue]
    package let primaryKey: Int64
    /// The entity of the object it follows, in a fetch of an entity with sub-entities: there
    /// the order goes on by entity (`Entity.kinds`) before the key, as two kinds share keys.
    package let entityName: String?

    /// The opaque text form, safe in a URL (base64url).
    public var token: String {
        var members: [(String, JSONValue)] = [("o", .string(fingerprint)), ("p", .number(String(primaryKey)))]
        members.append(("k", .array(values.map(Self.encode))))
        if let entityName { members.append(("e", .string(entityName))) }
        let data = Data(JSONValue.object(members).serialized().utf8)
        return data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    public var description: String { token }

    /// Reads a token made by `token`; nil when it is not one.
    public init?(token: String) {
        var base64 = token.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        guard token.count < 16_384, let data = Data(base64Encoded: base64), let json = try? JSONParser(maxDepth: 4).parse(data),
              let fingerprint = json["o"]?.stringValue, let pk = json["p"]?.int64Value,
              let encoded = json["k"]?.arrayValue else { return nil }
        var values: [AttributeValue] = []
        for item in encoded {
            guard let value = Self.decode(item) else { return nil }
            values.append(value)
        }
        var entityName: String?
        if let name = json["e"] {
            guard let text = name.stringValue else { return nil }
            entityName = text
        }
        self.init(fingerprint: fingerprint, values: values, primaryKey: pk, entityName: entityName)
    }

    package init(fingerprint: String, values: [AttributeValue], primaryKey: Int64, entityName: String? = nil) {
        self.fingerprint = fingerprint
        self.values = values
        self.primaryKey = primaryKey
        self.entityName = entityName
    }

    /// Identifies an order: entity, keys, directions and options.
    static func fingerprint(entity: String, sorts: [ObjectSortDescriptor]) -> String {
        let text = ([entity] + sorts.map { "\($0.keyPath):\($0.ascending ? "a" : "d"):\($0.options.rawValue)" }).joined(separator: "|")
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        return String(hash, radix: 36)
    }

    /// Values travel exactly: doubles and dates by their shortest round-tripping digits.
    private static func encode(_ value: AttributeValue) -> JSONValue {
        switch value {
        case .null: return .null
        case .integer(let i): return .array([.string("i"), .string(String(i))])
        case .double(let d): return .array([.string("r"), .string("\(d)")])
        case .float(let f): return .array([.string("f"), .string("\(f)")])
        case .date(let d): return .array([.string("t"), .string("\(d.timeIntervalSinceReferenceDate)")])
        case .boolean(let b): return .array([.string("b"), .bool(b)])
        default:
            let type: AttributeType
            switch value {
            case .decimal: type = .decimal
            case .binary: type = .binary
            case .uuid: type = .uuid
            case .uri: type = .uri
            default: type = .string
            }
            return .array([.string(type.rawValue), value.jsonValue])
        }
    }

    private static func decode(_ json: JSONValue) -> AttributeValue? {
        if json.isNull { return .null }
        guard let pair = json.arrayValue, pair.count == 2, let tag = pair[0].stringValue else { return nil }
        switch tag {
        case "i": return pair[1].stringValue.flatMap(Int64.init).map(AttributeValue.integer)
        case "r": return pair[1].stringValue.flatMap(Double.init).map(AttributeValue.double)
        case "f": return pair[1].stringValue.flatMap(Float.init).map(AttributeValue.float)
        case "t": return pair[1].stringValue.flatMap(Double.init).map { .date(Date(timeIntervalSinceReferenceDate: $0)) }
        case "b": return pair[1].boolValue.map(AttributeValue.boolean)
        default:
            guard let type = AttributeType(rawValue: tag) else { return nil }
            return try? AttributeValue(json: pair[1], type: type)
        }
    }
}
