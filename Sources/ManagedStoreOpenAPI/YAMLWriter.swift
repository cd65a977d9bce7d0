import ManagedStoreCore

/// Writes a JSON value as block-style YAML: what `/v1/openapi.yaml` serves, the same document as
/// `/v1/openapi.json`. Strings are always double-quoted with JSON's escapes (a YAML double-quoted
/// scalar reads them alike), so no string can turn into a number, a boolean or a comment; keys
/// are bare when they are plain words.
package enum YAMLWriter {
    package static func yaml(_ value: JSONValue) -> String {
        var out = ""
        write(value, indent: 0, into: &out)
        return out
    }

    private static func write(_ value: JSONValue, indent: Int, into out: inout String) {
        let pad = String(repeating: " ", count: indent)
        switch value {
        case .object(let members) where !members.isEmpty:
            for (key, member) in members {
                out += pad + self.key(key) + ":"
                writeMember(member, indent: indent, into: &out)
            }
        case .array(let elements) where !elements.isEmpty:
            for element in elements {
                out += pad + "-"
                writeMember(element, indent: indent, into: &out)
            }
        default:
            out += pad + scalar(value) + "\n"
        }
    }

    /// After `key:` or `-`: a scalar (or an empty collection) on the same line, else the
    /// collection on the lines below, indented.
    private static func writeMember(_ value: JSONValue, indent: Int, into out: inout String) {
        switch value {
        case .object(let members) where !members.isEmpty:
            out += "\n"
            write(value, indent: indent + 2, into: &out)
        case .array(let elements) where !elements.isEmpty:
            out += "\n"
            write(value, indent: indent + 2, into: &out)
        default:
            out += " " + scalar(value) + "\n"
        }
    }

    private static func scalar(_ value: JSONValue) -> String {
        switch value {
        case .object: return "{}"
        case .array: return "[]"
        default: return value.serialized()  // null, true, false, numbers, and strings quoted as JSON
        }
    }

    private static func key(_ key: String) -> String {
        let plain = key.first.map { $0.isLetter || $0 == "_" } ?? false
            && key.unicodeScalars.allSatisfy { ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) || $0 == "_" || $0 == "-" }
            && !["true", "false", "null", "yes", "no", "on", "off", "y", "n"].contains(key.lowercased())
        return plain ? key : JSONValue.string(key).serialized()
    }
}
