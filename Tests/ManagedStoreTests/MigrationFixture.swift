import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStorePostgreSQL
@testable import ManagedStoreSQLite
import ManagedStoreTestSupport

/// A store made with a first model version and filled with objects, links and history, closed,
/// for a migration test to open with the next version: what lightweight migration meets in use.
enum MigrationFixture {
    /// Version 1: projects with tasks (one-to-many), tasks with tags (many-to-many), people
    /// with passports (one-to-one), uniqueness constraints, an index.
    static func entities() -> [EntityDescription] {
        [
            EntityDescription(name: "Project", attributes: [
                AttributeDescription(name: "name", type: .string, isOptional: false),
                AttributeDescription(name: "archived", type: .boolean, defaultValue: .boolean(false)),
            ], relationships: [
                RelationshipDescription(name: "tasks", destination: "Task", inverse: "project", isToMany: true, deleteRule: .cascade),
            ], uniquenessConstraints: [["name"]]),
            EntityDescription(name: "Task", attributes: [
                AttributeDescription(name: "title", type: .string, isOptional: false),
                AttributeDescription(name: "priority", type: .integer64, defaultValue: .integer(0), minValue: .integer(0), maxValue: .integer(5)),
                AttributeDescription(name: "estimate", type: .double),
                AttributeDescription(name: "note", type: .string),
            ], relationships: [
                RelationshipDescription(name: "project", destination: "Project", inverse: "tasks"),
                RelationshipDescription(name: "tags", destination: "Tag", inverse: "tasks", isToMany: true),
            ], indexes: [["priority"]]),
            EntityDescription(name: "Tag", attributes: [AttributeDescription(name: "label", type: .string, isOptional: false)],
                              relationships: [RelationshipDescription(name: "tasks", destination: "Task", inverse: "tags", isToMany: true)],
                              uniquenessConstraints: [["label"]]),
            EntityDescription(name: "Person", attributes: [AttributeDescription(name: "name", type: .string)],
                              relationships: [RelationshipDescription(name: "passport", destination: "Passport", inverse: "owner")]),
            EntityDescription(name: "Passport", attributes: [AttributeDescription(name: "number", type: .string)],
                              relationships: [RelationshipDescription(name: "owner", destination: "Person", inverse: "passport")]),
        ]
    }

    static func model(_ entities: [EntityDescription] = entities(), version: Int = 1) throws -> ManagedObjectModel {
        try ManagedObjectModel(name: "Space", version: version, entities: entities)
    }

    /// `entities` with the entity `name` changed by `change`.
    static func changing(_ entities: [EntityDescription], _ name: String, _ change: (inout EntityDescription) -> Void) -> [EntityDescription] {
        entities.map { entity in
            guard entity.name == name else { return entity }
            var changed = entity
            change(&changed)
            return changed
        }
    }

    /// Version 1 with `changes` made to it, as version 2.
    static func version2(_ changes: (inout [EntityDescription]) -> Void) throws -> ManagedObjectModel {
        var entities = entities()
        changes(&entities)
        return try model(entities, version: 2)
    }

    /// A new store file made with version 1 and closed, holding: projects Apollo and Gemini;
    /// tasks Launch (Apollo, tagged urgent, priority 3 after an update that also changed its
    /// title and note), Land (Apollo, urgent and moon, no note), Orbit (Gemini, estimate 3.5)
    /// and Drift (no project); Ada with passport P1, Bob without one, passport P2 without owner.
    static func makeStore() throws -> MigrationStore {
        let store = try MigrationStore()
        let container = try PersistentContainer(model: try model(), store: store.description)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            func insert(_ entity: String, _ values: [String: AttributeValue]) -> ManagedObject {
                let object = context.insertNewObject(forEntityName: entity)
                for (key, value) in values { object.setAttributeValue(value, forKey: key) }
                return object
            }
            let apollo = insert("Project", ["name": .string("Apollo")])
            let gemini = insert("Project", ["name": .string("Gemini")])
            let urgent = insert("Tag", ["label": .string("urgent")])
            let moon = insert("Tag", ["label": .string("moon")])
            let launch = insert("Task", ["title": .string("Launch"), "priority": .integer(2), "note": .string("go")])
            launch.setObject(apollo, forKey: "project")
            launch.setObjects([urgent], forKey: "tags")
            let land = insert("Task", ["title": .string("Land"), "priority": .integer(1)])
            land.setObject(apollo, forKey: "project")
            land.setObjects([urgent, moon], forKey: "tags")
            let orbit = insert("Task", ["title": .string("Orbit"), "estimate": .double(3.5)])
            orbit.setObject(gemini, forKey: "project")
            _ = insert("Task", ["title": .string("Drift")])
            let ada = insert("Person", ["name": .string("Ada")])
            _ = insert("Person", ["name": .string("Bob")])
            insert("Passport", ["number": .string("P1")]).setObject(ada, forKey: "owner")
            _ = insert("Passport", ["number": .string("P2")])
            try context.save()
            // An update, so the history holds values before under the properties' names.
            launch.setValue("Launch!", forKey: "title")
            launch.setValue("go now", forKey: "note")
            launch.setValue(Int64(3), forKey: "priority")
            try context.save()
        }
        return store
    }

    /// The objects of `entity`, by primary key.
    static func objects(_ context: ManagedObjectContext, _ entity: String, _ format: String? = nil) throws -> [ManagedObject] {
        try context.performAndWait { () throws -> [ManagedObject] in
            let predicate = try format.map { format throws(PredicateParseError) in try ObjectPredicate(format: format) }
            return try context.fetch(FetchRequest(entityName: entity, predicate: predicate))
        }
    }

    /// The object of `entity` whose `key` is `value`.
    static func object(_ context: ManagedObjectContext, _ entity: String, _ key: String, _ value: String) throws -> ManagedObject {
        let found = try objects(context, entity, "\(key) == \"\(value)\"")
        return try #require(found.count == 1 ? found[0] : nil, "one \(entity) with \(key) \(value), found \(found.count)")
    }

    /// Checks the store behind `container` as `checkIntegrity` does (SQLite's own check, links, keys).
    static func expectIntact(_ container: PersistentContainer, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(try container.coordinator.checkIntegrity() == [], sourceLocation: sourceLocation)
    }

    /// Checks that the migrated `store` has the schema a new store of `model` gets.
    static func expectSchema(_ store: MigrationStore, as model: ManagedObjectModel, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let fresh = try MigrationStore()
        _ = try PersistentStoreCoordinator(model: model, store: fresh.description)
        #expect(try store.schema() == fresh.schema(), sourceLocation: sourceLocation)
    }
}

/// The store a migration test works on: a file (the SQLite store), or on PostgreSQL runs
/// (`make test-postgres-store`) a schema of its own in the test database.
final class MigrationStore {
    let file: TemporaryStore
    let postgresURI: String?

    init() throws {
        file = TemporaryStore()
        postgresURI = PostgresTestDatabase.isActive ? try PostgresTestDatabase.freshURI() : nil
    }

    var isPostgres: Bool { postgresURI != nil }
    /// The SQLite file (for what only a file has).
    var url: URL { file.url }

    var description: StoreDescription {
        guard let postgresURI else { return .sqlite(url) }
        var description = StoreDescription.sqlite(url)
        description.location = .postgres(postgresURI)
        return description
    }

    /// What opening the store with `model` would migrate (`migrate --dry-run`).
    func plan(for model: ManagedObjectModel) throws -> MigrationPlan {
        if let postgresURI { return try PersistentStoreCoordinator.migrationPlan(for: model, postgres: postgresURI) }
        return try PersistentStoreCoordinator.migrationPlan(for: model, store: url.path)
    }

    /// The store's schema as lines: each table's columns with their types (in name order: a
    /// migration adds columns at the end), each index's definition (PostgreSQL: without the
    /// names it makes up itself, and with the names of uniqueness constraints).
    func schema() throws -> [String] {
        if let postgresURI { return try PostgresTestDatabase.schema(postgresURI) }
        return try Self.sqliteSchema(url)
    }

    /// Everything the store holds, to compare before and after something that must not change
    /// it: the file's bytes (no committed change waiting in its WAL), or every table's rows.
    func snapshot(sourceLocation: SourceLocation = #_sourceLocation) throws -> [String] {
        if let postgresURI { return try PostgresTestDatabase.contents(postgresURI) }
        let wal = (try? FileManager.default.attributesOfItem(atPath: url.path + "-wal"))?[.size] as? Int ?? 0
        #expect(wal == 0, "the store's WAL holds \(wal) bytes", sourceLocation: sourceLocation)
        return [try Data(contentsOf: url).base64EncodedString()]
    }

    private static func sqliteSchema(_ url: URL) throws -> [String] {
        let connection = try SQLiteConnection(path: url.path)
        var lines: [String] = []
        let tables = try connection.withStatement("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name") { s throws(StoreError) in
            var names: [String] = []
            while try s.step() { names.append(s.text(0)) }
            return names
        }
        for table in tables {
            try connection.withStatement("SELECT name, type, pk, \"notnull\" FROM pragma_table_info(?) ORDER BY name") { s throws(StoreError) in
                s.bindText(table, at: 1)
                while try s.step() { lines.append("\(table).\(s.text(0)) \(s.text(1)) pk=\(s.int64(2)) notnull=\(s.int64(3))") }
            }
        }
        try connection.withStatement("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name") { s throws(StoreError) in
            while try s.step() { lines.append("\(s.text(0)): \(s.text(1))") }
        }
        return lines
    }
}
