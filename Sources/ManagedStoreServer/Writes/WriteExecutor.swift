import ManagedStore

/// Applies one write request on the write context, inside the write queue's group commit, and
/// builds its response. Any failure rolls the context back, so the next request starts clean
/// (its savepoint already undid the store side).
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
                let object = context.insertNewObject(forEntityName: entity)
                try apply(body, to: object, replace: false, refs: [:])
                try save(refs: [:])
                return objectResponse(201, object, headers: [("Location", "/v1/objects/\(entity)/\(object.objectID.primaryKey ?? 0)")])
            case let .update(id, body, baseVersion, replace):
                let object = try existing(id)
                let conflict = conflictIfStale(object, baseVersion: baseVersion, body: body, replace: replace)
                if let conflict { throw Failure(problem: Self.conflictProblem([conflict])) }
                try apply(body, to: object, replace: replace, refs: [:])
                try save(refs: [:])
                return objectResponse(200, object)
            case let .delete(id, baseVersion):
                let object = try existing(id)
                if let conflict = conflictIfStale(object, baseVersion: baseVersion, body: nil, replace: false) {
                    throw Failure(problem: Self.conflictProblem([conflict]))
                }
                context.delete(object)
                try save(refs: [:])
                return HTTPResponse(status: 204)
            case .transaction(let operations):
                return try transaction(operations)
            }
        } catch let failure as Failure {
            context.rollback()
            return failure.problem.response
        } catch {
            context.rollback()
            return Problem.internalError("\(error)").response
        }
    }

    // MARK: Transactions

    private func transaction(_ operations: [TransactionOperation]) throws -> HTTPResponse {
        var refs: [String: ManagedObject] = [:]
        var touched: [ManagedObject] = []
        var deleted: [ManagedObjectID] = []
        var conflicts: [JSONValue] = []
        func resolve(_ target: ObjectReference) throws -> ManagedObject {
            switch target {
            case .ref(let name):
                guard let object = refs[name] else { throw Failure(problem: .badRequest("unknown ref '\(name)'")) }
                return object
            case .id(let id):
                return try existing(id)
            }
        }
        for operation in operations {
            switch operation {
            case let .insert(entity, ref, body):
                let object = context.insertNewObject(forEntityName: entity)
                try apply(body, to: object, replace: false, refs: refs)
                if let ref { refs[ref] = object }
                touched.append(object)
            case let .update(target, baseVersion, body):
                let object = try resolve(target)
                if object.isInserted {
                    // Inserted earlier in this transaction: saved once, as version 1.
                    try apply(body, to: object, replace: false, refs: refs)
                } else {
                    if let conflict = conflictIfStale(object, baseVersion: baseVersion, body: body, replace: false) { conflicts.append(conflict) }
                    try apply(body, to: object, replace: false, refs: refs)
                }
                if !touched.contains(object) { touched.append(object) }
            case let .delete(target, baseVersion):
                let object = try resolve(target)
                if !object.isInserted, let conflict = conflictIfStale(object, baseVersion: baseVersion, body: nil, replace: false) {
                    conflicts.append(conflict)
                }
                if !object.isInserted { deleted.append(object.objectID) }
                context.delete(object)
                touched.removeAll { $0 === object }
            }
        }
        if !conflicts.isEmpty { throw Failure(problem: Self.conflictProblem(conflicts)) }
        try save(refs: refs)
        var ids: [(String, JSONValue)] = []
        for (ref, object) in refs.sorted(by: { $0.key < $1.key }) where !object.isDeleted {
            ids.append((ref, .string(object.objectID.description)))
        }
        var writer = JSONWriter(reservingCapacity: 1024)
        writer.writeRaw("{\"ids\":")
        writer.write(.object(ids))
        writer.writeRaw(",\"objects\":[")
        let encoder = ObjectJSONEncoder(layouts: layouts)
        var first = true
        for object in touched where !object.isDeleted {
            if !first { writer.writeRaw(",") }
            first = false
            encoder.encode(object, into: &writer)
        }
        for id in deleted {
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

    /// Sets the body's properties; with `replace`, every property the body leaves out goes back
    /// to its default (attributes) or to nothing (relationships).
    private func apply(_ body: ObjectBody, to object: ManagedObject, replace: Bool, refs: [String: ManagedObject]) throws {
        var errors: [ValidationError] = body.typeErrors.map {
            ValidationError(objectID: object.objectID, property: $0.property, code: .invalidType, message: $0.message)
        }
        func target(_ reference: ObjectReference, _ property: String) -> ManagedObject? {
            switch reference {
            case .ref(let name): return refs[name]
            case .id(let id):
                guard let found = try? context.existingObject(with: id), !found.isDeleted else {
                    errors.append(ValidationError(objectID: object.objectID, property: property, code: .invalidRelationship,
                                                  message: "\(id) does not exist"))
                    return nil
                }
                return found
            }
        }
        let model = context.coordinator.model
        let entity = model.entity(named: object.entityName)!
        if replace {
            let given = Set(body.propertyNames)
            for attribute in entity.attributes where !given.contains(attribute.name) {
                object.setAttributeValue(attribute.defaultValue, forKey: attribute.name)
            }
            for relationship in entity.relationships where !given.contains(relationship.name) {
                if relationship.isToMany { object.setObjects([], forKey: relationship.name) } else { object.setObject(nil, forKey: relationship.name) }
            }
        }
        for (name, value) in body.attributes { object.setAttributeValue(value, forKey: name) }
        for (name, reference) in body.toOne {
            if let reference {
                if let destination = target(reference, name) { object.setObject(destination, forKey: name) }
            } else {
                object.setObject(nil, forKey: name)
            }
        }
        for (name, references) in body.toMany {
            let destinations = references.compactMap { target($0, name) }
            if destinations.count == references.count { object.setObjects(destinations, forKey: name) }
        }
        if !errors.isEmpty { throw Failure(problem: .validation(errors, ids: describe)) }
    }

    private func save(refs: [String: ManagedObject]) throws {
        // `do throws(SaveError)`: a plain `catch let error as SaveError` here crashed the Swift 6.3.1 compiler.
        do throws(SaveError) { try context.save() } catch {
            let names = Dictionary(refs.map { ($0.value.objectID, $0.key) }, uniquingKeysWith: { a, _ in a })
            switch error {
            case .validation(let errors):
                throw Failure(problem: .validation(errors) { names[$0] ?? describe($0) })
            case let .conflict(merge, constraints):
                let conflicts = merge.map { conflict -> JSONValue in
                    .object([("kind", .string("optimistic-locking")), ("object", .string(conflict.objectID.description)),
                             ("oldVersion", .number(String(conflict.oldVersion))), ("newVersion", .number(String(conflict.newVersion))),
                             ("properties", .array(conflict.conflictingProperties.sorted().map(JSONValue.string))),
                             ("cachedSnapshot", Self.snapshot(conflict.cachedSnapshot)), ("persistedSnapshot", Self.snapshot(conflict.persistedSnapshot)),
                             ("objectSnapshot", Self.snapshot(conflict.objectSnapshot))])
                } + constraints.map { conflict -> JSONValue in
                    .object([("kind", .string("uniqueness")), ("entity", .string(conflict.entityName)),
                             ("constraint", .array(conflict.constraint.map(JSONValue.string))),
                             ("values", .object(conflict.values.sorted { $0.key < $1.key }.map { ($0.key, $0.value.jsonValue) })),
                             ("conflictingObjects", .array(conflict.conflictingObjects.map { .string($0.description) }))])
                }
                throw Failure(problem: Self.conflictProblem(conflicts))
            case .store(let storeError):
                throw Failure(problem: .unavailable("the store failed: \(storeError)"))
            }
        }
    }

    /// A temporary ID is not useful to a client: it reads "Task/new".
    private func describe(_ id: ManagedObjectID) -> String {
        id.isTemporaryID ? "\(id.entityName)/new" : id.description
    }

    /// The optimistic-locking conflict of a write based on version `baseVersion` of an object now
    /// at another version (error merge policy). Without persistent history the store cannot say
    /// which properties changed after the base version: `properties` lists those the request
    /// sets, and `cachedSnapshot` is null (the contract's "history no longer reaches B").
    private func conflictIfStale(_ object: ManagedObject, baseVersion: Int64?, body: ObjectBody?, replace: Bool) -> JSONValue? {
        guard let baseVersion, baseVersion != object.version else { return nil }
        let persisted = ObjectJSONEncoder(layouts: layouts).body(object)
        var wouldBe: JSONValue = .null
        if let body {
            // The object as the request would have left it, read without saving.
            var members = (try? JSONParser().parse(persisted))?.objectMembers ?? []
            for (name, value) in body.attributes {
                if let i = members.firstIndex(where: { $0.0 == name }) { members[i].1 = value.jsonValue }
            }
            for (name, target) in body.toOne {
                let text: JSONValue
                switch target {
                case .id(let id)?: text = .string(id.description)
                case .ref(let ref)?: text = .string(ref)
                case nil: text = .null
                }
                if let i = members.firstIndex(where: { $0.0 == name }) { members[i].1 = text }
            }
            wouldBe = .object(members)
        }
        return .object([
            ("kind", .string("optimistic-locking")), ("object", .string(object.objectID.description)),
            ("oldVersion", .number(String(baseVersion))), ("newVersion", .number(String(object.version))),
            ("properties", .array((body?.propertyNames ?? []).sorted().map(JSONValue.string))),
            ("cachedSnapshot", .null),
            ("persistedSnapshot", (try? JSONParser().parse(persisted)) ?? .null),
            ("objectSnapshot", wouldBe),
        ])
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

    private func objectResponse(_ status: Int, _ object: ManagedObject, headers: [(name: String, value: String)] = []) -> HTTPResponse {
        var response = HTTPResponse.json(status, ObjectJSONEncoder(layouts: layouts).body(object), version: object.version)
        response.headers += headers
        return response
    }
}
