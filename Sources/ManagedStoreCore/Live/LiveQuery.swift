import Foundation

/// A live query: a fetch kept current as saves commit [NSFetchedResultsController's request].
/// Two live queries with the same request, limit and rendering share one window.
package struct LiveQuerySpec: Sendable {
    /// The fetch: entity, predicate, sort descriptors (the primary key ends every order).
    /// Its limit, offset and cursor are ignored: `limit` is the window's size.
    package var request: FetchRequest
    /// At most this many objects in the answer.
    package var limit: Int
    /// Names what `render` makes of an object, so that queries rendered alike share a window
    /// (the server's JSON with a set of fields, the library's IDs).
    package var renderingKey: String
    /// What a client holds of each member, made on the engine's read context: an `update` is
    /// sent when it changes.
    package var render: @Sendable (ManagedObject) throws -> [UInt8]
    /// The first sort key's value counts as rendered: a controller's section names come from it,
    /// and it can change when only a related object did (a task whose project was renamed).
    /// Name it in `renderingKey` too.
    package var rendersFirstSortValue = false

    package init(request: FetchRequest, limit: Int, renderingKey: String, render: @escaping @Sendable (ManagedObject) throws -> [UInt8]) {
        self.request = request
        self.limit = limit
        self.renderingKey = renderingKey
        self.render = render
    }

    var windowKey: LiveWindowKey {
        var plain = FetchRequest(entityName: request.entityName, predicate: request.predicate, sortDescriptors: request.sortDescriptors,
                                 includesPendingChanges: false)
        plain.includesSubentities = request.includesSubentities
        return LiveWindowKey(request: plain, limit: limit, renderingKey: renderingKey)
    }
}

struct LiveWindowKey: Hashable {
    let request: FetchRequest
    let limit: Int
    let renderingKey: String
}

/// One object of a live answer: its ID, the values it sorts by, and what the client holds of it.
/// Immutable, and shared between the answers of a window that it belongs to unchanged.
package final class LiveMember: Sendable {
    package let id: ManagedObjectID
    /// The sort keys' values as stored (a keyset cursor after this member is made of them).
    let sortValues: [AttributeValue]
    /// The same, folded as each sort asks ([c], [d]): what members are compared by.
    let sortKeys: [PredicateValue]
    /// The rendering (`LiveQuerySpec.render`).
    package let payload: [UInt8]

    init(id: ManagedObjectID, sortValues: [AttributeValue], sortKeys: [PredicateValue], payload: [UInt8]) {
        self.id = id
        self.sortValues = sortValues
        self.sortKeys = sortKeys
        self.payload = payload
    }
}

/// What a subscriber of a live query is told, in order.
package enum LiveEvent: Sendable {
    /// The whole answer at `token`; `isReset` when it replaces an answer the subscriber held
    /// (a resume that could not be answered as a diff).
    case snapshot(token: PersistentHistoryToken, members: [LiveMember], more: Bool, isReset: Bool)
    /// What turns the answer at `from` into the answer at `to`.
    case diff(from: PersistentHistoryToken, to: PersistentHistoryToken, ops: [LiveOp], more: Bool)
    /// Saves up to `token` committed and left the answer as it was.
    case progress(token: PersistentHistoryToken)
    /// The query can no longer be answered (its fetch failed: a store error); the subscription ends.
    case failed(FetchError)
}
