import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore

/// Lightweight migration of models with inheritance: entities that gain a parent get its
/// properties (as new attributes, with their defaults), a new sub-entity is a new entity, and
/// a parent's new uniqueness constraint that would have to compare stored objects of several
/// sub-entities is refused with the reason. SQLite, and PostgreSQL on its runs.
@Suite("Inheritance in lightweight migration")
struct InheritanceMigrationTests {
    static func version1() throws -> ManagedObjectModel {
        try ManagedObjectModel(name: "World", entities: [
            EntityDescription(name: "Continent", attributes: [AttributeDescription(name: "name", type: .string, isOptional: false)]),
            EntityDescription(name: "Country", attributes: [AttributeDescription(name: "name", type: .string, isOptional: false),
                                                            AttributeDescription(name: "capital", type: .string)]),
        ])
    }

    /// Version 2: both under an abstract Region that holds `name` and a new `population`;
    /// `unique` adds a uniqueness constraint of Region on `name`; `islands` adds a sub-entity.
    /// `atlas` adds an Atlas whose `regions` are any Region: a relationship to the parent
    /// (many-to-many with `atlasesManyToMany`; the Atlas first in the model with `atlasFirst`).
    static func version2(unique: Bool = false, islands: Bool = false, atlas: Bool = false,
                         atlasFirst: Bool = false, atlasesManyToMany: Bool = false) throws -> ManagedObjectModel {
        var entities = [
            EntityDescription(name: "Region", attributes: [AttributeDescription(name: "name", type: .string, isOptional: false),
                                                           AttributeDescription(name: "population", type: .integer64, isOptional: false, defaultValue: .integer(0))],
                              relationships: atlas ? [RelationshipDescription(name: "atlas", destination: "Atlas", inverse: "regions", isToMany: atlasesManyToMany)] : [],
                              uniquenessConstraints: unique ? [["name"]] : [], isAbstract: true),
            EntityDescription(name: "Continent", parent: "Region"),
            EntityDescription(name: "Country", attributes: [AttributeDescription(name: "capital", type: .string)], parent: "Region"),
        ]
        if atlas {
            let atlasEntity = EntityDescription(name: "Atlas", attributes: [AttributeDescription(name: "title", type: .string)], relationships: [
                RelationshipDescription(name: "regions", destination: "Region", inverse: "atlas", isToMany: true)])
            if atlasFirst { entities.insert(atlasEntity, at: 0) } else { entities.append(atlasEntity) }
        }
        if islands { entities.append(EntityDescription(name: "Island", attributes: [AttributeDescription(name: "area", type: .double)], parent: "Country")) }
        return try ManagedObjectModel(name: "World", version: 2, entities: entities)
    }

    static func makeStore() throws -> MigrationStore {
        let store = try MigrationStore()
        let container = try PersistentContainer(model: try version1(), store: store.description)
        try container.viewContext.performAndWait {
            let context = container.viewContext
            for (entity, name) in [("Continent", "Europe"), ("Country", "France"), ("Country", "Chile")] {
                context.insertNewObject(forEntityName: entity).setValue(name, forKey: "name")
            }
            try context.save()
        }
        return store
    }

    @Test("entities that gain a parent keep their objects and get its new attribute's default; a new sub-entity is added; a fetch of the parent returns them all")
    func entitiesJoinAHierarchy() throws {
        let store = try Self.makeStore()
        defer { withExtendedLifetime(store) {} }
        let model = try Self.version2(islands: true)
        let plan = try store.plan(for: model)
        #expect(plan.steps.contains(.addEntity("Region")) && plan.steps.contains(.addEntity("Island")), "\(plan.steps)")
        let container = try PersistentContainer(model: model, store: store.description)
        try container.viewContext.performAndWait {
            let context = container.viewContext
            let island = context.insertNewObject(forEntityName: "Island")
            island.setValue("Malta", forKey: "name")
            try context.save()
            let regions = try context.fetch(FetchRequest(entityName: "Region", sortDescriptors: [ObjectSortDescriptor("name")]))
            #expect(regions.map { $0.value("name", as: String.self) } == ["Chile", "Europe", "France", "Malta"])
            #expect(regions.map(\.entity.name) == ["Country", "Continent", "Country", "Island"])
            #expect(regions.allSatisfy { $0.value("population", as: Int64.self) == 0 })
            #expect(try context.count(for: FetchRequest(entityName: "Country")) == 3)
        }
    }

    @Test("a parent's new uniqueness constraint compares its sub-entities' stored values with each other: a value two kinds share is refused, naming it; the store is unchanged")
    func spanningConstraintRefused() throws {
        let store = try Self.makeStore()  // Continent Europe; Countries France and Chile
        defer { withExtendedLifetime(store) {} }
        let version1 = try PersistentContainer(model: try Self.version1(), store: store.description)
        try version1.viewContext.performAndWait {
            version1.viewContext.insertNewObject(forEntityName: "Country").setValue("Europe", forKey: "name")
            try version1.viewContext.save()
        }
        try version1.coordinator.settle()  // the file holds everything: no WAL to compare
        let before = try store.snapshot()
        let model = try Self.version2(unique: true)
        do throws(StoreError) {
            _ = try PersistentStoreCoordinator(model: model, store: store.description)
            Issue.record("the migration was not refused")
        } catch {
            guard case .migrationNotInferable(let reasons) = error else { Issue.record("another error: \(error)"); return }
            #expect(reasons == ["Region: uniqueness constraint (name) cannot be added: 2 objects share name = \"Europe\""])
        }
        #expect(try store.snapshot() == before)
    }

    @Test("a parent's new uniqueness constraint over sub-entities that both hold distinct values is added, and holds across them")
    func spanningConstraintAdded() throws {
        let store = try Self.makeStore()
        defer { withExtendedLifetime(store) {} }
        let container = try PersistentContainer(model: try Self.version2(unique: true), store: store.description)
        #expect(container.coordinator.appliedMigration.steps.contains(.addUniquenessConstraint(entity: "Country", properties: ["name"])))
        try container.viewContext.performAndWait {
            let context = container.viewContext
            context.insertNewObject(forEntityName: "Country").setValue("Europe", forKey: "name")  // the continent's name
            #expect(throws: SaveError.self) { try context.save() }
            context.rollback()
            context.insertNewObject(forEntityName: "Country").setValue("Spain", forKey: "name")
            try context.save()
        }
        #expect(try container.coordinator.checkIntegrity().isEmpty)
    }

    @Test("the same constraint is added when only one sub-entity holds objects")
    func constraintOverOneHoldingKind() throws {
        let store = try MigrationStore()
        defer { withExtendedLifetime(store) {} }
        let first = try PersistentContainer(model: try Self.version1(), store: store.description)
        try first.viewContext.performAndWait {
            first.viewContext.insertNewObject(forEntityName: "Country").setValue("France", forKey: "name")
            try first.viewContext.save()
        }
        let container = try PersistentContainer(model: try Self.version2(unique: true), store: store.description)
        try container.viewContext.performAndWait {
            let context = container.viewContext
            context.insertNewObject(forEntityName: "Continent").setValue("France", forKey: "name")
            #expect(throws: SaveError.self) { try context.save() }
        }
    }

    @Test("a relationship to a parent whose sub-entities hold keys made apart (the same key twice) is refused, naming them; the store is unchanged")
    func keysMadeApartRefused() throws {
        let store = try Self.makeStore()  // Continent 1; Country 1 and 2: each entity had its own sequence
        defer { withExtendedLifetime(store) {} }
        let before = try store.snapshot()
        let model = try Self.version2(atlas: true)
        do throws(StoreError) {
            _ = try PersistentStoreCoordinator(model: model, store: store.description)
            Issue.record("the migration was not refused")
        } catch {
            guard case .migrationNotInferable(let reasons) = error else { Issue.record("another error: \(error)"); return }
            #expect(reasons == ["Atlas.regions: the objects of Region's sub-entities (Continent, Country) share 1 key, made apart "
                                + "before they shared one sequence: a relationship to Region could not tell them apart"])
        }
        #expect(try store.snapshot() == before)
        // Without the relationship to the parent, the same store joins the hierarchy.
        _ = try PersistentStoreCoordinator(model: try Self.version2(), store: store.description)
    }

    @Test("keys that do not collide migrate, and new objects of any kind take keys past all of them",
          arguments: [(false, false), (true, false), (false, true), (true, true)])
    func keysContinueAcrossTheHierarchy(atlasFirst: Bool, manyToMany: Bool) throws {
        let store = try MigrationStore()
        defer { withExtendedLifetime(store) {} }
        let first = try PersistentContainer(model: try Self.version1(), store: store.description)
        try first.viewContext.performAndWait {
            for name in ["France", "Chile"] { first.viewContext.insertNewObject(forEntityName: "Country").setValue(name, forKey: "name") }
            try first.viewContext.save()
        }
        let container = try PersistentContainer(model: try Self.version2(atlas: true, atlasFirst: atlasFirst, atlasesManyToMany: manyToMany),
                                                store: store.description)
        try container.viewContext.performAndWait {
            let context = container.viewContext
            let europe = context.insertNewObject(forEntityName: "Continent")
            europe.setValue("Europe", forKey: "name")
            let atlas = context.insertNewObject(forEntityName: "Atlas")
            let countries = try context.fetch(FetchRequest(entityName: "Country", sortDescriptors: [ObjectSortDescriptor("name")]))
            atlas.setObjects(countries + [europe], forKey: "regions")
            try context.save()
            #expect(europe.objectID.primaryKey == 3, "past the countries' keys 1 and 2: \(europe.objectID)")
        }
        let reader = container.newBackgroundContext(name: "reader")
        try reader.performAndWait {
            let atlas = try #require(try reader.fetch(FetchRequest(entityName: "Atlas")).first)
            #expect(Set(atlas.objects(forKey: "regions").map { "\($0.entityName) \($0.value("name", as: String.self) ?? "?")" })
                    == ["Country Chile", "Country France", "Continent Europe"])
        }
        #expect(try container.coordinator.checkIntegrity().isEmpty)
    }

    @Test("a relationship to a parent removed and added again: every kind's table loses the key and gets it back",
          arguments: [false, true])
    func relationshipToParentRemovedAndAdded(manyToMany: Bool) throws {
        let store = try MigrationStore()
        defer { withExtendedLifetime(store) {} }
        let withAtlas = try Self.version2(atlas: true, atlasesManyToMany: manyToMany)
        let first = try PersistentContainer(model: withAtlas, store: store.description)
        try first.viewContext.performAndWait {
            let context = first.viewContext
            let atlas = context.insertNewObject(forEntityName: "Atlas")
            let regions = [("Continent", "Europe"), ("Country", "France")].map { entity, name in
                let region = context.insertNewObject(forEntityName: entity)
                region.setValue(name, forKey: "name")
                return region
            }
            atlas.setObjects(regions, forKey: "regions")
            try context.save()
        }
        let without = try Self.version2(islands: true)
        let plan = try store.plan(for: without)
        #expect(plan.steps.contains { if case .removeRelationship(entity: "Atlas", relationship: "regions", _, _) = $0 { true } else { false } }
                || plan.steps.contains { if case .removeRelationship(entity: "Region", relationship: "atlas", _, _) = $0 { true } else { false } },
                "\(plan.steps)")
        let second = try PersistentContainer(model: without, store: store.description)
        #expect(try second.coordinator.checkIntegrity().isEmpty)
        // Back again: the keys' columns (or link list) are made anew, empty.
        let third = try PersistentContainer(model: try Self.version2(islands: true, atlas: true, atlasesManyToMany: manyToMany), store: store.description)
        try third.viewContext.performAndWait {
            let context = third.viewContext
            let regions = try context.fetch(FetchRequest(entityName: "Region"))
            #expect(regions.count == 2)
            #expect(regions.allSatisfy { manyToMany ? $0.objectIDs(forKey: "atlas").isEmpty : $0.objectID(forKey: "atlas") == nil })
            let atlas = context.insertNewObject(forEntityName: "Atlas")
            atlas.setObjects(regions, forKey: "regions")
            try context.save()
        }
        #expect(try third.coordinator.checkIntegrity().isEmpty)
    }
}
