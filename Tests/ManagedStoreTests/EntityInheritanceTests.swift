import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore

/// Entity inheritance (`"parent"`, `"abstract"`; Xcode's `parentEntity`, `isAbstract`): a
/// sub-entity has its parent's properties, constraints and indexes; a fetch of a parent
/// returns the objects of every entity below it, each with its own entity, in the request's
/// order (and the same order page by page); a uniqueness constraint spans every kind of the
/// entity that declared it. Every store runs it.
@Suite("Entity inheritance")
struct EntityInheritanceTests {
    static let model: ManagedObjectModel = {
        do {
            return try ManagedObjectModel(name: "World", entities: [
                EntityDescription(name: "Region", attributes: [
                    AttributeDescription(name: "name", type: .string, isOptional: false),
                    AttributeDescription(name: "code", type: .integer16),
                    AttributeDescription(name: "population", type: .integer64, defaultValue: .integer(0)),
                ], uniquenessConstraints: [["code"]], indexes: [["name"]], isAbstract: true),
                EntityDescription(name: "Continent", attributes: [AttributeDescription(name: "countryCount", type: .integer64)],
                                  relationships: [RelationshipDescription(name: "countries", destination: "Country", inverse: "continent", isToMany: true)],
                                  parent: "Region"),
                EntityDescription(name: "Country", attributes: [AttributeDescription(name: "capital", type: .string)],
                                  relationships: [RelationshipDescription(name: "continent", destination: "Continent", inverse: "countries")],
                                  parent: "Region"),
                // A concrete parent, with a sub-entity: a sub-entity of a sub-entity.
                EntityDescription(name: "Territory", attributes: [AttributeDescription(name: "governedBy", type: .string)], parent: "Region"),
                EntityDescription(name: "Island", attributes: [AttributeDescription(name: "area", type: .double)], parent: "Territory"),
            ])
        } catch {
            fatalError("the inheritance test model is invalid: \(error)")
        }
    }()

    /// Saves regions of every kind; returns their IDs by name.
    @discardableResult
    static func seed(_ container: PersistentContainer, _ regions: [(entity: String, name: String, population: Int64)]) throws -> [String: ManagedObjectID] {
        let context = container.newBackgroundContext(name: "seed")
        return try context.performAndWait {
            let objects = regions.map { entity, name, population in
                let object = context.insertNewObject(forEntityName: entity)
                object.setValue(name, forKey: "name")
                object.setValue(population, forKey: "population")
                return (name, object)
            }
            try context.save()
            return Dictionary(uniqueKeysWithValues: objects.map { ($0, $1.objectID) })
        }
    }

    static let world: [(entity: String, name: String, population: Int64)] = [
        ("Continent", "Europe", 740), ("Country", "France", 68), ("Island", "Iceland", 1), ("Continent", "Asia", 4700),
        ("Country", "Chile", 19), ("Island", "Malta", 1), ("Territory", "Greenland", 0), ("Continent", "Africa", 1400),
    ]

    @Test("a sub-entity has its parent's properties first, constraints and indexes; both formats keep what was written")
    func modelShape() throws {
        let model = Self.model
        let island = try #require(model.entity(named: "Island"))
        #expect(island.attributes.map(\.name) == ["name", "code", "population", "governedBy", "area"])
        #expect(try #require(model.entity(named: "Country")).relationships.map(\.name) == ["continent"])
        #expect(island.uniquenessConstraints == [["code"]] && island.indexes == [["name"]])
        #expect(model.authoredEntities[4].attributes.map(\.name) == ["area"])
        #expect(model.schema.map(\.kinds) == [[1, 2, 3, 4], [1], [2], [3, 4], [4]])
        let json = try ManagedObjectModel(json: model.jsonValue)
        #expect(json.authoredEntities == model.authoredEntities && json.versionHash == model.versionHash)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("inheritance-\(UUID().uuidString)/World.xcdatamodel")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder.deletingLastPathComponent()) }
        try Data(try model.xcodeModelContents().utf8).write(to: folder.appendingPathComponent("contents"))
        let xcode = try ManagedObjectModel(contentsOf: folder)
        #expect(xcode.authoredEntities == model.authoredEntities && xcode.entities == model.entities)
    }

    @Test("a parent that is missing, a loop, a property declared again and an inverse on a sub-entity are refused, each named")
    func refusals() {
        func problems(_ entities: [EntityDescription]) -> [String] {
            do { _ = try ManagedObjectModel(name: "M", entities: entities); return [] } catch { return error.problems.map(\.description) }
        }
        #expect(problems([EntityDescription(name: "A", parent: "Nope")]) == ["A: unknown parent entity 'Nope'"])
        #expect(problems([EntityDescription(name: "A", parent: "B"), EntityDescription(name: "B", parent: "A")]).count == 2)
        let again = problems([EntityDescription(name: "A", attributes: [AttributeDescription(name: "x", type: .string)]),
                              EntityDescription(name: "B", attributes: [AttributeDescription(name: "x", type: .string)], parent: "A")])
        #expect(again == ["B.x: is also a property of parent entity A: a sub-entity cannot declare it again"])
        // A relationship to a parent entity is a relationship like any other
        // (RelationshipToParentTests); its inverse must be the parent's, not a sub-entity's.
        #expect(problems([
            EntityDescription(name: "A", relationships: [RelationshipDescription(name: "h", destination: "H", inverse: nil)]),
            EntityDescription(name: "H", isAbstract: true), EntityDescription(name: "K", parent: "H"),
        ]).isEmpty)
        let inverseOnSubentity = problems([
            EntityDescription(name: "A", relationships: [RelationshipDescription(name: "h", destination: "H", inverse: "a", isToMany: true)]),
            EntityDescription(name: "H", isAbstract: true),
            EntityDescription(name: "K", relationships: [RelationshipDescription(name: "a", destination: "A", inverse: "h")], parent: "H"),
        ])
        #expect(inverseOnSubentity.contains("A.h: inverse 'a' is not a relationship of H"), "\(inverseOnSubentity)")
    }

    @Test("a fetch of a parent returns every kind below it, each with its own entity, in the request's order")
    func fetchAcrossKinds() throws {
        let container = try Fixtures.container(model: Self.model)
        let ids = try Self.seed(container, Self.world)
        let context = container.newBackgroundContext(name: "read")
        try context.performAndWait {
            let byName = try context.fetch(FetchRequest(entityName: "Region", sortDescriptors: [ObjectSortDescriptor("name")]))
            #expect(byName.map { $0.value("name", as: String.self) } == Self.world.map(\.name).sorted())
            #expect(byName.map(\.objectID) == Self.world.map(\.name).sorted().map { ids[$0]! })
            #expect(byName.map(\.entity.name) == ["Continent", "Continent", "Country", "Continent", "Country", "Territory", "Island", "Island"])
            // A concrete parent returns its own objects and its sub-entities'.
            let territories = try context.fetch(FetchRequest(entityName: "Territory", predicate: try ObjectPredicate(format: "population < 40"),
                                                             sortDescriptors: [ObjectSortDescriptor("name", ascending: false)]))
            #expect(territories.map { $0.value("name", as: String.self) } == ["Malta", "Iceland", "Greenland"])
            var exact = FetchRequest(entityName: "Territory")
            exact.includesSubentities = false
            #expect(try context.count(for: exact) == 1)
            #expect(try context.count(for: FetchRequest(entityName: "Territory")) == 3)
            #expect(try context.count(for: FetchRequest(entityName: "Region", fetchLimit: 3, fetchOffset: 6)) == 2)
            // Without sort keys: by kind, then key.
            let plain = try context.fetchObjectIDs(FetchRequest(entityName: "Region"))
            #expect(plain.map(\.entityName) == ["Continent", "Continent", "Continent", "Country", "Country", "Territory", "Island", "Island"])
            let window = try context.fetch(FetchRequest(entityName: "Region", sortDescriptors: [ObjectSortDescriptor("population")],
                                                        fetchLimit: 3, fetchOffset: 2))
            #expect(window.map { $0.value("name", as: String.self) } == ["Malta", "Chile", "France"])
            // The request's timeout is the whole fetch's, not each kind's.
            var hurried = FetchRequest(entityName: "Region", sortDescriptors: [ObjectSortDescriptor("name")])
            hurried.timeout = .nanoseconds(1)
            #expect(throws: FetchError.timedOut(.nanoseconds(1))) { try context.fetch(hurried) }
        }
    }

    @Test("an asynchronous fetch of a parent answers what the plain fetch does, unsaved changes included")
    func asynchronousAcrossKinds() async throws {
        let container = try Fixtures.container(model: Self.model)
        try Self.seed(container, Self.world)
        let context = container.newBackgroundContext(name: "async")
        let request = FetchRequest(entityName: "Region", predicate: try ObjectPredicate(format: "population < 1000"),
                                   sortDescriptors: [ObjectSortDescriptor("population"), ObjectSortDescriptor("name")], fetchLimit: 5)
        let plain = try await context.perform {
            context.insertNewObject(forEntityName: "Island").setValue("Atlantis", forKey: "name")
            return try context.fetchObjectIDs(request)
        }
        let asynchronous = try await context.fetchObjectIDs(AsynchronousFetchRequest(request, pageSize: 2))
        #expect(asynchronous == plain && plain.count == 5 && plain.contains { $0.isTemporaryID })
    }

    @Test("pages of a parent, cursor after cursor, are the whole ordered list once, ties across kinds included")
    func cursorPages() throws {
        let container = try Fixtures.container(model: Self.model)
        // Equal populations in every kind: the order goes on by kind, then key.
        try Self.seed(container, Self.world + [("Continent", "Oceania", 1), ("Country", "Nauru", 1), ("Island", "Fiji", 1)])
        let context = container.newBackgroundContext(name: "read")
        try context.performAndWait {
            for sorts in [[ObjectSortDescriptor("population")], [ObjectSortDescriptor("population", ascending: false)], []] {
                let whole = try context.fetch(FetchRequest(entityName: "Region", sortDescriptors: sorts)).map(\.objectID)
                var request = FetchRequest(entityName: "Region", sortDescriptors: sorts, fetchLimit: 2)
                var paged: [ManagedObjectID] = []
                for _ in 0..<20 {
                    let page = try context.fetch(request)
                    paged += page.map(\.objectID)
                    guard page.count == 2 else { break }
                    request.after = try context.cursor(after: page.last!, for: request)
                }
                #expect(paged == whole, "sorted by \(sorts.map(\.keyPath))")
                #expect(whole.count == 11)
            }
            // A cursor of one kind's own order is refused by the hierarchy's, and back.
            var exact = FetchRequest(entityName: "Territory", fetchLimit: 1)
            exact.includesSubentities = false
            let first = try context.fetch(exact)
            var across = FetchRequest(entityName: "Territory")
            across.after = try context.cursor(after: first[0], for: exact)
            #expect(throws: FetchError.self) { try context.fetch(across) }
        }
    }

    @Test("a parent's fetch sees unsaved inserts, changes and deletes of every kind")
    func pendingChanges() throws {
        let container = try Fixtures.container(model: Self.model)
        let ids = try Self.seed(container, Self.world)
        let context = container.newBackgroundContext(name: "edit")
        try context.performAndWait {
            let atlantis = context.insertNewObject(forEntityName: "Island")
            atlantis.setValue("Atlantis", forKey: "name")
            atlantis.setValue(Int64(50), forKey: "population")
            context.delete(try context.existingObject(with: ids["Europe"]!))
            try context.existingObject(with: ids["Malta"]!).setValue(Int64(5000), forKey: "population")
            let big = try context.fetch(FetchRequest(entityName: "Region", predicate: try ObjectPredicate(format: "population >= 50"),
                                                     sortDescriptors: [ObjectSortDescriptor("population")]))
            #expect(big.map { $0.value("name", as: String.self) } == ["Atlantis", "France", "Africa", "Asia", "Malta"])
            #expect(big[0].objectID.isTemporaryID && big[0].entity.name == "Island")
        }
    }

    @Test("a uniqueness constraint of a parent spans its kinds: in one save and against stored objects")
    func uniquenessAcrossKinds() throws {
        let container = try Fixtures.container(model: Self.model)
        let context = container.newBackgroundContext(name: "edit")
        try context.performAndWait {
            func region(_ entity: String, _ name: String, code: Int64) -> ManagedObject {
                let object = context.insertNewObject(forEntityName: entity)
                object.setValue(name, forKey: "name")
                object.setValue(code, forKey: "code")
                return object
            }
            let europe = region("Continent", "Europe", code: 150)
            _ = region("Island", "Malta", code: 150)
            do throws(SaveError) {
                try context.save()
                Issue.record("two kinds with one code were saved")
            } catch {
                guard case let .conflict(_, constraints) = error else { Issue.record("expected a constraint conflict, got \(error)"); return }
                #expect(constraints.count == 1 && constraints[0].entityName == "Region" && constraints[0].constraint == ["code"])
                #expect(constraints[0].objects.count == 2)
            }
            context.rollback()
            _ = region("Continent", "Europe", code: 150)
            try context.save()
            _ = region("Country", "France", code: 150)
            do throws(SaveError) {
                try context.save()
                Issue.record("a country took a continent's code")
            } catch {
                guard case let .conflict(_, constraints) = error else { Issue.record("expected a constraint conflict, got \(error)"); return }
                #expect(constraints.first?.conflictingObjects.map(\.entityName) == ["Continent"])
            }
            _ = europe
        }
    }

    @Test("a merge policy folds an insert into a stored object of its own kind only: across kinds the uniqueness conflict stands")
    func mergePoliciesAcrossKinds() throws {
        let container = try Fixtures.container(model: Self.model)
        let context = container.newBackgroundContext(name: "edit")
        try context.performAndWait {
            let europe = context.insertNewObject(forEntityName: "Continent")
            europe.setValue("Europe", forKey: "name")
            europe.setValue(Int64(150), forKey: "code")
            try context.save()
            // The same kind: the insert becomes the stored Continent (an upsert).
            let again = context.insertNewObject(forEntityName: "Continent")
            again.setValue("Europa", forKey: "name")
            again.setValue(Int64(150), forKey: "code")
            _ = try context.save(mergePolicy: .objectTrump)
            #expect(try context.count(for: FetchRequest(entityName: "Continent")) == 1)
            #expect(try context.existingObject(with: europe.objectID).value("name", as: String.self) == "Europa")
            // Another kind: a Country cannot become the Continent; every policy leaves the 409.
            for policy in [MergePolicy.objectTrump, .overwrite, .storeTrump, .rollback] {
                let france = context.insertNewObject(forEntityName: "Country")
                france.setValue("France", forKey: "name")
                france.setValue(Int64(150), forKey: "code")
                do throws(SaveError) {
                    _ = try context.save(mergePolicy: policy)
                    Issue.record("\(policy): a Country was folded into a Continent")
                } catch {
                    guard case let .conflict(_, constraints) = error else { Issue.record("\(policy): \(error)"); continue }
                    #expect(constraints.first?.conflictingObjects == [europe.objectID], "\(policy)")
                }
                context.rollback()
            }
            #expect(try context.count(for: FetchRequest(entityName: "Region")) == 1)
        }
    }

    @Test("a conflict names a stored holder that this save changes but that keeps the value")
    func changedHolderStillHolds() throws {
        let container = try Fixtures.container(model: Self.model)
        let context = container.newBackgroundContext(name: "edit")
        try context.performAndWait {
            let europe = context.insertNewObject(forEntityName: "Continent")
            europe.setValue("Europe", forKey: "name")
            let france = context.insertNewObject(forEntityName: "Country")
            france.setValue("France", forKey: "name")
            france.setValue(Int64(250), forKey: "code")
            try context.save()
            // France changes (it joins Europe) but keeps its code, which a new Territory takes.
            france.setObject(europe, forKey: "continent")
            let territory = context.insertNewObject(forEntityName: "Territory")
            territory.setValue("Somewhere", forKey: "name")
            territory.setValue(Int64(250), forKey: "code")
            do throws(SaveError) {
                try context.save()
                Issue.record("two kinds with one code were saved")
            } catch {
                guard case let .conflict(_, constraints) = error else { Issue.record("\(error)"); return }
                #expect(constraints.count == 1 && constraints[0].conflictingObjects == [france.objectID])
                #expect(Set(constraints[0].objects) == [france.objectID, territory.objectID])
            }
        }
    }

    @Test("relationships between kinds, inherited attributes in predicates through them, and deletes")
    func relationshipsBetweenKinds() throws {
        let container = try Fixtures.container(model: Self.model)
        let context = container.newBackgroundContext(name: "edit")
        try context.performAndWait {
            let europe = context.insertNewObject(forEntityName: "Continent")
            europe.setValue("Europe", forKey: "name")
            for (entity, name) in [("Country", "France"), ("Country", "Spain")] {
                let object = context.insertNewObject(forEntityName: entity)
                object.setValue(name, forKey: "name")
                object.setObject(europe, forKey: "continent")
            }
            try context.save()
            let european = try context.fetch(FetchRequest(entityName: "Country", predicate: try ObjectPredicate(format: "continent.name == 'Europe'"),
                                                          sortDescriptors: [ObjectSortDescriptor("name")]))
            #expect(european.map { $0.value("name", as: String.self) } == ["France", "Spain"])
            #expect(europe.objectIDs(forKey: "countries").count == 2)
            context.delete(european[1])
            try context.save()
            #expect(try context.count(for: FetchRequest(entityName: "Region")) == 2)
            #expect(europe.objectIDs(forKey: "countries").count == 1)
        }
    }

    @Test("aggregates and dictionary results of a parent read every kind's saved objects; unsaved changes and abstract batch inserts are refused with a reason")
    func aggregatesAndRefusals() throws {
        let container = try Fixtures.container(model: Self.model)
        try Self.seed(container, Self.world)
        let context = container.newBackgroundContext(name: "read")
        try context.performAndWait {
            var request = AggregateRequest(entityName: "Region", properties: [.groupKey("population"), .count(as: "n"), .max("name", as: "last"),
                                                                               .sum("population", as: "total")])
            request.sortDescriptors = [ObjectSortDescriptor("population", ascending: false)]
            let groups = try context.aggregate(request)
            // The twin: the same numbers from the objects themselves.
            let objects = try context.fetch(FetchRequest(entityName: "Region"))
            let byPopulation = Dictionary(grouping: objects) { $0.value("population", as: Int64.self)! }
            #expect(groups.map { $0["population"] } == byPopulation.keys.sorted(by: >).map { .attribute(.integer($0)) })
            for group in groups {
                guard case .attribute(.integer(let population))? = group["population"], let members = byPopulation[population] else {
                    Issue.record("unexpected group \(group)")
                    continue
                }
                #expect(group["n"] == .attribute(.integer(Int64(members.count))))
                #expect(group["last"] == .attribute(.string(members.compactMap { $0.value("name", as: String.self) }.max()!)))
                #expect(group["total"] == .attribute(.integer(population * Int64(members.count))))
            }
            let small = try context.aggregate(AggregateRequest(entityName: "Territory", properties: [.count(as: "n")],
                                                               predicate: try ObjectPredicate(format: "population == 1")))
            #expect(small.first?["n"] == .attribute(.integer(2)))
            // Unsaved changes are not mixed in: refused until saved.
            context.insertNewObject(forEntityName: "Island").setValue("Atlantis", forKey: "name")
            #expect(throws: AggregateError.self) { try context.aggregate(request) }
            context.rollback()
            // Dictionary results: the same rows as each kind's own, merged in the request's order.
            let byName = [ObjectSortDescriptor("name")]
            let rows = try context.fetchDictionaries(FetchRequest(entityName: "Region", sortDescriptors: byName, propertiesToFetch: ["name", "population"]))
            var own: [[String: PropertyValue]] = []
            for kind in ["Continent", "Country", "Territory", "Island"] {
                var part = FetchRequest(entityName: kind, propertiesToFetch: ["name", "population"])
                part.includesSubentities = false
                own += try context.fetchDictionaries(part)
            }
            let name = { (row: [String: PropertyValue]) in row["name"]?.description ?? "" }
            #expect(rows == own.sorted { name($0) < name($1) } && rows.count == Self.world.count)
            context.insertNewObject(forEntityName: "Island").setValue("Atlantis", forKey: "name")
            #expect(throws: FetchError.self) { try context.fetchDictionaries(FetchRequest(entityName: "Region")) }
            context.rollback()
            #expect(throws: BatchError.self) {
                try context.execute(BatchInsertRequest(entityName: "Region", objects: [["name": .attribute(.string("x"))]]))
            }
            let one = try context.aggregate(AggregateRequest(entityName: "Island", properties: [.count()]))
            #expect(one.count == 1)
        }
    }

    @Test("twin: a parent's fetch equals its kinds fetched one by one, merged by the documented order, over random data, changes and windows")
    func twinOfPerKindFetches() throws {
        let container = try Fixtures.container(model: Self.model)
        var random = PredicateFuzzTests.SplitMix64(seed: 29)
        let kinds = ["Continent", "Country", "Territory", "Island"]
        let context = container.newBackgroundContext(name: "twin")
        try context.performAndWait {
            for round in 0..<3 {
                // Objects of every kind, with few distinct populations so ties across kinds are common.
                for n in 0..<25 {
                    let object = context.insertNewObject(forEntityName: random.pick(kinds))
                    object.setValue("r\(round)-\(n)-\(random.below(1000))", forKey: "name")
                    object.setValue(Int64(random.below(5)), forKey: "population")
                }
                try context.save()
                // Unsaved changes of every kind the fetches must see.
                let stored = try context.fetch(FetchRequest(entityName: "Region"))
                for object in stored where random.chance(10) { context.delete(object) }
                for object in stored where !object.isDeleted && random.chance(15) { object.setValue(Int64(random.below(5)), forKey: "population") }
                for n in 0..<3 {
                    let object = context.insertNewObject(forEntityName: random.pick(kinds))
                    object.setValue("new\(round)-\(n)", forKey: "name")
                    object.setValue(Int64(random.below(5)), forKey: "population")
                }
                for _ in 0..<40 {
                    let entity = random.pick(["Region", "Territory"])
                    let sorts = random.pick([[], [ObjectSortDescriptor("population")], [ObjectSortDescriptor("population", ascending: false)],
                                             [ObjectSortDescriptor("population"), ObjectSortDescriptor("name", ascending: false)]])
                    let predicate = try random.pick([nil, ObjectPredicate(format: "population >= 2"), ObjectPredicate(format: "name BEGINSWITH 'r1'")])
                    let (limit, offset) = (random.pick([0, 1, 3, 10]), random.pick([0, 0, 2, 7]))
                    let asked = FetchRequest(entityName: entity, predicate: predicate, sortDescriptors: sorts, fetchLimit: limit, fetchOffset: offset)
                    let merged = try context.fetch(asked).map(\.objectID)
                    // The twin: each kind on its own, every match, merged here.
                    let ownKinds = try #require(container.coordinator.model.resolvedEntity(named: entity)).kinds
                    var all: [(kind: Int, object: ManagedObject)] = []
                    for kind in ownKinds {
                        var part = FetchRequest(entityName: container.coordinator.model.schema[kind].name, predicate: predicate)
                        part.includesSubentities = false
                        all += try context.fetch(part).map { (kind, $0) }
                    }
                    all.sort { a, b in
                        for sort in sorts {
                            if sort.keyPath == "population" {
                                let (x, y) = (a.object.value("population", as: Int64.self)!, b.object.value("population", as: Int64.self)!)
                                if x != y { return sort.ascending ? x < y : x > y }
                            } else {
                                let (x, y) = (a.object.value("name", as: String.self)!, b.object.value("name", as: String.self)!)
                                if x != y { return sort.ascending ? Array(x.unicodeScalars.map(\.value)).lexicographicallyPrecedes(y.unicodeScalars.map(\.value))
                                                                   : Array(y.unicodeScalars.map(\.value)).lexicographicallyPrecedes(x.unicodeScalars.map(\.value)) }
                            }
                        }
                        if a.kind != b.kind { return a.kind < b.kind }
                        // Within a kind by key, unsaved objects last.
                        return [a.object.objectID, b.object.objectID].sortedByKey().first == a.object.objectID && a.object.objectID != b.object.objectID
                    }
                    let window = all.dropFirst(offset)
                    let expected = (limit > 0 ? Array(window.prefix(limit)) : Array(window)).map(\.object.objectID)
                    #expect(merged == expected, "\(entity) \(sorts.map(\.keyPath)) \(String(describing: predicate)) limit \(limit) offset \(offset)")
                    #expect(try context.count(for: asked) == expected.count)
                }
                try context.save()
            }
        }
    }
}
