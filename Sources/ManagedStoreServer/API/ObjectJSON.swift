import Foundation
import ManagedStore

/// Which relationships to embed as objects instead of IDs: `include=project,tags,project.tasks`.
struct IncludeTree: Sendable {
    var children: [String: IncludeTree] = [:]

    init() {}

    /// Parses the comma-separated key paths, checking each step against the model.
    init(_ text: String, entity: EntityDescription, model: ManagedObjectModel) throws(Problem) {
        for path in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !path.isEmpty {
            var current = entity
            var node = [String]()
            for name in path.split(separator: ".").map(String.init) {
                guard let relationship = current.relationship(named: name), let destination = model.entity(named: relationship.destination) else {
                    throw Problem.unknownProperty(current.name, name)
                }
                node.append(name)
                current = destination
            }
            insert(node[...])
        }
    }

    private mutating func insert(_ path: ArraySlice<String>) {
        guard let first = path.first else { return }
        children[first, default: IncludeTree()].insert(path.dropFirst())
    }
}

/// Writes objects in the contract's JSON form: `_id`, `_version`, attributes, then
/// relationships (IDs, or embedded objects where `include` asks).
struct ObjectJSONEncoder {
    /// Properties to write besides `_id` and `_version`; nil for all.
    var fields: Set<String>?
    var include = IncludeTree()

    func encode(_ object: ManagedObject, into writer: inout JSONWriter) {
        encode(object, include: include, fields: fields, into: &writer)
    }

    private func encode(_ object: ManagedObject, include: IncludeTree, fields: Set<String>?, into writer: inout JSONWriter) {
        writer.writeRaw("{\"_id\":")
        writer.writeString(object.objectID.description)
        writer.writeRaw(",\"_version\":")
        writer.write(.number(String(object.version)))
        let entity = object.entityDescription
        let values = object.attributeValues
        for (index, attribute) in entity.attributes.enumerated() where fields?.contains(attribute.name) ?? true {
            writer.writeRaw(",")
            writer.writeString(attribute.name)
            writer.writeRaw(":")
            writer.write(values[index].jsonValue)
        }
        for relationship in entity.relationships where fields?.contains(relationship.name) ?? true || include.children[relationship.name] != nil {
            writer.writeRaw(",")
            writer.writeString(relationship.name)
            writer.writeRaw(":")
            let nested = include.children[relationship.name]
            if relationship.isToMany {
                writer.writeRaw("[")
                if let nested {
                    for (i, member) in object.objects(forKey: relationship.name).enumerated() {
                        if i > 0 { writer.writeRaw(",") }
                        encode(member, include: nested, fields: nil, into: &writer)
                    }
                } else {
                    for (i, id) in object.objectIDs(forKey: relationship.name).enumerated() {
                        if i > 0 { writer.writeRaw(",") }
                        writer.writeString(id.description)
                    }
                }
                writer.writeRaw("]")
            } else if let target = object.objectID(forKey: relationship.name) {
                if let nested {
                    encode(object.managedObjectContext!.object(with: target), include: nested, fields: nil, into: &writer)
                } else {
                    writer.writeString(target.description)
                }
            } else {
                writer.writeRaw("null")
            }
        }
        writer.writeRaw("}")
    }

    /// One object as a response body.
    func body(_ object: ManagedObject) -> [UInt8] {
        var writer = JSONWriter(reservingCapacity: 512)
        encode(object, into: &writer)
        return writer.bytes
    }
}
