import Foundation
import ManagedStore

/// A model as plain-text tables (`managedstore model describe`): per entity its attributes and
/// relationships (inherited ones first, marked with the entity they come from), then its
/// uniqueness constraints and indexes.
enum ModelDescription {
    static func text(of model: ManagedObjectModel) -> String {
        var out = "\(model.name) version \(model.version): \(model.entities.count) entities\n"
        for (entity, own) in zip(model.entities, model.authoredEntities) {
            var notes: [String] = []
            if entity.isAbstract { notes.append("abstract") }
            if let parent = entity.parent { notes.append("parent \(parent)") }
            let children = model.entities.filter { $0.parent == entity.name }.map(\.name)
            if !children.isEmpty { notes.append("sub-entities \(children.joined(separator: ", "))") }
            if let was = entity.renamingIdentifier { notes.append("was \(was)") }
            out += "\n\(entity.name)" + (notes.isEmpty ? "" : " (\(notes.joined(separator: "; ")))") + "\n"
            /// Where an inherited property comes from.
            func origin(_ name: String) -> String? {
                func declares(_ description: EntityDescription) -> Bool {
                    description.attributes.contains { $0.name == name } || description.relationships.contains { $0.name == name }
                }
                guard !declares(own) else { return nil }
                let declaring = model.ancestorNames(of: entity.name).first { ancestor in
                    model.authoredEntities.first { $0.name == ancestor }.map(declares) ?? false
                }
                return declaring.map { "from \($0)" }
            }
            var rows = [["property", "kind", "type", "optional", "default", "rules"]]
            for a in entity.attributes {
                var rules: [String] = origin(a.name).map { [$0] } ?? []
                if let v = a.valueTransformerName { rules.append("transformer \(v)") }
                if let v = a.minValue { rules.append("min " + v.jsonValue.serialized()) }
                if let v = a.maxValue { rules.append("max " + v.jsonValue.serialized()) }
                if let v = a.minLength { rules.append("minLength \(v)") }
                if let v = a.maxLength { rules.append("maxLength \(v)") }
                if let v = a.pattern { rules.append("pattern \(v)") }
                if let v = a.renamingIdentifier { rules.append("was \(v)") }
                rows.append([a.name, "attribute", a.type.rawValue, a.isOptional ? "yes" : "no", a.defaultValue.isNull ? "" : a.defaultValue.jsonValue.serialized(),
                             rules.joined(separator: ", ")])
            }
            for r in entity.relationships {
                var rules = (origin(r.name).map { [$0] } ?? []) + [r.inverse.map { "inverse \($0)" } ?? "one-way", "delete \(r.deleteRule.rawValue)"]
                if r.isOrdered { rules.append("ordered") }
                if let v = r.minCount { rules.append("min count \(v)") }
                if let v = r.maxCount { rules.append("max count \(v)") }
                if let v = r.renamingIdentifier { rules.append("was \(v)") }
                rows.append([r.name, r.isToMany ? "to-many" : "to-one", r.destination, r.isOptional ? "yes" : "no", "", rules.joined(separator: ", ")])
            }
            out += table(rows)
            for constraint in entity.uniquenessConstraints { out += "  unique (\(constraint.joined(separator: ", ")))\n" }
            for index in entity.indexes { out += "  index (\(index.joined(separator: ", ")))\n" }
        }
        return out
    }

    /// Rows as columns padded to their widest cell, the first row a header.
    private static func table(_ rows: [[String]]) -> String {
        let widths = rows[0].indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            "  " + row.enumerated().map { $0.element.padding(toLength: widths[$0.offset], withPad: " ", startingAt: 0) }
                .joined(separator: "  ").trimmingCharacters(in: .whitespaces) + "\n"
        }.joined()
    }
}
