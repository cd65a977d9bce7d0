import Foundation
import ManagedStore

/// Applies one write request on the write context, inside the write queue's group commit, and
/// builds its response. Any failure rolls the context back, so the next request starts clean
/// (its savepoint already undid the store side).
///
/// Nothing a client sends may reach one of the library's misuse traps (setting a relationship
/// to an object of the wrong entity or to a deleted one, changing a deleted object): every such
/// case is found here first and answered with a problem.
struct WriteExecutor {
    let context: ManagedObjectContext
    let layouts: JSONLayouts

    /// A request-level failure: its problem is the response.
    private struct Failure: Error {
        let problem: Problem
    }

    func run(_ operation: WriteOperation) -> HTTPResponse {
        do {
            switch operation {
            case let .insert(entity, body):
                let names = ObjectNames()
                let object = context.insertNewObject(forEntityName: entity)
                try applyChecked([(body, object, false)], refs: [:], names: names)
                try save(names: names)
                return try objectResponse(201, object, headers: [("Location", "/v1/objects/\(entity)/\(object.objectID.primaryKey ?? 0)")])
            case let .update(id, body, baseVersion, replace):
                let names = ObjectNames()
                let object = try existing(id)
                if let baseVersion { object.baseVersion = baseVersion }
                names.noteSets(object.objectID, body.propertyNames)
                try applyChecked([(body, object, replace)], refs: [:], names: names)
                try save(names: names)
                return try objectResponse(200, object)
            case let .delete(id, baseVersion):
                let object = try existing(id)
                if let baseVersion { object.baseVersion = baseVersion }
                context.delete(object)
                try save(names: ObjectNames())
                return HTTPResponse(status: 204)
            case .transaction(let operations):
                return try transaction(operations)
            }
        } catch let failure as Failure {
            context.rollback()
            return failure.problem.response
        } catch let problem as Problem {
            context.rollback()
            return problem.response
        } catch {
            context.rollback()
            ServerLog.error("write failed unexpectedly: \(error)")
            return Problem.internalError("the write failed unexpectedly; nothing was written").response
        }
    }

    // MARK: Transactions

    private func transaction(_ operations: [TransactionOperation]) throws -> HTTPResponse {
        var refs: [String: ManagedObject] = [:]
        let names = ObjectNames()
        var applied: [(ObjectBody, ManagedObject, Bool)] = []
        func resolve(_ target: ObjectReference, operation index: Int) throws -> ManagedObject {
            let object: ManagedObject
            switch target {
            case .ref(let name):
                guard let found = refs[name] else { throw Failure(problem: .badRequest("operation \(index): unknown ref '\(name)'")) }
                object = found
            case .id(let id):
                object = try existing(id)
            }
            guard !object.isDeleted else {
                throw Failure(problem: .notFound("operation \(index): \(names.name(object.objectID)) was deleted by an earlier operation of this transaction"))
            }
            return object
        }
        for (index, operation) in operations.enumerated() {
            switch operation {
            case let .insert(entity, ref, body):
                let object = context.insertNewObject(forEntityName: entity)
                if let ref {
                    refs[ref] = object
                    names.name(object.objectID, ref)
                }
                try apply(body, to: object, replace: false, refs: refs, names: names, into: &applied)
            case let .update(target, baseVersion, body):
                let object = try resolve(target, operation: index)
                // An object inserted earlier in this transaction is saved once, as version 1:
                // it has no stored version to be based on.
                if !object.isInserted, let baseVersion { object.baseVersion = baseVersion }
                names.noteSets(object.objectID, body.propertyNames)
                try apply(body, to: object, replace: false, refs: refs, names: names, into: &applied)
            case let .delete(target, baseVersion):
                let object = try resolve(target, operation: index)
                if !object.isInserted, let baseVersion { object.baseVersion = baseVersion }
                context.delete(object)
            }
        }
        try reportErrors(of: applied, names: names)
        let saved = try save(names: names)

        var ids: [(String, JSONValue)] = []
        for (ref, object) in refs.sorted(by: { $0.key < $1.key }) where !object.isDeleted {
            ids.append((ref, .string(object.objectID.description)))
        }
        var writer = JSONWriter(reservingCapacity: 1024)
        writer.writeRaw("{\"ids\":")
        writer.write(.object(ids))
        writer.writeRaw(",\"objects\":[")
        // Every object whose stored state the transaction changed, as a GET now answers it:
        // inserts, updates, objects changed through an inverse (a project whose tasks gained
        // one), and deletions, cascades included.
        let encoder = ObjectJSONEncoder(layouts: layouts)
        var first = true
        for id in saved.inserted + saved.updated {
            guard let body = try context.withStoredObject(id, { row in try encoder.body(row) }) else { continue }
            if !first { writer.writeRaw(",") }
            first = false
            writer.writeRaw(body)
        }
        for id in saved.deleted {
            if !first { writer.writeRaw(",") }
            first = false
            writer.write(.object([("_id", .string(id.description)), ("_deleted", .bool(true))]))
        }
        // The history token arrives with persistent history; until then it is null.
        writer.writeRaw("],\"token\":null,\"resolved\":[]}")
        return .json(200, writer.bytes)
    }

    // MARK: Steps

    private func existing(_ id: ManagedObjectID) throws -> ManagedObject {
        do { return try context.existingObject(with: id) } catch {
            throw Failure(problem: .notFound("no object \(id)"))
        }
    }

    /// Sets one body's values and reports every broken rule with the rest of the save's.
    private func applyChecked(_ bodies: [(ObjectBody, ManagedObject, Bool)], refs: [String: ManagedObject], names: ObjectNames) throws {
        var applied: [(ObjectBody, ManagedObject, Bool)] = []
        for (body, object, replace) in bodies {
            try apply(body, to: object, replace: replace, refs: refs, names: names, into: &applied)
        }
        try reportErrors(of: applied, names: names)
    }

    /// Sets the body's properties; with `replace`, every property the body leaves out goes back
    /// to its default (attributes) or to nothing (relationships). A value that cannot be set
    /// (of the wrong kind, or naming an object that does not exist, is deleted or is of another
    /// entity) is left unset and remembered in `applied` with its error, to be reported with
    /// every other broken rule of the write.
    private func apply(_ body: ObjectBody, to object: ManagedObject, replace: Bool, refs: [String: ManagedObject],
                       names: ObjectNames, into applied: inout [(ObjectBody, ManagedObject, Bool)]) throws {
        var body = body
        let entity = object.entityDescription
        func destination(_ reference: ObjectReference, _ property: String, expected: String) -> ManagedObject? {
            let found: ManagedObject?
            let id: ManagedObjectID
            switch reference {
            case .ref(let name):
                found = refs[name]
                guard let found else { return nil }
                id = found.objectID
            case .id(let given):
                id = given
                guard given.entityName == expected else {
                    body.errors.append((property, .invalidRelationship,
                                        ValidationError.wrongEntity(of: object.objectID, property, target: given, expected: expected).message(describing: names.name)))
                    return nil
                }
                found = try? context.existingObject(with: given)
            }
            guard let found, !found.isDeleted else {
                let error = ValidationError.invalidDestination(of: object.objectID, property, target: id, deleted: found != nil)
                body.errors.append((property, .invalidRelationship, error.message(describing: names.name)))
                return nil
            }
            guard found.entityName == expected else {
                body.errors.append((property, .invalidRelationship,
                                    ValidationError.wrongEntity(of: object.objectID, property, target: id, expected: expected).message(describing: names.name)))
                return nil
            }
            return found
        }
        if replace {
            let given = Set(body.propertyNames + body.errors.map(\.property))
            for attribute in entity.attributes where !given.contains(attribute.name) {
                object.setAttributeValue(attribute.defaultValue, forKey: attribute.name)
            }
            for relationship in entity.relationships where !given.contains(relationship.name) {
                if relationship.isToMany { object.setObjects([], forKey: relationship.name) } else { object.setObject(nil, forKey: relationship.name) }
            }
        }
        for (name, value) in body.attributes { object.setAttributeValue(value, forKey: name) }
        for relationship in entity.relationships {
            if let (_, reference) = body.toOne.last(where: { $0.name == relationship.name }) {
                if let reference {
                    if let target = destination(reference, relationship.name, expected: relationship.destination) {
                        object.setObject(target, forKey: relationship.name)
                    }
                } else {
                    object.setObject(nil, forKey: relationship.name)
                }
            } else if let (_, references) = body.toMany.last(where: { $0.name == relationship.name }) {
                let targets = references.compactMap { destination($0, relationship.name, expected: relationship.destination) }
                if targets.count == references.count { object.setObjects(targets, forKey: relationship.name) }
            }
        }
        applied.append((body, object, replace))
    }

    /// Throws 422 with every broken rule of the write at once when any value could not be set:
    /// those values' errors, and everything the save's validation finds in what was set
    /// (except a second error for a property whose value was already refused).
    private func reportErrors(of applied: [(ObjectBody, ManagedObject, Bool)], names: ObjectNames) throws {
        var reported: [(object: ManagedObjectID, property: String?, code: ValidationErrorCode, message: String)] = []
        var refused: Set<String> = []
        for (body, object, _) in applied {
            for error in body.errors {
                reported.append((object.objectID, error.property, error.code, error.message))
                refused.insert("\(object.objectID)\u{0}\(error.property)")
            }
        }
        guard !reported.isEmpty else { return }
        for error in context.validatePendingChanges() where !refused.contains("\(error.objectID)\u{0}\(error.property ?? "")") {
            reported.append((error.objectID, error.property, error.code, error.message(describing: names.name)))
        }
        throw Failure(problem: .validation(reported.map { (names.name($0.object), $0.property, $0.code.rawValue, $0.message) }))
    }

    @discardableResult
    private func save(names: ObjectNames) throws -> SavedChanges {
        // `do throws(SaveError)`: a plain `catch let error as SaveError` here crashed the Swift 6.3.1 compiler.
        do throws(SaveError) { return try context.save() } catch {
            switch error {
            case .validation(let errors):
                throw Failure(problem: .validation(errors.map { error in
                    (names.name(error.objectID), error.property, error.code.rawValue, error.message(describing: names.name))
                }))
            case let .conflict(merge, constraints):
                let conflicts = try merge.map { conflict -> JSONValue in
                    // R ∩ C: without the values at the base version every property counts as
                    // changed by the store, so R itself (what the request set).
                    let properties = conflict.cachedSnapshot == nil ? names.propertiesSet(on: conflict.objectID) : conflict.conflictingProperties
                    return .object([("kind", .string("optimistic-locking")), ("object", .string(conflict.objectID.description)),
                                    ("oldVersion", .number(String(conflict.oldVersion))), ("newVersion", .number(String(conflict.newVersion))),
                                    ("properties", .array(properties.sorted().map(JSONValue.string))),
                                    ("cachedSnapshot", Self.snapshot(conflict.cachedSnapshot)),
                                    ("persistedSnapshot", try storedJSON(conflict.objectID)),
                                    ("objectSnapshot", try pendingJSON(conflict.objectID, names: names))])
                } + constraints.map { conflict -> JSONValue in
                    .object([("kind", .string("uniqueness")), ("entity", .string(conflict.entityName)),
                             ("constraint", .array(conflict.constraint.map(JSONValue.string))),
                             ("values", .object(conflict.values.sorted { $0.key < $1.key }.map { ($0.key, $0.value.jsonValue) })),
                             ("conflictingObjects", .array(conflict.conflictingObjects.map { .string($0.description) }))])
                }
                throw Failure(problem: Self.conflictProblem(conflicts))
            case .store(let storeError):
                // The store's own words (SQLite's message, the SQL) go to the log, not to the client.
                ServerLog.error("save failed in the store: \(storeError)")
                throw Failure(problem: .unavailable("the store could not save the change; nothing was written"))
            }
        }
    }

    /// The object as the store holds it now (a GET's JSON), or null when it holds none.
    private func storedJSON(_ id: ManagedObjectID) throws -> JSONValue {
        let encoder = ObjectJSONEncoder(layouts: layouts)
        guard let body = try context.withStoredObject(id, { row in try encoder.body(row) }) else { return .null }
        return try JSONParser().parse(body)
    }

    /// The object as this write would have left it, or null when it deletes it. References
    /// to objects inserted by the write name them as the client does (its refs).
    private func pendingJSON(_ id: ManagedObjectID, names: ObjectNames) throws -> JSONValue {
        guard let object = context.registeredObject(for: id), !object.isDeleted else { return .null }
        let json = try JSONParser().parse(try ObjectJSONEncoder(layouts: layouts).body(object))
        guard case .object(let members) = json else { return json }
        func rename(_ value: JSONValue) -> JSONValue {
            switch value {
            case .string(let text):
                return .string(names.nameForDescription(text) ?? text)
            case .array(let items): return .array(items.map(rename))
            default: return value
            }
        }
        let relationships = Set(object.entityDescription.relationships.map(\.name))
        return .object(members.map { ($0.0, relationships.contains($0.0) ? rename($0.1) : $0.1) })
    }

    static func conflictProblem(_ conflicts: [JSONValue]) -> Problem {
        Problem(status: 409, code: "conflict", title: "Conflict",
                detail: "\(conflicts.count) conflict\(conflicts.count == 1 ? "" : "s"); nothing was written",
                extra: [("conflicts", .array(conflicts))])
    }

    private static func snapshot(_ snapshot: ObjectSnapshot?) -> JSONValue {
        guard let snapshot else { return .null }
        return .object(snapshot.sorted { $0.key < $1.key }.map { key, value in
            switch value {
            case .attribute(let v): return (key, v.jsonValue)
            case .object(let id): return (key, id.map { .string($0.description) } ?? .null)
            case .objects(let ids): return (key, .array(ids.map { .string($0.description) }))
            }
        })
    }

    private func objectResponse(_ status: Int, _ object: ManagedObject, headers: [(name: String, value: String)] = []) throws -> HTTPResponse {
        var response = HTTPResponse.json(status, try ObjectJSONEncoder(layouts: layouts).body(object), version: object.version)
        response.headers += headers
        return response
    }
}

/// How a write's answer names objects: saved ones by their permanent ID (`Task/42`), objects
/// inserted by this request by the client's ref, or `Task/new` when it gave none. A temporary
/// ID (`Task/t7`) names nothing outside the write context and never appears in an answer.
final class ObjectNames {
    private var refs: [ManagedObjectID: String] = [:]
    private var sets: [ManagedObjectID: Set<String>] = [:]

    func name(_ id: ManagedObjectID, _ ref: String) { refs[id] = ref }

    /// Remembers that the request sets `properties` of the object `id` (R in the contract's
    /// conflict rules).
    func noteSets(_ id: ManagedObjectID, _ properties: [String]) { sets[id, default: []].formUnion(properties) }

    func propertiesSet(on id: ManagedObjectID) -> Set<String> { sets[id] ?? [] }

    /// The client's name for an object written `Entity/t7` (a temporary ID's text, as a JSON
    /// encoding of pending changes writes it); nil for any other text.
    func nameForDescription(_ text: String) -> String? {
        guard let slash = text.firstIndex(of: "/"), text[text.index(after: slash)...].first == "t" else { return nil }
        return refs.first(where: { $0.key.description == text })?.value ?? "\(text[..<slash])/new"
    }

    func name(_ id: ManagedObjectID) -> String {
        if let ref = refs[id] { return ref }
        return id.isTemporaryID ? "\(id.entityName)/new" : id.description
    }
}
