/// How the persistent history's change rows name properties after a migration renamed (or
/// removed) them: a change row names the properties it touched as the members of its
/// `previous` JSON object and in its `properties` array. Every store keeps both as JSON text,
/// and rewrites them with these.
package enum HistoryPropertyRenaming {
    /// The JSON object `text` with its members renamed; nil when none is (or it is not JSON).
    package static func renamedObject(_ text: String, _ names: [String: String?]) -> String? {
        guard let members = parse(text)?.objectMembers, members.contains(where: { names[$0.0] != nil }) else { return nil }
        let renamed: [(String, JSONValue)] = members.compactMap { name, value in
            guard let rename = names[name] else { return (name, value) }
            return rename.map { ($0, value) }
        }
        return JSONValue.object(renamed).serialized()
    }

    /// The JSON array of names `text` with its names renamed; nil when none is.
    package static func renamedArray(_ text: String, _ names: [String: String?]) -> String? {
        guard let items = parse(text)?.arrayValue, items.contains(where: { $0.stringValue.map { names[$0] != nil } ?? false }) else { return nil }
        let renamed: [JSONValue] = items.compactMap { item in
            guard let name = item.stringValue, let rename = names[name] else { return item }
            return rename.map(JSONValue.string)
        }
        return JSONValue.array(renamed).serialized()
    }

    private static func parse(_ text: String) -> JSONValue? { try? JSONParser(maxDepth: 8).parse(text) }
}
