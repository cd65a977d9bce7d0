import Foundation

/// Checks a JSON value against a JSON Schema, for the keywords `ModelJSONSchema` uses: `type`,
/// `enum`, `required`, `properties`, `additionalProperties` (true or false), `items`,
/// `minItems`, `minLength`, `minimum`, `pattern`, and `$ref` to `#/$defs/...`. Annotations
/// (`description`, `title`, `$id`) are ignored. Every violation is reported, with the JSON
/// Pointer of the value it is about.
package struct JSONSchemaCheck {
    let root: JSONValue
    private(set) var violations: [String] = []
    /// Each pattern compiled once (a model names many properties against the same one); nil
    /// for a pattern Swift's Regex cannot compile, which is then left unchecked.
    private var regexes: [String: Regex<AnyRegexOutput>?] = [:]

    package static func violations(of value: JSONValue, against schema: JSONValue) -> [String] {
        var check = JSONSchemaCheck(root: schema)
        check.check(value, schema, at: "", depth: 0)
        return check.violations
    }

    private mutating func check(_ value: JSONValue, _ schema: JSONValue, at pointer: String, depth: Int) {
        guard depth < 64 else { return violations.append("\(where_(pointer)): the schema nests too deep") }
        if let reference = schema["$ref"]?.stringValue {
            guard reference.hasPrefix("#/$defs/"), let target = root["$defs"]?[String(reference.dropFirst(8))] else {
                return violations.append("\(where_(pointer)): the schema refers to \(reference), which it does not hold")
            }
            check(value, target, at: pointer, depth: depth + 1)
        }
        if let types = schema["type"] {
            let allowed = types.arrayValue?.compactMap(\.stringValue) ?? types.stringValue.map { [$0] } ?? []
            guard allowed.contains(where: { Self.isOfType(value, $0) }) else {
                return violations.append("\(where_(pointer)): must be \(allowed.joined(separator: " or ")), not \(Self.typeName(value))")
            }
        }
        if let options = schema["enum"]?.arrayValue, !options.contains(value) {
            violations.append("\(where_(pointer)): must be one of \(options.map { $0.serialized() }.joined(separator: ", "))")
        }
        if let text = value.stringValue {
            if let least = schema["minLength"]?.int64Value, text.unicodeScalars.count < least {
                violations.append("\(where_(pointer)): must have at least \(least) character\(least == 1 ? "" : "s")")
            }
            if let pattern = schema["pattern"]?.stringValue, let regex = regex(pattern), (try? regex.firstMatch(in: text)) == nil {
                violations.append("\(where_(pointer)): \(value.serialized()) does not match \(pattern)")
            }
        }
        if let least = schema["minimum"]?.doubleValue, let number = value.doubleValue, number < least {
            violations.append("\(where_(pointer)): must be at least \(schema["minimum"]!.serialized())")
        }
        if let members = value.objectMembers {
            for name in schema["required"]?.arrayValue?.compactMap(\.stringValue) ?? [] where value[name] == nil {
                violations.append("\(where_(pointer)): \"\(name)\" is required")
            }
            let properties = schema["properties"]
            for (name, member) in members {
                let path = pointer + "/" + Self.escaped(name)
                if let property = properties?[name] {
                    check(member, property, at: path, depth: depth + 1)
                } else if schema["additionalProperties"]?.boolValue == false {
                    violations.append("\(where_(path)): unknown key \"\(name)\"")
                }
            }
        }
        if let items = value.arrayValue {
            if let least = schema["minItems"]?.int64Value, items.count < least {
                violations.append("\(where_(pointer)): must have at least \(least) item\(least == 1 ? "" : "s")")
            }
            if let itemSchema = schema["items"] {
                for (i, item) in items.enumerated() { check(item, itemSchema, at: pointer + "/\(i)", depth: depth + 1) }
            }
        }
    }

    private mutating func regex(_ pattern: String) -> Regex<AnyRegexOutput>? {
        if let known = regexes[pattern] { return known }
        let compiled = try? Regex(pattern)
        regexes[pattern] = .some(compiled)
        return compiled
    }

    private func where_(_ pointer: String) -> String { pointer.isEmpty ? "the model" : pointer }

    /// A JSON Pointer token: `~` and `/` escaped.
    private static func escaped(_ name: String) -> String {
        name.replacingOccurrences(of: "~", with: "~0").replacingOccurrences(of: "/", with: "~1")
    }

    private static func isOfType(_ value: JSONValue, _ type: String) -> Bool {
        switch (type, value) {
        case ("object", .object), ("array", .array), ("string", .string), ("boolean", .bool), ("null", .null), ("number", .number): return true
        case ("integer", .number): return value.int64Value != nil
        default: return false
        }
    }

    private static func typeName(_ value: JSONValue) -> String {
        switch value {
        case .object: "an object"
        case .array: "an array"
        case .string: "a string"
        case .bool: "a boolean"
        case .null: "null"
        case .number: "a number"
        }
    }
}
