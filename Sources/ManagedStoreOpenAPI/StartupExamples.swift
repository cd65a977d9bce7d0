import Foundation
import ManagedStoreCore

/// The commands `serve` suggests when it starts: a model, an insert and a filtered fetch, each
/// on an entity and a property of the model being served, so that a user of another model
/// than the demo can paste them and see them work.
public enum StartupExamples {
    /// The `curl` lines for a server at `base` (`http://127.0.0.1:8080`) serving `model`.
    public static func lines(for model: ManagedObjectModel, base: String) -> [String] {
        var lines = ["curl -s \(base)/v1/model"]
        guard let (entity, body) = insertExample(in: model) else { return lines }
        let json = body.serialized()
        lines.append("curl -s -X POST \(base)/v1/objects/\(entity.name) -H 'Content-Type: application/json' -d '\(json)'")
        if let (name, prefix) = stringValue(in: body, of: entity) {
            let predicate = "\(name) BEGINSWITH[c] \"\(prefix)\""
            lines.append("curl -s '\(base)/v1/objects/\(entity.name)?where=\(queryEncoded(predicate))'")
        } else {
            lines.append("curl -s '\(base)/v1/objects/\(entity.name)?limit=10'")
        }
        return lines
    }

    /// The first entity, in the model's order, for which an insert is known to be accepted,
    /// with that insert's body: its mandatory attributes inside their rules, or, when it has
    /// none, one attribute of its own (a string first) so that the example sets a property.
    static func insertExample(in model: ManagedObjectModel) -> (EntityDescription, JSONValue)? {
        for entity in model.entities where !entity.isAbstract {
            guard case .object(var members)? = EntitySchemas(entity: entity, model: model).example else { continue }
            if members.isEmpty {
                let settable = entity.attributes.filter { $0.pattern == nil }
                let preferred = settable.first { $0.type == .string } ?? settable.first
                guard let attribute = preferred, let value = EntitySchemas.example(attribute) else { continue }
                members = [(attribute.name, value)]
            }
            return (entity, .object(members))
        }
        return nil
    }

    /// A string attribute the example sets, and the start of its value to filter on.
    private static func stringValue(in body: JSONValue, of entity: EntityDescription) -> (String, String)? {
        for (name, value) in body.objectMembers ?? [] {
            guard entity.attribute(named: name)?.type == .string, let text = value.stringValue, !text.isEmpty else { continue }
            return (name, String(text.prefix(2)))
        }
        return nil
    }

    /// `text` for a query string inside single quotes: everything but unreserved characters
    /// percent-encoded (a space as %20, since a query's `+` is a space).
    private static func queryEncoded(_ text: String) -> String {
        let allowed = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }
}
