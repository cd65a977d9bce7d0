import Foundation
import ManagedStoreCore
import ManagedStoreHTTP

/// The GET requests for objects, answered on the front thread that received them, each on a
/// read context borrowed from the store's reader pool (a WAL snapshot: reads never wait for
/// writes).
struct ReadHandlers {
    let coordinator: PersistentStoreCoordinator
    let configuration: ServiceConfiguration
    let layouts: JSONLayouts
    var model: ManagedObjectModel { coordinator.model }

    // Each read is parsed first (`…Query`), so that the router checks access on what the parser
    // made of `include` and `select`, then answered from the parsed query.

    /// The parameters of GET /v1/objects/{Entity}.
    func fetchQuery(_ request: HTTPRequest, entity: EntityDescription) throws -> FetchQuery {
        try FetchQuery(request, entity: entity, model: model, storeIdentifier: coordinator.storeIdentifier)
    }

    /// GET /v1/objects/{Entity}: a page of objects, with `next` and, asked for, `count`.
    func fetch(_ query: FetchQuery, entity: EntityDescription) throws -> HTTPResponse {
        try page(query, of: entity, scope: nil)
    }

    /// The parameters of GET /v1/objects/{Entity}/{pk}/{fetchedProperty}, over the property's
    /// destination.
    func fetchedPropertyQuery(_ request: HTTPRequest, destination: EntityDescription) throws -> FetchQuery {
        try FetchQuery(request, entity: destination, model: model, allowed: FetchQuery.parameters.subtracting(["fetch"]))
    }

    /// GET /v1/objects/{Entity}/{pk}/{fetchedProperty}: the fetched property's objects for the
    /// object `id`, as a page of its destination's objects (the fetch parameters apply too,
    /// `where` ANDed with the property's predicate); 404 when the object does not exist.
    func fetchedProperty(_ query: FetchQuery, of id: ManagedObjectID, _ property: FetchedPropertyDescription,
                         destination: EntityDescription) throws -> HTTPResponse {
        try page(query, of: destination) { context in
            let source: ManagedObject
            do { source = try context.existingObject(with: id) } catch { throw Problem.notFound("no object \(id)") }
            return try context.fetchRequest(forFetchedProperty: property.name, of: source).predicate
        }
    }

    /// A page of `entity`'s objects for `query`, its predicate ANDed with what `scope` gives,
    /// read in the borrowed context.
    private func page(_ query: FetchQuery, of entity: EntityDescription,
                      scope: ((ManagedObjectContext) throws -> ObjectPredicate?)?) throws -> HTTPResponse {
        try coordinator.withReadContext { context in
            var fetchRequest = query.fetchRequest(entity: entity, timeout: configuration.queryTimeout)
            if let scope, let scoped = try scope(context) {
                fetchRequest.predicate = fetchRequest.predicate.map { scoped && $0 } ?? scoped
            }
            let objects: [ManagedObject]
            let count: Int?
            let next: FetchCursor?
            do {
                var found = try context.fetch(fetchRequest)
                var page = fetchRequest
                page.fetchLimit = query.limit
                next = found.count > query.limit ? try context.cursor(after: found[query.limit - 1], for: page) : nil
                if found.count > query.limit { found.removeLast(found.count - query.limit) }
                objects = found
                if query.wantsCount {
                    var all = fetchRequest
                    all.fetchLimit = 0
                    all.fetchOffset = 0
                    all.after = nil
                    count = try context.count(for: all)
                } else {
                    count = nil
                }
            } catch let error as FetchError {
                throw Problem.fetch(error, entity: entity.name)
            }
            var writer = JSONWriter(reservingCapacity: 256 + objects.count * 256)
            writer.writeRaw("{\"objects\":[")
            let encoder = ObjectJSONEncoder(layouts: layouts, fields: query.fields, include: query.include)
            var embedded = 0
            for (i, object) in objects.enumerated() {
                if i > 0 { writer.writeRaw(",") }
                try encoder.encode(object, into: &writer, embedded: &embedded)
            }
            writer.writeRaw("],\"next\":")
            if let next { writer.writeString(next.token) } else { writer.writeRaw("null") }
            if let count {
                writer.writeRaw(",\"count\":")
                writer.writeInteger(Int64(count))
            }
            writer.writeRaw("}")
            return .json(200, writer.bytes)
        }
    }

    private static let getOneParameters: Set<String> = ["fields", "include"]

    /// The parameters of GET /v1/objects/{Entity}/{pk}.
    func getOneQuery(_ request: HTTPRequest, entity: EntityDescription) throws -> FetchQuery {
        try FetchQuery(request, entity: entity, model: model, allowed: Self.getOneParameters)
    }

    /// GET /v1/objects/{Entity}/{pk}: one object with its ETag.
    func getOne(_ query: FetchQuery, id: ManagedObjectID) throws -> HTTPResponse {
        let encoder = ObjectJSONEncoder(layouts: layouts, fields: query.fields, include: query.include)
        let found: ([UInt8], Int64)?
        if encoder.include.children.isEmpty {
            // Straight from the stored row: no managed object to build, register and reset.
            found = try coordinator.withReadContext(readingOnly: id) { context in
                try context.withStoredObject(id) { row in (try encoder.body(row), row.version) }
            }
        } else {
            found = try coordinator.withReadContext { context in
                try context.existingObjectIfStored(with: id).map { (try encoder.body($0), $0.version) }
            }
        }
        guard let (body, version) = found else { throw Problem.notFound("no object \(id)") }
        return .json(200, body, version: version)
    }
}

extension ManagedObjectContext {
    /// The object `id`, or nil when the store has none; other failures (a store error) throw,
    /// so that they answer 500 instead of passing for a missing object.
    func existingObjectIfStored(with id: ManagedObjectID) throws -> ManagedObject? {
        do throws(ContextError) {
            return try existingObject(with: id)
        } catch {
            if case .objectNotFound = error { return nil }
            throw error
        }
    }
}
