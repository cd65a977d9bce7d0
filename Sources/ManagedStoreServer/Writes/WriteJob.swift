import ManagedStore

/// A write, parsed and checked on the front, waiting for the write queue.
enum WriteOperation: Sendable {
    case insert(entity: String, body: ObjectBody)
    /// PATCH (`replace` false: the given properties) or PUT (`replace` true: all of them).
    case update(id: ManagedObjectID, body: ObjectBody, baseVersion: Int64?, replace: Bool)
    case delete(id: ManagedObjectID, baseVersion: Int64?)
    case transaction([TransactionOperation])
}

/// One operation of `POST /v1/transactions`.
enum TransactionOperation: Sendable {
    case insert(entity: String, ref: String?, body: ObjectBody)
    case update(target: ObjectReference, baseVersion: Int64?, body: ObjectBody)
    case delete(target: ObjectReference, baseVersion: Int64?)
}

struct WriteJob: Sendable {
    let operation: WriteOperation
    let deferred: DeferredResponse
}
