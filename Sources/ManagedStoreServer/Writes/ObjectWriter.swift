import Foundation
import ManagedStoreCore

/// Puts a request's values into the write context's objects and saves them, on the write
/// thread: the part of `WriteRequest.perform` that knows objects, references and names.
final class ObjectWriter {
    let context: ManagedObjectContext
    let names: ObjectNames
    let policy: MergePolicy

    init(context: ManagedObjectContext, names: ObjectNames, policy: MergePolicy) {
        self.context = context
        self.names = names
        self.policy = policy
    }

    /// A request-level failure: its problem is the answer.
    struct Failure: Error {
        let problem: Problem
    }

    /// The stored object `id`; 404 when there is none.
    func existing(_ id: ManagedObjectID) throws -> ManagedObject {
        do { return try context.existingObject(with: id) } catch {
            throw Failure(problem: .notFound("no object \(id)"))
        }
    }

    // MARK: Transactions

    func transaction(_ operations: [TransactionOperation]) throws -> TransactionAnswer {
        var refs: [String: ManagedObject] = [:]
        var applied: [(ObjectBody, ManagedObject, Bool)] = []
        // Every object an operation names, in order: each is answered with its final state
        // even when its values end as they were.
        var named: [(object: ManagedObject, temporaryID: ManagedObjectID?)] = []
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
                names.noteSets(object.objectID, body.propertyNames)
                named.append((object, object.objectID))
                try apply(body, to: object, replace: false, refs: refs, into: &applied)
            case let .update(target, baseVersion, body):
                let object = try resolve(target, operation: index)
                named.append((object, object.objectID.isTemporaryID ? object.objectID : nil))
                // An object inserted earlier in this transaction is saved once, as version 1:
                // it has no stored version to be based on.
                if !object.isInserted, let baseVersion { claim(baseVersion, for: object) }
                names.noteSets(object.objectID, body.propertyNames)
                try apply(body, to: object, replace: false, refs: refs, into: &applied)
            case let .delete(target, baseVersion):
                let object = try resolve(target, operation: index)
                named.append((object, object.objectID.isTemporaryID ? object.objectID : nil))
                if !object.isInserted, let baseVersion { claim(baseVersion, for: object) }
                context.delete(object)
            }
        }
        try reportErrors(of: applied)
        let temporaryIDs = refs.mapValues(\.objectID)
        let saved = try save()

        var ids: [(ref: String, id: ManagedObjectID)] = []
        for (ref, object) in refs.sorted(by: { $0.key < $1.key }) {
            // Folded into another object by a uniqueness resolution: that object's ID.
            if let temporary = temporaryIDs[ref], let survivor = saved.mergedInserts[temporary] {
                ids.append((ref, survivor))
            } else if !object.isDeleted && !object.objectID.isTemporaryID {
                ids.append((ref, object.objectID))
            }
        }
        // "Touched", as the contract says: every object whose stored state the transaction
        // changed (inserts, updates, objects changed through an inverse such as a project whose
        // tasks gained one, deletions with cascades), then every object an operation named
        // whose values ended as they were (an update undone by a later operation, a delete or
        // an update the merge policy kept from the store), each once, as a GET now answers it.
        var objects: [ObjectState] = []
        var listed = Set(saved.deleted)
        for id in saved.inserted + saved.updated where listed.insert(id).inserted {
            if let state = try storedState(id) { objects.append(state) }
        }
        for (object, temporaryID) in named {
            // An insert folded into an existing object by a uniqueness resolution is answered
            // as that object; an object inserted and deleted within the transaction was never stored.
            let id = temporaryID.flatMap { saved.mergedInserts[$0] } ?? object.objectID
            guard !id.isTemporaryID, listed.insert(id).inserted else { continue }
            if let state = try storedState(id) { objects.append(state) }
        }
        let conflicts = ConflictJSON(model: context.coordinator.model, names: names)
        // A transaction that wrote nothing answers the newest token: its answer shows the
        // store as the history stands at it.
        let token = try saved.token ?? context.coordinator.lastHistoryToken()
        return TransactionAnswer(ids: ids, objects: objects, deleted: saved.deleted, token: token,
                                 resolved: saved.resolved.map { conflicts.json($0, policy: policy) }, merge: report(saved))
    }

    /// Several operations may name the version they are based on for one object: the first
    /// that is not the stored version decides (the object conflicts once, with that version).
    private func claim(_ version: Int64, for object: ManagedObject) {
        if object.baseVersion == nil || object.baseVersion == object.version { object.baseVersion = version }
    }

    // MARK: Values

    /// Sets one body's values and reports every broken rule with the rest of the save's.
    func applyChecked(_ bodies: [(ObjectBody, ManagedObject, Bool)], refs: [String: ManagedObject]) throws {
        var applied: [(ObjectBody, ManagedObject, Bool)] = []
        for (body, object, replace) in bodies {
            try apply(body, to: object, replace: replace, refs: refs, into: &applied)
        }
        try reportErrors(of: applied)
    }

    /// Sets the body's properties; with `replace`, every property the body leaves out goes back
    /// to its default (attributes) or to nothing (relationships). A value that cannot be set
    /// (of the wrong kind, or naming an object that does not exist, is deleted or is of another
    /// entity) is left unset and remembered in `applied` with its error, to be reported with
    /// every other broken rule of the write.
    func apply(_ body: ObjectBody, to object: ManagedObject, replace: Bool, refs: [String: ManagedObject],
                       into applied: inout [(ObjectBody, ManagedObject, Bool)]) throws {
        var body = body
        let entity = object.entityDescription
        let names = self.names
        func refuse(_ property: String, _ error: ValidationError) {
            body.errors.append((property, .invalidRelationship, error.message(describing: names.name)))
        }
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
                guard context.coordinator.model.isKind(named: given.entityName, of: expected) else {
                    refuse(property, .wrongEntity(of: object.objectID, property, target: given, expected: expected))
                    return nil
                }
                found = try? context.existingObject(with: given)
            }
            guard let found, !found.isDeleted else {
                refuse(property, .invalidDestination(of: object.objectID, property, target: id, deleted: found != nil))
                return nil
            }
            guard context.coordinator.model.isKind(named: found.entityName, of: expected) else {
                refuse(property, .wrongEntity(of: object.objectID, property, target: id, expected: expected))
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
    /// those values' errors, and everything the save's validation finds in what was set. The
    /// one error left out is "missing" for a property whose value was refused: it is missing
    /// only because the refused value was not set. Any other rule a refused property breaks
    /// is about a value that was set (a later operation of the transaction set it too small,
    /// say), so it is listed.
    func reportErrors(of applied: [(ObjectBody, ManagedObject, Bool)]) throws {
        var reported: [(object: ManagedObjectID, property: String?, code: ValidationErrorCode, message: String)] = []
        var refused: Set<String> = []
        for (body, object, _) in applied {
            for error in body.errors {
                reported.append((object.objectID, error.property, error.code, error.message))
                refused.insert("\(object.objectID)\u{0}\(error.property)")
            }
        }
        guard !reported.isEmpty else { return }
        for error in context.validatePendingChanges()
        where error.code != .missingMandatoryProperty || !refused.contains("\(error.objectID)\u{0}\(error.property ?? "")") {
            reported.append((error.objectID, error.property, error.code, error.message(describing: names.name)))
        }
        throw Failure(problem: .validation(reported.map { (names.name($0.object), $0.property, $0.code.rawValue, $0.message) }))
    }

    // MARK: Saving

    /// Saves under the request's merge policy; a refusal is the request's problem.
    func save() throws -> SavedChanges {
        // `do throws(SaveError)`: a plain `catch let error as SaveError` here crashed the Swift 6.3.1 compiler.
        do throws(SaveError) { return try context.save(mergePolicy: policy) } catch {
            throw Failure(problem: problem(for: error))
        }
    }

    /// The history token a write answers (`History-Token`): its save's, or, when it saved
    /// nothing, the newest committed one (the store as it answers holds at that token).
    func token(of saved: SavedChanges) throws -> PersistentHistoryToken {
        try saved.token ?? context.coordinator.lastHistoryToken()
    }

    /// A refused save as the request's answer.
    func problem(for error: SaveError) -> Problem {
        switch error {
        case .validation(let errors):
            return .validation(errors.map { error in
                (names.name(error.objectID), error.property, error.code.rawValue, error.message(describing: names.name))
            })
        case let .conflict(merge, constraints):
            return ConflictJSON(model: context.coordinator.model, names: names).problem(merge, constraints)
        case .store(let storeError):
            // The store's own words (SQLite's message, the SQL) go to the log, not to the client.
            ServerLog.error("save failed in the store: \(storeError)")
            return .unavailable("the store could not save the change; nothing was written")
        case .idempotencyKeyReused:
            return .idempotencyKeyReused()
        case .idempotencyKeyInChildContext:
            // The server saves keyed writes on its write context, never a child: a bug here.
            ServerLog.error("a keyed save reached a child context")
            return .internalError("the write could not be recorded under its Idempotency-Key; nothing was written")
        }
    }

    /// The `Merge-Policy-Applied` and `Merge-Conflicts` headers of a save that resolved conflicts.
    func report(_ saved: SavedChanges) -> MergeReport? {
        guard !saved.resolved.isEmpty else { return nil }
        return MergeReport(policy: policy.name, properties: ConflictJSON(model: context.coordinator.model, names: names).header(saved.resolved))
    }

    // MARK: States

    /// An object's state as this context holds it (after a save: as stored).
    func state(of object: ManagedObject) throws -> ObjectState {
        let entity = object.entityDescription
        let relationships = entity.relationships.map { relationship -> [ManagedObjectID] in
            relationship.isToMany ? object.objectIDs(forKey: relationship.name) : object.objectID(forKey: relationship.name).map { [$0] } ?? []
        }
        return ObjectState(id: object.objectID, version: object.version, attributes: object.attributeValues, relationships: relationships)
    }

    /// The object `id` as the store holds it now; nil when it holds none.
    func storedState(_ id: ManagedObjectID) throws -> ObjectState? {
        try context.withStoredObject(id) { row in
            guard let entity = context.coordinator.model.entity(named: id.entityName) else { return nil }
            var relationships: [[ManagedObjectID]] = []
            for (index, relationship) in entity.relationships.enumerated() {
                if relationship.isToMany {
                    var ids: [ManagedObjectID] = []
                    try row.forEachDestination(ofToManyAt: index) { ids.append($0) }
                    relationships.append(ids)
                } else {
                    relationships.append(try row.destination(ofToOneAt: index).map { [$0] } ?? [])
                }
            }
            return ObjectState(id: id, version: row.version, attributes: entity.attributes.indices.map { row.value(ofAttributeAt: $0) },
                               relationships: relationships)
        } ?? nil
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

    func name(_ id: ManagedObjectID) -> String {
        if let ref = refs[id] { return ref }
        return id.isTemporaryID ? "\(id.entityName)/new" : id.description
    }
}
