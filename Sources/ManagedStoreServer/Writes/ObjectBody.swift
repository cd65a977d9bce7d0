import ManagedStoreCore

/// A JSON object body, checked against the entity: known properties only, values of the
/// right JSON shape, converted to attribute values and references.
struct ObjectBody: Sendable {
    var attributes: [(name: String, value: AttributeValue)] = []
    var toOne: [(name: String, target: ObjectReference?)] = []
    var toMany: [(name: String, targets: [ObjectReference])] = []
    /// `_version` from the body: the version the write is based on.
    var version: Int64?
    /// Every value that does not fit its property, reported together (422): `invalid-type`
    /// for a JSON value of the wrong kind, `invalid-relationship` for a relationship value
    /// that is a string but names no object of the model.
    var errors: [(property: String, code: ValidationErrorCode, message: String)] = []

    /// The names the body sets (R in the contract's conflict rules).
    var propertyNames: [String] { attributes.map(\.name) + toOne.map(\.name) + toMany.map(\.name) }

    /// Reads `json` for `entity`; `refs` are the transaction's temporary refs usable as targets.
    init(json: JSONValue, entity: EntityDescription, coordinator: PersistentStoreCoordinator, refs: Set<String> = []) throws(Problem) {
        guard let members = json.objectMembers else {
            throw Problem.badRequest("the body must be a JSON object of \(entity.name) properties, not \(json.typeName)")
        }
        // A key given twice counts once, with its last value, as every lookup of a JSON object does.
        let lastIndex = Dictionary(members.enumerated().map { ($0.element.0, $0.offset) }, uniquingKeysWith: { _, last in last })
        for (index, (key, value)) in members.enumerated() where lastIndex[key] == index {
            switch key {
            case "_version":
                guard let version = value.int64Value, version >= 1 else {
                    throw Problem.badRequest("\"_version\" must be a positive integer")
                }
                self.version = version
                continue
            case "_id":
                continue  // the URL names the object; an `_id` in a body read back from GET is ignored
            default:
                break
            }
            if let attribute = entity.attribute(named: key) {
                do { attributes.append((key, try AttributeValue(json: value, type: attribute.type))) } catch {
                    errors.append((key, .invalidType, error.description))
                }
            } else if let relationship = entity.relationship(named: key) {
                // A string is a reference: an object ID of any entity (the write checks that it
                // exists and is of the destination's entity: invalid-relationship) or a ref. Any
                // other JSON value is of the wrong kind: invalid-type.
                // A parent entity's objects are its kinds' (an abstract one has none of its own).
                let example = "such as \"\(coordinator.model.kindNames(of: relationship.destination).first ?? relationship.destination)/7\""
                func reference(_ item: JSONValue) -> ObjectReference? {
                    guard let text = item.stringValue else { return nil }
                    if refs.contains(text) { return .ref(text) }
                    guard let id = coordinator.managedObjectID(fromDescription: text) else {
                        errors.append((key, .invalidRelationship,
                                       "\(JSONValue.string(String(text.prefix(60))).serialized()) is not a \(relationship.destination) ID \(example)"
                                       + (refs.isEmpty ? "" : " or a ref of an earlier insert")))
                        return nil
                    }
                    return .id(id)
                }
                if relationship.isToMany {
                    guard let items = value.isNull ? [] : value.arrayValue else {
                        errors.append((key, .invalidType, "expected an array of \(relationship.destination) IDs \(example), got \(value.typeName)"))
                        continue
                    }
                    var targets: [ObjectReference] = []
                    var complete = true
                    for item in items {
                        guard item.stringValue != nil else {
                            errors.append((key, .invalidType, "expected \(relationship.destination) IDs \(example), got \(item.typeName)"))
                            complete = false
                            continue
                        }
                        if let target = reference(item) { targets.append(target) } else { complete = false }
                    }
                    if complete { toMany.append((key, targets)) }
                } else if value.isNull {
                    toOne.append((key, nil))
                } else if value.stringValue == nil {
                    errors.append((key, .invalidType, "expected a \(relationship.destination) ID \(example) or null, got \(value.typeName)"))
                } else if let target = reference(value) {
                    toOne.append((key, target))
                }
            } else if coordinator.model.transientAttributes(ofEntity: entity.name).contains(where: { $0.name == key }) {
                throw Problem.transientProperty(entity.name, key)
            } else {
                throw Problem.unknownProperty(entity.name, key)
            }
        }
    }
}
