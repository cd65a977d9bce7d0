import Foundation
import ManagedStoreCore

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

/// What the object encoder reads of an object, whatever holds it: a managed object, the state
/// the write thread read of one, or a stored row read in place. Attributes and relationships by
/// their index in the entity (and name, for the sources that look them up by name).
protocol ObjectJSONSource: ~Copyable {
    /// What writing the attributes reads once per object (a managed object's values: taking
    /// them fires its fault and checks its queue, once instead of once per attribute).
    associatedtype Attributes
    var objectID: ManagedObjectID { get }
    var version: Int64 { get }
    func attributesForWriting() -> Attributes
    func writeAttribute(at index: Int, of attributes: Attributes, into writer: inout JSONWriter)
    func destination(ofToOneAt index: Int, named name: String) throws -> ManagedObjectID?
    func forEachDestination(ofToManyAt index: Int, named name: String, _ body: (ManagedObjectID) throws -> Void) throws
    /// The managed object, when the source is one: only managed objects embed related ones (`include`).
    var managedObject: ManagedObject? { get }
}

/// Writes objects in the contract's JSON form: `_id`, `_version`, attributes, then
/// relationships (IDs, or embedded objects where `include` asks). One encoder for every source
/// of an object (`ObjectJSONSource`), so that a GET, a write's answer and the change feed
/// write an object the same.
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

    /// One object as a response body.
    func body(_ object: ManagedObject) throws(Problem) -> [UInt8] {
        var writer = JSONWriter(reservingCapacity: 512)
        var embedded = 0
        try encode(object, into: &writer, embedded: &embedded)
        return writer.bytes
    }

    /// An object's state (read on the write thread) as the same JSON `body(_:)` writes.
    func encode(_ state: ObjectState, into writer: inout JSONWriter) {
        var path: [ManagedObjectID] = []
        var embedded = 0
        // Nothing to embed, no fields to leave out, nothing that can throw.
        try? encode(state, include: IncludeTree(), fields: nil, path: &path, embedded: &embedded, into: &writer)
    }

    /// One object's stored row as a response body, the same JSON `body(_:)` writes for its
    /// managed object. Embedding (`include`) needs the related objects: use `body(_:)` for it.
    func body(_ row: borrowing StoredObjectRow) throws -> [UInt8] {
        precondition(include.children.isEmpty, "embedding related objects needs managed objects")
        var writer = JSONWriter(reservingCapacity: 512)
        var path: [ManagedObjectID] = []
        var embedded = 0
        try encode(row, include: include, fields: fields, path: &path, embedded: &embedded, into: &writer)
        return writer.bytes
    }

    /// `path` holds the objects being embedded around this one: meeting one of them again (a
    /// cycle such as `tasks.project`) writes its ID instead of embedding it once more. Inlined
    /// into its three callers, so that each is specialized for its source (a generic over
    /// noncopyable types was left unspecialized, a witness call per property).
    @inline(__always)
    private func encode<Source: ObjectJSONSource & ~Copyable>(_ object: borrowing Source, include: IncludeTree, fields: Set<String>?,
                                                             path: inout [ManagedObjectID], embedded: inout Int,
                                                             into writer: inout JSONWriter) throws(Problem) {
        let id = object.objectID
        let layout = layouts[id.entityName]
        writer.writeRaw("{\"_id\":")
        writer.write(id)
        writer.writeRaw(",\"_version\":")
        writer.writeInteger(object.version)
        let attributes = object.attributesForWriting()
        for (index, attribute) in layout.attributes.enumerated() where fields?.contains(attribute.name) ?? true {
            writer.writeRaw(attribute.key)
            object.writeAttribute(at: index, of: attributes, into: &writer)
        }
        path.append(id)
        defer { path.removeLast() }
        // Only an include embeds, and only a managed object's context can.
        let context = include.children.isEmpty ? nil : object.managedObject?.managedObjectContext
        func embed(_ member: ManagedObjectID, _ nested: IncludeTree) throws(Problem) {
            guard let context, !path.contains(member) else { return writer.write(member) }
            embedded += 1
            guard embedded <= IncludeTree.maxEmbeddedObjects else {
                throw Problem.badRequest("the include would embed more than \(IncludeTree.maxEmbeddedObjects) objects in one answer; "
                    + "ask for fewer objects (limit) or a shallower include")
            }
            try encode(context.object(with: member), include: nested, fields: nil, path: &path, embedded: &embedded, into: &writer)
        }
        for (index, relationship) in layout.relationships.enumerated() {
            let nested = include.children.isEmpty ? nil : include.children[relationship.name]
            guard nested != nil || fields?.contains(relationship.name) ?? true else { continue }
            writer.writeRaw(relationship.key)
            do {
                if layout.isToMany[index] {
                    writer.writeRaw("[")
                    var first = true
                    try object.forEachDestination(ofToManyAt: index, named: relationship.name) { member throws in
                        if !first { writer.writeRaw(",") }
                        first = false
                        if let nested { try embed(member, nested) } else { writer.write(member) }
                    }
                    writer.writeRaw("]")
                } else if let target = try object.destination(ofToOneAt: index, named: relationship.name) {
                    if let nested { try embed(target, nested) } else { writer.write(target) }
                } else {
                    writer.writeRaw("null")
                }
            } catch let problem as Problem {
                throw problem
            } catch {
                throw Problem.internalError("the object could not be read: \(error)")
            }
        }
        writer.writeRaw("}")
    }
}

extension ManagedObject: ObjectJSONSource {
    func attributesForWriting() -> [AttributeValue] { attributeValues }

    func writeAttribute(at index: Int, of attributes: [AttributeValue], into writer: inout JSONWriter) { writer.write(attributes[index]) }

    func destination(ofToOneAt index: Int, named name: String) -> ManagedObjectID? { objectID(forKey: name) }

    func forEachDestination(ofToManyAt index: Int, named name: String, _ body: (ManagedObjectID) throws -> Void) throws {
        for id in objectIDs(forKey: name) { try body(id) }
    }

    var managedObject: ManagedObject? { self }
}

extension ObjectState: ObjectJSONSource {
    var objectID: ManagedObjectID { id }

    func attributesForWriting() -> [AttributeValue] { attributes }

    func writeAttribute(at index: Int, of attributes: [AttributeValue], into writer: inout JSONWriter) {
        writer.write(index < attributes.count ? attributes[index] : .null)
    }

    func destination(ofToOneAt index: Int, named name: String) -> ManagedObjectID? {
        index < relationships.count ? relationships[index].first : nil
    }

    func forEachDestination(ofToManyAt index: Int, named name: String, _ body: (ManagedObjectID) throws -> Void) throws {
        guard index < relationships.count else { return }
        for id in relationships[index] { try body(id) }
    }

    var managedObject: ManagedObject? { nil }
}

extension StoredObjectRow: ObjectJSONSource {
    /// Nothing: each value is written from the row as it is read.
    func attributesForWriting() {}

    func writeAttribute(at index: Int, of attributes: Void, into writer: inout JSONWriter) { writeJSON(ofAttributeAt: index, into: &writer) }

    func destination(ofToOneAt index: Int, named name: String) throws -> ManagedObjectID? { try destination(ofToOneAt: index) }

    func forEachDestination(ofToManyAt index: Int, named name: String, _ body: (ManagedObjectID) throws -> Void) throws {
        try forEachDestination(ofToManyAt: index, body)
    }

    var managedObject: ManagedObject? { nil }
}
