import Foundation
import ManagedStore

/// What a fetch of a parent entity costs (`--inheritance-only`): the same objects stored as one
/// entity (`Flat`) and split evenly across the two sub-entities of an abstract `Item`, in two
/// stores side by side; each fetch runs on both, alternating, and the table gives the parent's
/// time over the single entity's. A parent's fetch runs one fetch per sub-entity and merges
/// them in the request's order (ManagedObjectContext+KindsFetch.swift), so its cost is the
/// second fetch and the merge.
enum InheritanceBenchmark {
    static func model() throws -> ManagedObjectModel {
        let attributes = [AttributeDescription(name: "title", type: .string, isOptional: false),
                          AttributeDescription(name: "priority", type: .integer64, defaultValue: .integer(0))]
        return try ManagedObjectModel(name: "Kinds", entities: [
            EntityDescription(name: "Flat", attributes: attributes, indexes: [["priority"]]),
            EntityDescription(name: "Item", attributes: attributes, indexes: [["priority"]], isAbstract: true),
            EntityDescription(name: "Note", parent: "Item"),
            EntityDescription(name: "Link", parent: "Item"),
        ])
    }

    static func run(directory: URL, _ workload: Workload) throws {
        let container = try PersistentContainer(model: try model(), store: .sqlite(directory.appendingPathComponent("kinds.sqlite"), durability: .normal))
        let writer = container.newBackgroundContext(name: "writer")
        step("importing \(grouped(workload.count)) objects twice: as Flat, and as Note and Link...")
        for start in stride(from: 0, to: workload.count, by: workload.batchSize) {
            try writer.performAndWait {
                for n in start..<min(start + workload.batchSize, workload.count) {
                    for entity in ["Flat", n % 2 == 0 ? "Note" : "Link"] {
                        let object = writer.insertNewObject(forEntityName: entity)
                        object.setValue("title \(n)", forKey: "title")
                        object.setValue(Int64(n % 100), forKey: "priority")
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
    }
}
