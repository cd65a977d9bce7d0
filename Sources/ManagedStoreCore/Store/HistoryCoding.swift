import Foundation

/// How history rows hold what a change touched: property names as a JSON array, values before
/// as a JSON object (attributes in their JSON form, relationships as `{"+": [keys], "-": [keys]}`,
/// keys of the destination entity).
package enum HistoryCoding {
    package static func typeCode(_ type: PersistentHistoryChangeType) -> Int {
        switch type {
        case .insert: return 1
        case .update: return 2
        case .delete: return 3
        }
    }

    package static func type(_ code: Int64) -> PersistentHistoryChangeType? {
        switch code {
        case 1: return .insert
        case 2: return .update
        case 3: return .delete
        default: return nil
        }
    }

    /// Values before a change as a JSON object, written into `writer`: attributes in their JSON
    /// form, relationships as `{"+": [keys], "-": [keys]}`. Its member names, in order, are the
    /// properties the change touched.
    ///
    /// A destination is its key when it is of the relationship's destination entity, else
    /// `"Entity/key"`: a relationship to a parent entity holds objects of several kinds, and
    /// the history must still name them once they are gone.
    package static func writePrevious(_ values: [(name: String, value: HistoryDraft.Previous)], of entity: Entity, model: ManagedObjectModel,
                                      key: (ManagedObjectID) -> Int64?, into writer: inout JSONWriter) {
        writer.bytes.append(UInt8(ascii: "{"))
        for (i, (name, value)) in values.enumerated() {
            if i > 0 { writer.bytes.append(UInt8(ascii: ",")) }
            writer.writeString(name)
            writer.bytes.append(UInt8(ascii: ":"))
            switch value {
            case .attribute(let attribute):
                writer.write(attribute)
            case let .destinations(added, removed):
                let destination = entity.relationshipIndex(name).map { model.schema[entity.relationships[$0].destinationIndex].name }
                writer.writeRaw("{\"+\":")
                writeKeys(added, destination: destination, key: key, into: &writer)
                writer.writeRaw(",\"-\":")
                writeKeys(removed, destination: destination, key: key, into: &writer)
                writer.bytes.append(UInt8(ascii: "}"))
            }
        }
        writer.bytes.append(UInt8(ascii: "}"))
    }

    private static func writeKeys(_ ids: [ManagedObjectID], destination: String?, key: (ManagedObjectID) -> Int64?, into writer: inout JSONWriter) {
        writer.bytes.append(UInt8(ascii: "["))
        var first = true
        for id in ids {
            guard let k = key(id) else { continue }
            if !first { writer.bytes.append(UInt8(ascii: ",")) }
            first = false
            if id.entityName == destination { writer.writeInteger(k) } else { writer.writeString("\(id.entityName)/\(k)") }
        }
        writer.bytes.append(UInt8(ascii: "]"))
    }

    /// Values before a change: the members of the JSON object `writePrevious` wrote, for an
    /// object of `entity` (destinations named by their keys in `storeIdentifier`'s store).
    package static func decodePrevious(_ members: [(String, JSONValue)], entity: Entity, model: ManagedObjectModel,
                                       storeIdentifier: UUID) -> [String: PersistentHistoryValue] {
        var result: [String: PersistentHistoryValue] = [:]
        for (name, value) in members {
            switch entity.property(named: name) {
            case .attribute(let a)?:
                if let attribute = try? AttributeValue(json: value, type: entity.attributes[a].type) { result[name] = .attribute(attribute) }
            case .relationship(let r)?:
                let destination = model.schema[entity.relationships[r].destinationIndex].name
                func ids(_ key: String) -> [ManagedObjectID] {
                    (value[key]?.arrayValue ?? []).compactMap { element in
                        if let key = element.int64Value {
                            return ManagedObjectID(storeIdentifier: storeIdentifier, entityName: destination, key: .permanent(key))
                        }
                        // A destination of another kind than the relationship's (`writePrevious`).
                        guard let text = element.stringValue, let slash = text.lastIndex(of: "/"),
                              let key = Int64(text[text.index(after: slash)...]) else { return nil }
                        return ManagedObjectID(storeIdentifier: storeIdentifier, entityName: String(text[..<slash]), key: .permanent(key))
                    }
                }
                result[name] = .destinations(added: ids("+"), removed: ids("-"))
            case nil:
                continue
            }
        }
        return result
    }
}
