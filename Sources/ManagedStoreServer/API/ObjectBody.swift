import ManagedStore

/// Where a relationship value points: a saved object, or an object inserted earlier in the
/// same transaction (its `ref`).
enum ObjectReference: Sendable, Hashable {
    case id(ManagedObjectID)
    case ref(String)
}

/// A JSON object body, checked against the entity: known properties only, values of the
/// right JSON shape, converted to attribute values and references.
struct ObjectBody: Sendable {
    var attributes: [(name: String, value: AttributeValue)] = []
    var toOne: [(name: String, target: ObjectReference?)] = []
    var toMany: [(name: String, targets: [ObjectReference])] = []
    /// `_version` from the body: the version the write is based on.
    var version: Int64?
    /// Every value that does not fit its property, reported together (422).
    var typeErrors: [(property: String, message: String)] = []

    /// The names the body sets (R in the contract's conflict rules).
    var propertyNames: [String] { attributes.map(\.name) + toOne.map(\.name) + toMany.map(\.name) }

    /// Reads `json` for `entity`; `refs` are the transaction's temporary refs usable as targets.
    init(json: JSONValue, entity: EntityDescription, coordinator: PersistentStoreCoordinator, refs: Set<String> = []) throws(Problem) {
        guard let members = json.objectMembers else {
            throw Problem.badRequest("the body must be a JSON object of \(entity.name) properties, not \(json.typeName)")
        }
        for (key, value) in members {
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
                    typeErrors.append((key, error.description))
                }
            } else if let relationship = entity.relationship(named: key) {
                func reference(_ item: JSONValue) -> ObjectReference?? {
                    if item.isNull { return .some(nil) }
                    guard let text = item.stringValue else { return nil }
                    if refs.contains(text) { return .ref(text) }
                    guard let id = coordinator.managedObjectID(fromDescription: text), id.entityName == relationship.destination else { return nil }
                    return .id(id)
                }
                if relationship.isToMany {
                    guard let items = value.isNull ? [] : value.arrayValue else {
                        typeErrors.append((key, "expected an array of \(relationship.destination) IDs such as \"\(relationship.destination)/7\""))
                        continue
                    }
                    var targets: [ObjectReference] = []
                    for item in items {
                        guard case .some(.some(let target)) = reference(item) else {
                            typeErrors.append((key, "expected \(relationship.destination) IDs such as \"\(relationship.destination)/7\", got \(item.serialized().prefix(60))"))
                            continue
                        }
                        targets.append(target)
                    }
                    toMany.append((key, targets))
                } else {
                    guard case .some(let target) = reference(value) else {
                        typeErrors.append((key, "expected a \(relationship.destination) ID such as \"\(relationship.destination)/7\" or null"))
                        continue
                    }
                    toOne.append((key, target))
                }
            } else {
                throw Problem.unknownProperty(entity.name, key)
            }
        }
    }
}
