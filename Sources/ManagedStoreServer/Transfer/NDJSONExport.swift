import Foundation
import ManagedStoreCore

/// `managedstore export`: every object of an entity as NDJSON, one object a line in the JSON
/// form of `GET /v1/objects/{Entity}/{pk}`, in primary-key order, from one snapshot of the
/// store (a consistent copy however long it takes), read a page at a time so memory stays flat.
/// What it writes, `managedstore import` (or an NDJSON POST) reads back: `_id` and `_version`
/// are ignored there.
public struct NDJSONExport {
    static let pageSize = 1000

    let coordinator: PersistentStoreCoordinator
    let entity: EntityDescription

    public init(coordinator: PersistentStoreCoordinator, entityName: String) throws {
        guard let entity = coordinator.model.entity(named: entityName) else {
            throw NDJSONFileImport.Failure(code: "unknown-entity", line: nil, committed: 0, problemJSON: "",
                                           message: "the model has no entity '\(entityName)' (its entities: \(coordinator.model.entities.map(\.name).joined(separator: ", ")))")
        }
        self.coordinator = coordinator
        self.entity = entity
    }

    /// Writes every object through `write` (a page of lines at a time); returns how many.
    public func run(write: ([UInt8]) throws -> Void, progress: (Int) -> Void = { _ in }) throws -> Int {
        let context = ManagedObjectContext(coordinator: coordinator, name: "export")
        let encoder = ObjectJSONEncoder(layouts: JSONLayouts(coordinator.model))
        var page = FetchRequest(entityName: entity.name, fetchLimit: Self.pageSize)
        page.relationshipKeyPathsForPrefetching = entity.relationships.filter(\.isToMany).map(\.name)
        return try context.performAndWait {
            try context.performInSnapshot {
                var written = 0
                while true {
                    let objects = try context.fetch(page)
                    guard let last = objects.last else { return written }
                    var writer = JSONWriter(reservingCapacity: objects.count * 256)
                    var embedded = 0
                    for object in objects {
                        try encoder.encode(object, into: &writer, embedded: &embedded)
                        writer.writeRaw("\n")
                    }
                    try write(writer.bytes)
                    written += objects.count
                    progress(written)
                    page.after = try context.cursor(after: last, for: page)
                    context.reset()  // a page at a time: what was written is forgotten
                }
            }
        }
    }
}
