import ManagedStoreCore

/// What `serve` says once at start-up about the parts of a Core Data model a server keeps
/// differently: Transformables held as opaque bytes, transient attributes never stored, and
/// the fetch request templates a GET can name. Nothing for a model without them.
public enum ModelNotes {
    public static func lines(for model: ManagedObjectModel) -> [String] {
        var lines: [String] = []
        // Each attribute once, on the entity that declares it (a sub-entity repeats it).
        let declared = model.authoredEntities.flatMap { entity in entity.attributes.map { (entity.name, $0) } }
        let opaque = declared.filter { $0.1.valueTransformerName != nil && !$0.1.isTransient }
        if !opaque.isEmpty {
            lines.append("opaque bytes (Transformable: the bytes its transformer wrote, kept and served as base64, never unarchived): "
                         + opaque.map { "\($0.0).\($0.1.name) (\($0.1.valueTransformerName!))" }.joined(separator: ", "))
        }
        let transient = declared.filter { $0.1.isTransient }
        if !transient.isEmpty {
            lines.append("transient (in the model, never stored, not in objects' JSON): "
                         + transient.map { "\($0.0).\($0.1.name)" }.joined(separator: ", "))
        }
        if !model.fetchRequestTemplates.isEmpty {
            lines.append("fetch request templates (GET /v1/objects/{Entity}?fetch=NAME&var.NAME=value): "
                         + model.fetchRequestTemplates.map { template in
                             let variables = model.variables(ofFetchRequestTemplate: template.name)?.map { "$" + $0.name } ?? []
                             return "\(template.entityName).\(template.name)" + (variables.isEmpty ? "" : "(\(variables.joined(separator: ", ")))")
                         }.joined(separator: ", "))
        }
        return lines
    }
}
