import Foundation
import ManagedStore

/// What a fetch of a parent entity costs (`--inheritance-only`): the same objects stored as one
/// entity (`Flat`) and split evenly across the two sub-entities of an abstract `Item`, in two
/// stores side by side; each fetch runs on both, alternating, and the table gives the parent's
/// time over the single entity's. A parent's fetch runs one fetch per sub-entity and merges
/// them in the request's order (ManagedObjectContext+KindsFetch.swift), so its cost is the
/// second fetch and the merge.
///
/// A second table does the same for relationships: a `Box` holds 50 objects through `flats`
/// (to the one entity) and through `items` (to the parent), and each object's one-way `next`
/// points at another of its entity (a to-one to the parent, for Note and Link). Reading a
/// relationship to a parent finds each destination's kind in the kinds' tables
/// (`DestinationIDs`); a filter through it reads a union of the kinds' tables.
enum InheritanceBenchmark {
    static func model() throws -> ManagedObjectModel {
        let attributes = [AttributeDescription(name: "title", type: .string, isOptional: false),
                          AttributeDescription(name: "priority", type: .integer64, defaultValue: .integer(0))]
        return try ManagedObjectModel(name: "Kinds", entities: [
            EntityDescription(name: "Flat", attributes: attributes, relationships: [
                RelationshipDescription(name: "box", destination: "Box", inverse: "flats"),
                RelationshipDescription(name: "next", destination: "Flat", inverse: nil),
            ], indexes: [["priority"]]),
            EntityDescription(name: "Item", attributes: attributes, relationships: [
                RelationshipDescription(name: "box", destination: "Box", inverse: "items"),
                RelationshipDescription(name: "next", destination: "Item", inverse: nil),
            ], indexes: [["priority"]], isAbstract: true),
            EntityDescription(name: "Note", parent: "Item"),
            EntityDescription(name: "Link", parent: "Item"),
            EntityDescription(name: "Box", attributes: [AttributeDescription(name: "number", type: .integer64)], relationships: [
                RelationshipDescription(name: "flats", destination: "Flat", inverse: "box", isToMany: true),
                RelationshipDescription(name: "items", destination: "Item", inverse: "box", isToMany: true),
            ], indexes: [["number"]]),
        ])
    }

    static let boxSize = 50

    static func run(directory: URL, _ workload: Workload) throws {
        let container = try PersistentContainer(model: try model(), store: .sqlite(directory.appendingPathComponent("kinds.sqlite"), durability: .normal))
        let writer = container.newBackgroundContext(name: "writer")
        step("importing \(grouped(workload.count)) objects twice: as Flat, and as Note and Link...")
        // Batches are whole boxes; each object's `next` is the one inserted before it in its box.
        let batch = max(boxSize, workload.batchSize / boxSize * boxSize)
        for start in stride(from: 0, to: workload.count, by: batch) {
            try writer.performAndWait {
                var box: ManagedObject?
                var previous: [String: ManagedObject] = [:]
                for n in start..<min(start + batch, workload.count) {
                    if n % boxSize == 0 {
                        box = writer.insertNewObject(forEntityName: "Box")
                        box!.setValue(Int64(n / boxSize), forKey: "number")
                        previous = [:]
                    }
                    for (side, entity) in [("flat", "Flat"), ("item", n % 2 == 0 ? "Note" : "Link")] {
                        let object = writer.insertNewObject(forEntityName: entity)
                        object.setValue("title \(n)", forKey: "title")
                        object.setValue(Int64(n % 100), forKey: "priority")
                        object.setObject(box, forKey: "box")
                        object.setObject(previous[side], forKey: "next")
                        previous[side] = object
                    }
                }
                try writer.save()
                writer.reset()
            }
        }
        let cases: [(String, (String) -> FetchRequest, Int)] = [
            ("50 by priority (indexed), priority >= 90", { FetchRequest(entityName: $0, predicate: .key("priority") >= Int64(90),
                                                                        sortDescriptors: [ObjectSortDescriptor("priority")], fetchLimit: 50) }, 200),
            ("50 by title, offset 1,000", { FetchRequest(entityName: $0, sortDescriptors: [ObjectSortDescriptor("title")], fetchLimit: 50, fetchOffset: 1000) }, 20),
            ("count, priority < 10", { FetchRequest(entityName: $0, predicate: .key("priority") < Int64(10)) }, 200),
            ("every object, by key", { FetchRequest(entityName: $0) }, 3),
        ]
        say()
        say("| Fetch (\(grouped(workload.count)) objects) | one entity | parent of two | parent / one |")
        say("|---|---:|---:|---:|")
        let context = container.newBackgroundContext(name: "reader")
        for (name, request, repeats) in cases {
            var best: [String: Double] = [:]
            for _ in 0..<5 {
                for entity in ["Flat", "Item"] {
                    let asked = request(entity)
                    let seconds = try context.performAndWait { () throws -> Double in
                        let (_, seconds) = try measure {
                            for _ in 0..<repeats {
                                if name.hasPrefix("count") { _ = try context.count(for: asked) } else { _ = try context.fetch(asked) }
                                context.reset()
                            }
                        }
                        return seconds / Double(repeats)
                    }
                    best[entity] = min(best[entity] ?? .infinity, seconds)
                }
            }
            let (one, parent) = (best["Flat"]!, best["Item"]!)
            say("| \(name) | \(fixed(one * 1000, 3)) ms | \(fixed(parent * 1000, 3)) ms | \(fixed(parent / one)) |")
        }
        try relationships(context, boxes: workload.count / boxSize)
    }

    /// The same reads through a relationship to the one entity and to the parent.
    static func relationships(_ context: ManagedObjectContext, boxes: Int) throws {
        let middle = Int64(boxes / 2)
        let cases: [(String, (Bool) throws -> Void, Int)] = [
            ("a box's 50 destinations (a to-many fault)", { toParent in
                let box = try context.fetch(FetchRequest(entityName: "Box", predicate: .key("number") == middle)).first!
                _ = box.objectIDs(forKey: toParent ? "items" : "flats")
            }, 200),
            ("50 objects and their `next` (a to-one each)", { toParent in
                var request = FetchRequest(entityName: toParent ? "Note" : "Flat", predicate: .key("priority") == Int64(42), fetchLimit: 50)
                request.returnsObjectsAsFaults = false
                for object in try context.fetch(request) { _ = object.objectID(forKey: "next") }
            }, 50),
            ("boxes holding an object titled 'title 4242' (a filter through it)", { toParent in
                let predicate = try ObjectPredicate(format: "ANY \(toParent ? "items" : "flats").title == 'title 4242'")
                _ = try context.fetch(FetchRequest(entityName: "Box", predicate: predicate))
            }, 5),
            ("10 boxes with their objects prefetched", { toParent in
                var request = FetchRequest(entityName: "Box", predicate: .key("number") < Int64(10))
                request.relationshipKeyPathsForPrefetching = [toParent ? "items" : "flats"]
                _ = try context.fetch(request)
            }, 20),
        ]
        say()
        say("| Relationship read (\(grouped(boxes)) boxes of \(boxSize)) | to one entity | to the parent | parent / one |")
        say("|---|---:|---:|---:|")
        for (name, read, repeats) in cases {
            var best: [Bool: Double] = [:]
            for _ in 0..<5 {
                for toParent in [false, true] {
                    let seconds = try context.performAndWait { () throws -> Double in
                        let (_, seconds) = try measure {
                            for _ in 0..<repeats {
                                try read(toParent)
                                context.reset()
                            }
                        }
                        return seconds / Double(repeats)
                    }
                    best[toParent] = min(best[toParent] ?? .infinity, seconds)
                }
            }
            let (one, parent) = (best[false]!, best[true]!)
            say("| \(name) | \(fixed(one * 1000, 3)) ms | \(fixed(parent * 1000, 3)) ms | \(fixed(parent / one)) |")
        }
    }
}
