import Foundation
import ManagedStoreCore

/// A write, parsed and checked on the front (`WriteRequestParser`), waiting for the write queue.
struct WriteRequest: Sendable {
    let operation: WriteOperation
    let mergePolicy: MergePolicy
    /// The `Author` header, recorded with the save in the history.
    let author: String?
}

enum WriteOperation: Sendable {
    case insert(entity: String, body: ObjectBody)
    /// PATCH (`replace` false: the given properties) or PUT (`replace` true: all of them).
    case update(id: ManagedObjectID, body: ObjectBody, baseVersion: Int64?, replace: Bool)
    case delete(id: ManagedObjectID, baseVersion: Int64?)
    case transaction([TransactionOperation])
    /// A JSON array, or one chunk of an NDJSON stream: `names` say how the answer's errors
    /// name each object (`item 3`, `line 17`).
    case batchInsert(entity: String, bodies: [ObjectBody], names: [String])
    case batchUpdate(entity: String, predicate: ObjectPredicate, values: [String: PropertyValue])
    case batchDelete(entity: String, predicate: ObjectPredicate)
}

/// One operation of `POST /v1/transactions`.
enum TransactionOperation: Sendable {
    case insert(entity: String, ref: String?, body: ObjectBody)
    case update(target: ObjectReference, baseVersion: Int64?, body: ObjectBody)
    case delete(target: ObjectReference, baseVersion: Int64?)
}

/// Where a relationship value or an operation points: a saved object, or an object inserted
/// earlier in the same transaction (its `ref`).
enum ObjectReference: Sendable, Hashable {
    case id(ManagedObjectID)
    case ref(String)

    /// The saved object named, when this is not a ref.
    var savedID: ManagedObjectID? {
        if case .id(let id) = self { return id }
        return nil
    }
}

/// An object's state as an answer shows it: read on the write thread, written as JSON on the front.
struct ObjectState: Sendable {
    let id: ManagedObjectID
    let version: Int64
    let attributes: [AttributeValue]
    /// Per relationship, in the entity's order: its destinations in key order (a to-one has
    /// one or none).
    let relationships: [[ManagedObjectID]]
}

/// What a write request came to, on the write thread: a problem, or what the answer shows.
enum WriteResult: Sendable {
    case problem(Problem)
    /// 201 for an insert, 200 otherwise, with the object; `location` for a new object.
    /// `token` (in every answer that wrote, or could have): the history token its save
    /// committed, or the newest one when it saved nothing (`History-Token`).
    case object(status: Int, ObjectState, location: String?, merge: MergeReport?, token: PersistentHistoryToken)
    /// 204: deleted.
    case deleted(merge: MergeReport?, token: PersistentHistoryToken)
    case transaction(TransactionAnswer)
    /// 200 `{"count": n}`, with `"ids"` for a batch insert: the keys of its objects (all of
    /// `entity`), in order.
    case batch(count: Int, entity: String, keys: [Int64]?, token: PersistentHistoryToken)
}

/// What a merge policy resolved for a request: the `Merge-Policy-Applied` and
/// `Merge-Conflicts` headers.
struct MergeReport: Sendable {
    let policy: String
    let properties: String
}

/// A transaction's answer, before it is written as JSON.
struct TransactionAnswer: Sendable {
    /// Each insert's ref and the ID of its object (the one it was folded into, after a
    /// uniqueness resolution).
    let ids: [(ref: String, id: ManagedObjectID)]
    /// Every object whose stored state changed, as the store holds it now.
    let objects: [ObjectState]
    let deleted: [ManagedObjectID]
    /// The save's history token, or the newest one when it wrote nothing.
    let token: PersistentHistoryToken
    /// The conflicts the merge policy resolved, as the contract writes them.
    let resolved: [JSONValue]
    let merge: MergeReport?
}

extension WriteRequest {
    /// Carries the request out on the write queue's context, inside its group commit. Any
    /// failure rolls the context back, so the next request starts clean (its savepoint already
    /// undid the store side).
    ///
    /// Nothing a client sends may reach one of the library's misuse traps (setting a
    /// relationship to an object of the wrong entity or to a deleted one, changing a deleted
    /// object): every such case is found here first and answered with a problem.
    func perform(in context: ManagedObjectContext) -> WriteResult {
        context.transactionAuthor = author
        defer { context.transactionAuthor = nil }
        let writer = ObjectWriter(context: context, names: ObjectNames(), policy: mergePolicy)
        do {
            switch operation {
            case let .insert(entity, body):
                let object = context.insertNewObject(forEntityName: entity)
                writer.names.noteSets(object.objectID, body.propertyNames)
                try writer.applyChecked([(body, object, false)], refs: [:])
                let saved = try writer.save()
                // Folded into an object that already held its unique values: that object, 200.
                if let survivorID = saved.mergedInserts[object.objectID] {
                    return .object(status: 200, try writer.state(of: context.existingObject(with: survivorID)), location: nil,
                                   merge: writer.report(saved), token: try writer.token(of: saved))
                }
                return .object(status: 201, try writer.state(of: object), location: "/v1/objects/\(entity)/\(object.objectID.primaryKey ?? 0)",
                               merge: writer.report(saved), token: try writer.token(of: saved))
            case let .update(id, body, baseVersion, replace):
                let object = try writer.existing(id)
                if let baseVersion { object.baseVersion = baseVersion }
                writer.names.noteSets(object.objectID, body.propertyNames)
                try writer.applyChecked([(body, object, replace)], refs: [:])
                let saved = try writer.save()
                return .object(status: 200, try writer.state(of: object), location: nil, merge: writer.report(saved), token: try writer.token(of: saved))
            case let .delete(id, baseVersion):
                let object = try writer.existing(id)
                if let baseVersion { object.baseVersion = baseVersion }
                context.delete(object)
                let saved = try writer.save()
                // A policy that kept the object (store-trump, rollback): 200 with it.
                if !object.isDeleted {
                    return .object(status: 200, try writer.state(of: object), location: nil, merge: writer.report(saved), token: try writer.token(of: saved))
                }
                return .deleted(merge: writer.report(saved), token: try writer.token(of: saved))
            case .transaction(let operations):
                return .transaction(try writer.transaction(operations))
            case let .batchInsert(entity, bodies, names):
                let (ids, saved) = try writer.batchInsert(entity, bodies, names: names)
                return .batch(count: ids.count, entity: entity, keys: ids.compactMap(\.primaryKey), token: try writer.token(of: saved))
            case let .batchUpdate(entity, predicate, values):
                let (count, saved) = try writer.batchUpdate(entity, predicate: predicate, values: values)
                return .batch(count: count, entity: entity, keys: nil, token: try writer.token(of: saved))
            case let .batchDelete(entity, predicate):
                let (count, saved) = try writer.batchDelete(entity, predicate: predicate)
                return .batch(count: count, entity: entity, keys: nil, token: try writer.token(of: saved))
            }
        } catch let failure as ObjectWriter.Failure {
            context.rollback()
            return .problem(failure.problem)
        } catch let problem as Problem {
            context.rollback()
            return .problem(problem)
        } catch {
            context.rollback()
            ServerLog.error("write failed unexpectedly: \(error)")
            return .problem(Problem.internalError("the write failed unexpectedly; nothing was written"))
        }
    }
}
