import Foundation
import ManagedStore

/// Which relationships to embed as objects instead of IDs: `include=project,tags,project.tasks`.
///
/// The work an include asks for is bounded: key paths are at most `maxDepth` relationships
/// deep, an object already being embedded further up is written as its ID (a cycle is
/// embedded once), and one answer embeds at most `maxEmbeddedObjects` objects (400 beyond).
struct IncludeTree: Sendable {
    static let maxDepth = 3
    static let maxEmbeddedObjects = 10_000

    var children: [String: IncludeTree] = [:]

    init() {}

    /// Parses the comma-separated key paths, checking each step against the model.
    init(_ text: String, entity: EntityDescription, model: ManagedObjectModel) throws(Problem) {
        for path in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !path.isEmpty {
            var current = entity
            var node = [String]()
            let steps = path.split(separator: ".", omittingEmptySubsequences: false)
            guard steps.count <= Self.maxDepth else {
                throw Problem.badRequest("include '\(path.prefix(100))' is \(steps.count) relationships deep; at most \(Self.maxDepth) are allowed")
            }
            for name in steps.map(String.init) {
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

/// The JSON keys of one entity's properties, quoted and escaped once (`,"title":`), so that
/// writing an object writes only its values.
struct EntityJSONLayout: Sendable {
    struct Property: Sendable {
        let name: String
        let key: [UInt8]
    }
    let attributes: [Property]
    let relationships: [Property]
    let isToMany: [Bool]

    init(_ entity: EntityDescription) {
        func property(_ name: String) -> Property {
            var writer = JSONWriter(reservingCapacity: name.utf8.count + 4)
            writer.writeRaw(",")
            writer.writeString(name)
            writer.writeRaw(":")
            return Property(name: name, key: writer.bytes)
        }
        attributes = entity.attributes.map { property($0.name) }
        relationships = entity.relationships.map { property($0.name) }
        isToMany = entity.relationships.map(\.isToMany)
    }
}

/// The layouts of every entity of a model, made once when the service starts.
struct JSONLayouts: Sendable {
    private let byEntity: [String: EntityJSONLayout]

    init(_ model: ManagedObjectModel) {
        byEntity = Dictionary(uniqueKeysWithValues: model.entities.map { ($0.name, EntityJSONLayout($0)) })
    }

    subscript(entityName: String) -> EntityJSONLayout {
        guard let layout = byEntity[entityName] else { preconditionFailure("no JSON layout for entity \(entityName)") }
        return layout
    }
}

/// Writes objects in the contract's JSON form: `_id`, `_version`, attributes, then
/// relationships (IDs, or embedded objects where `include` asks).
struct ObjectJSONEncoder {
    let layouts: JSONLayouts
    /// Properties to write besides `_id` and `_version`; nil for all.
    var fields: Set<String>?
    var include = IncludeTree()

    init(layouts: JSONLayouts, fields: Set<String>? = nil, include: IncludeTree = IncludeTree()) {
        self.layouts = layouts
        self.fields = fields
        self.include = include
    }

    /// Writes `object`. Embedding (`include`) counts against `embedded`, the objects this answer
    /// has embedded so far: past `IncludeTree.maxEmbeddedObjects` it throws 400.
    func encode(_ object: ManagedObject, into writer: inout JSONWriter, embedded: inout Int) throws(Problem) {
        var path: [ManagedObjectID] = []
        try encode(object, include: include, fields: fields, path: &path, embedded: &embedded, into: &writer)
    }

    /// `path` holds the objects being embedded around this one: meeting one of them again (a
    /// cycle such as `tasks.project`) writes its ID instead of embedding it once more.
    private func encode(_ object: ManagedObject, include: IncludeTree, fields: Set<String>?, path: inout [ManagedObjectID],
                        embedded: inout Int, into writer: inout JSONWriter) throws(Problem) {
        let layout = layouts[object.entityName]
        Self.writeHead(object.objectID, version: object.version, into: &writer)
        let values = object.attributeValues
        for (index, attribute) in layout.attributes.enumerated() where fields?.contains(attribute.name) ?? true {
            writer.writeRaw(attribute.key)
            writer.write(values[index])
        }
        path.append(object.objectID)
        defer { path.removeLast() }
        func embed(_ member: ManagedObject, _ nested: IncludeTree) throws(Problem) {
            if path.contains(member.objectID) { return writer.write(member.objectID) }
            embedded += 1
            guard embedded <= IncludeTree.maxEmbeddedObjects else {
                throw Problem.badRequest("the include would embed more than \(IncludeTree.maxEmbeddedObjects) objects in one answer; "
                    + "ask for fewer objects (limit) or a shallower include")
            }
            try encode(member, include: nested, fields: nil, path: &path, embedded: &embedded, into: &writer)
        }
        for (index, relationship) in layout.relationships.enumerated() {
            let nested = include.children.isEmpty ? nil : include.children[relationship.name]
            guard nested != nil || fields?.contains(relationship.name) ?? true else { continue }
            writer.writeRaw(relationship.key)
            if layout.isToMany[index] {
                writer.writeRaw("[")
                if let nested {
                    for (i, member) in object.objects(forKey: relationship.name).enumerated() {
                        if i > 0 { writer.writeRaw(",") }
                        try embed(member, nested)
                    }
                } else {
                    for (i, id) in object.objectIDs(forKey: relationship.name).enumerated() {
                        if i > 0 { writer.writeRaw(",") }
                        writer.write(id)
                    }
                }
                writer.writeRaw("]")
            } else if let target = object.objectID(forKey: relationship.name) {
                if let nested, let context = object.managedObjectContext {
                    try embed(context.object(with: target), nested)
                } else {
                    writer.write(target)
                }
            } else {
                writer.writeRaw("null")
            }
        }
        writer.writeRaw("}")
    }

    /// `{"_id":"Task/42","_version":3`: what every object starts with.
    private static func writeHead(_ id: ManagedObjectID, version: Int64, into writer: inout JSONWriter) {
        writer.writeRaw("{\"_id\":")
        writer.write(id)
        writer.writeRaw(",\"_version\":")
        writer.writeInteger(version)
    }

    /// One object as a response body.
    func body(_ object: ManagedObject) throws(Problem) -> [UInt8] {
        var writer = JSONWriter(reservingCapacity: 512)
        var embedded = 0
        try encode(object, into: &writer, embedded: &embedded)
        return writer.bytes
    }

    /// An object's state (read on the write thread) as the same JSON `body(_:)` writes.
    func encode(_ state: ObjectState, into writer: inout JSONWriter) {
        let layout = layouts[state.id.entityName]
        Self.writeHead(state.id, version: state.version, into: &writer)
        for (index, attribute) in layout.attributes.enumerated() where index < state.attributes.count {
            writer.writeRaw(attribute.key)
            writer.write(state.attributes[index])
        }
        for (index, relationship) in layout.relationships.enumerated() where index < state.relationships.count {
            writer.writeRaw(relationship.key)
            let destinations = state.relationships[index]
            if layout.isToMany[index] {
                writer.writeRaw("[")
                for (i, id) in destinations.enumerated() {
                    if i > 0 { writer.writeRaw(",") }
                    writer.write(id)
                }
                writer.writeRaw("]")
            } else if let target = destinations.first {
                writer.write(target)
            } else {
                writer.writeRaw("null")
            }
        }
        writer.writeRaw("}")
    }

    /// One object's stored row as a response body, the same JSON `body(_:)` writes for its
    /// managed object. Embedding (`include`) needs the related objects: use `body(_:)` for it.
    func body(_ row: borrowing StoredObjectRow) throws -> [UInt8] {
        precondition(include.children.isEmpty, "embedding related objects needs managed objects")
        let layout = layouts[row.objectID.entityName]
        var writer = JSONWriter(reservingCapacity: 512)
        Self.writeHead(row.objectID, version: row.version, into: &writer)
        for (index, attribute) in layout.attributes.enumerated() where fields?.contains(attribute.name) ?? true {
            writer.writeRaw(attribute.key)
            row.writeJSON(ofAttributeAt: index, into: &writer)
        }
        for (index, relationship) in layout.relationships.enumerated() where fields?.contains(relationship.name) ?? true {
            writer.writeRaw(relationship.key)
            if layout.isToMany[index] {
                writer.writeRaw("[")
                var first = true
                try row.forEachDestination(ofToManyAt: index) { id in
                    if !first { writer.writeRaw(",") }
                    first = false
                    writer.write(id)
                }
                writer.writeRaw("]")
            } else if let target = try row.destination(ofToOneAt: index) {
                writer.write(target)
            } else {
                writer.writeRaw("null")
            }
        }
        writer.writeRaw("}")
        return writer.bytes
    }
}
