import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite
@testable import ManagedStorePostgreSQL
import ManagedStoreTestSupport

/// What lightweight migration refuses, and that a refused or failed migration leaves the store
/// file exactly as it was; the dry run; stores that do not record their model.
@Suite("Lightweight migration: refusals, failures and dry runs")
struct MigrationRefusalTests {
    typealias F = MigrationFixture

    /// Opening `store` with `model` throws `migrationNotInferable`; its reasons.
    func refusals(_ store: MigrationStore, _ model: ManagedObjectModel, sourceLocation: SourceLocation = #_sourceLocation) -> [String] {
        do {
            _ = try PersistentStoreCoordinator(model: model, store: store.description)
            Issue.record("the migration was not refused", sourceLocation: sourceLocation)
            return []
        } catch {
            guard case .migrationNotInferable(let reasons) = error else {
                Issue.record("another error: \(error)", sourceLocation: sourceLocation)
                return []
            }
            #expect("\(error)".contains(reasons[0]), sourceLocation: sourceLocation)
            return reasons
        }
    }

    /// The fixture's data, read with version 1: the store still works as it did.
    func expectVersion1Data(_ store: MigrationStore, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let container = try PersistentContainer(model: try F.model(), store: store.description)
        #expect(container.coordinator.appliedMigration.isEmpty, sourceLocation: sourceLocation)
        let context = container.newBackgroundContext()
        #expect(try F.objects(context, "Task", "priority == 3 AND title == \"Launch!\"").count == 1, sourceLocation: sourceLocation)
        #expect(try F.objects(context, "Task").count == 4, sourceLocation: sourceLocation)
        try F.expectIntact(container, sourceLocation: sourceLocation)
    }

    @Test("every change that cannot be inferred is named with its entity, property and why; the file is unchanged")
    func typeChangeRefused() throws {
        let store = try F.makeStore()
        defer { withExtendedLifetime(store) {} }
        let before = try store.snapshot()
        let v2 = try F.version2 { entities in
            entities = F.changing(entities, "Task") {
                $0.attributes[1] = AttributeDescription(name: "priority", type: .string)
                $0.attributes.append(AttributeDescription(name: "owner", type: .string, isOptional: false))
                $0.attributes[3].isOptional = false  // note: Land, Orbit and Drift have none
                $0.relationships[1].isToMany = false
            }
            // Person.name says it was Person.passport (a relationship), so the Person.passport
            // of this version is a new relationship, which Passport.owner cannot have as inverse.
            entities = F.changing(entities, "Person") { $0.attributes[0] = AttributeDescription(name: "name", type: .string, renamingIdentifier: "passport") }
        }
        let reasons = refusals(store, v2)
        #expect(reasons.contains("Task.priority: type changed from integer64 to string, which cannot be inferred"))
        #expect(reasons.contains("Task.owner: required attribute added without a default while Task has 4 objects"))
        #expect(reasons.contains("Task.note: now required without a default, while Task has 3 objects without a value"))
        #expect(reasons.contains("Task.tags: changed from to-many to to-one, which cannot be inferred"))
        #expect(reasons.contains("Person.name: was the relationship Person.passport, now an attribute, which cannot be inferred"))
        #expect(reasons.contains("Passport.owner: inverse Person.passport is a new relationship, not the old one of that name, which cannot be inferred"))
        #expect(reasons.count == 6, "\(reasons)")
        #expect(try store.snapshot() == before)
        try expectVersion1Data(store)
    }

    @Test("a relationship whose destination or inverse changed is refused")
    func relationshipChangesRefused() throws {
        let store = try F.makeStore()
        defer { withExtendedLifetime(store) {} }
        let v2 = try F.version2 { entities in
            // Task.project now points at Person (whose inverse is new); Tag.tasks' inverse is now a new relationship.
            entities = F.changing(entities, "Task") {
                $0.relationships[0] = RelationshipDescription(name: "project", destination: "Person", inverse: "work")
                $0.relationships[1].inverse = "tagged"
                $0.relationships.append(RelationshipDescription(name: "tags2", destination: "Tag", inverse: "tasks", isToMany: true))
            }
            entities = F.changing(entities, "Person") { $0.relationships.append(RelationshipDescription(name: "work", destination: "Task", inverse: "project", isToMany: true)) }
            entities = F.changing(entities, "Project") { $0.relationships = [] }
            entities = F.changing(entities, "Tag") {
                $0.relationships = [RelationshipDescription(name: "tasks", destination: "Task", inverse: "tags2", isToMany: true),
                                    RelationshipDescription(name: "tagged", destination: "Task", inverse: "tags", isToMany: true)]
            }
        }
        let reasons = refusals(store, v2)
        #expect(reasons.contains("Task.project: destination changed from Project to Person, which cannot be inferred"), "\(reasons)")
        #expect(reasons.contains("Task.tags: inverse changed from Tag.tasks to Tag.tagged, which cannot be inferred"), "\(reasons)")
    }

    @Test("a to-one made required while objects lack it, or added required while objects exist, is refused")
    func requiredRelationshipsRefused() throws {
        let store = try F.makeStore()
        defer { withExtendedLifetime(store) {} }
        let v2 = try F.version2 { entities in
            entities = F.changing(entities, "Task") { $0.relationships[0].isOptional = false }  // Drift has no project
            entities = F.changing(entities, "Tag") {
                $0.relationships.append(RelationshipDescription(name: "owner", destination: "Person", inverse: "tags", isOptional: false))
            }
            entities = F.changing(entities, "Person") {
                $0.relationships.append(RelationshipDescription(name: "tags", destination: "Tag", inverse: "owner", isToMany: true))
            }
        }
        #expect(refusals(store, v2) == ["Task.project: now required, while Task has 1 object without one",
                                        "Tag.owner: required relationship added while Tag has 2 objects"])
        // A one-to-one: counted on the side whose row stores the link (Passport.owner) and on the other.
        let v3 = try F.version2 { entities in
            entities = F.changing(entities, "Person") { $0.relationships[0].isOptional = false }
            entities = F.changing(entities, "Passport") { $0.relationships[0].isOptional = false }
        }
        #expect(refusals(store, v3) == ["Person.passport: now required, while Person has 1 object without one",
                                        "Passport.owner: now required, while Passport has 1 object without one"])
    }

    @Test("a uniqueness constraint the data breaks is refused, naming it and a shared value; the store opens with version 1 as before")
    func violatedConstraintRefused() throws {
        let store = try F.makeStore()
        defer { withExtendedLifetime(store) {} }
        let before = try store.snapshot()
        let v2 = try F.version2 { entities in
            entities = F.changing(entities, "Task") { $0.uniquenessConstraints = [["priority"]] }
        }
        #expect(refusals(store, v2) == ["Task: uniqueness constraint (priority) cannot be added: 2 objects share priority = 0"])
        #expect(try store.snapshot() == before)
        #expect {
            _ = try store.plan(for: v2)
        } throws: { error in
            (error as? StoreError) == .migrationNotInferable(["Task: uniqueness constraint (priority) cannot be added: 2 objects share priority = 0"])
        }
        try expectVersion1Data(store)
        // A constraint over a new attribute: every object gets its default, so they all share it.
        let v3 = try F.version2 { entities in
            entities = F.changing(entities, "Tag") {
                $0.attributes.append(AttributeDescription(name: "color", type: .string, defaultValue: .string("red")))
                $0.uniquenessConstraints = [["label", "color"], ["color"]]
            }
        }
        #expect(refusals(store, v3) == [#"Tag: uniqueness constraint (color) cannot be added: 2 objects share color = "red""#])
    }

    @Test("a migration that fails half way (a unique index the data breaks) leaves the file exactly as it was")
    func failureHalfWay() throws {
        let store = try F.makeStore()
        defer { withExtendedLifetime(store) {} }
        let before = try store.snapshot()
        let v1 = try F.model()
        let v2 = try F.version2 { entities in
            entities = F.changing(entities, "Task") {
                $0.name = "Job"
                $0.renamingIdentifier = "Task"
                $0.attributes[0].name = "name"
                $0.attributes[0].renamingIdentifier = "title"
                $0.attributes.append(AttributeDescription(name: "rank", type: .integer64, defaultValue: .integer(1)))
                $0.uniquenessConstraints = [["priority"]]
            }
            entities = F.changing(entities, "Project") { $0.relationships[0].destination = "Job" }
            entities = F.changing(entities, "Tag") { $0.relationships[0].destination = "Job" }
        }
        // Planned without reading the data (which would refuse it), so that the unique index
        // fails after the renames, the new column and its fill: the store's own transaction
        // must undo them all.
        let migration = try LightweightMigration(from: v1, to: v2, data: nil)
        #expect(migration.refusals.isEmpty)
        if let uri = store.postgresURI {
            // PostgreSQL's DDL is transactional: the runner's transaction undoes the renames too.
            let connection = try PGConnection(PostgresLocation(uri))
            _ = try connection.execute("BEGIN")
            #expect {
                try PGSchemaChangeRunner(connection: connection, schema: PGSchema(model: v2)).run(migration.changes)
            } throws: { error in
                guard case let .engine(code, _, _)? = error as? StoreError else { return false }
                return code == PGSQLState.code("23505")  // unique_violation
            }
            _ = try connection.execute("ROLLBACK")
            #expect(try connection.execute("SELECT count(*) FROM pg_tables WHERE schemaname = current_schema() AND tablename IN ('Job', 'Task')").text(0, 0) == "1")
        } else {
            let connection = try SQLiteConnection(path: store.url.path)
            try connection.execute("PRAGMA journal_mode = WAL")
            #expect {
                try connection.inTransaction { try SchemaChangeRunner(connection: connection).run(migration.changes) }
            } throws: { error in
                guard case let .engine(code, message, _)? = error as? StoreError else { return false }
                return code == 2067 && message.contains("UNIQUE")  // SQLITE_CONSTRAINT_UNIQUE
            }
            #expect(try connection.scalarInt("SELECT count(*) FROM sqlite_master WHERE name IN ('Job', 'Task')") == 1)
        }
        #expect(try store.snapshot() == before)
        try expectVersion1Data(store)
    }

    @Test("the dry run lists the steps and writes nothing; opening runs exactly them; then nothing is left to do")
    func dryRun() throws {
        let store = try F.makeStore()
        defer { withExtendedLifetime(store) {} }
        let before = try store.snapshot()
        let v2 = try F.version2 { entities in
            entities = F.changing(entities, "Task") {
                $0.attributes.append(AttributeDescription(name: "done", type: .boolean, defaultValue: .boolean(false)))
                $0.indexes.append(["done", "priority"])
            }
        }
        let plan = try store.plan(for: v2)
        #expect(plan.description == "add attribute Task.done (boolean, optional, default false)\nadd index Task(done, priority)")
        #expect(!plan.isEmpty)
        #expect(try store.snapshot() == before)
        #expect(try store.plan(for: F.model()).isEmpty)
        let container = try PersistentContainer(model: v2, store: store.description)
        #expect(container.coordinator.appliedMigration == plan)
        #expect(try store.plan(for: v2).isEmpty)
        guard !store.isPostgres else {
            // A database without the store's tables: nothing to migrate, and nothing made.
            let empty = try PostgresTestDatabase.freshURI()
            #expect(throws: StoreError.notAManagedStore(path: PostgresLocation(empty).redacted)) {
                _ = try PersistentStoreCoordinator.migrationPlan(for: v2, postgres: empty)
            }
            return
        }
        #expect {
            _ = try PersistentStoreCoordinator.migrationPlan(for: v2, store: store.url.path + ".missing")
        } throws: { error in
            guard case .cannotOpen? = error as? StoreError else { return false }
            return !FileManager.default.fileExists(atPath: store.url.path + ".missing")
        }
    }

    @Test("a store that does not record its model is refused with another model, and learns it when opened with its own", .enabled(if: !PostgresTestDatabase.isActive, "a store file only: the PostgreSQL store always records its model, and `check` inspects it"))
    func storeWithoutModelJSON() throws {
        let store = try F.makeStore()
        defer { withExtendedLifetime(store) {} }
        do {
            let connection = try SQLiteConnection(path: store.url.path)
            try connection.execute(#"DELETE FROM "_metadata" WHERE "key" = 'model_json'"#)
        }
        let v2 = try F.version2 { entities in
            entities = F.changing(entities, "Tag") { $0.attributes.append(AttributeDescription(name: "color", type: .string)) }
        }
        #expect {
            _ = try PersistentStoreCoordinator(model: v2, store: store.description)
        } throws: { error in
            guard case .modelMismatch(_, _, _, .modelNotRecorded)? = error as? StoreError else { return false }
            return "\(error)".contains("does not record its model")
        }
        _ = try PersistentStoreCoordinator(model: F.model(), store: store.description)
        let container = try PersistentContainer(model: v2, store: store.description)
        #expect(container.coordinator.appliedMigration.steps == [
            .addAttribute(entity: "Tag", attribute: "color", type: .string, isOptional: true, defaultValue: .null)])
    }

    @Test("with shouldInferMappingModelAutomatically off, an inferable change is refused as a model mismatch")
    func migrationOff() throws {
        let store = try F.makeStore()
        defer { withExtendedLifetime(store) {} }
        let before = try store.snapshot()
        var description = store.description
        description.shouldInferMappingModelAutomatically = false
        let v2 = try F.version2 { _ in }
        #expect {
            _ = try PersistentStoreCoordinator(model: v2, store: description)
        } throws: { error in
            guard case .modelMismatch(_, _, _, .migrationOff)? = error as? StoreError else { return false }
            return true
        }
        #expect(try store.snapshot() == before)
    }

    @Test("inspecting a store reads its integrity, model match and history without writing", .enabled(if: !PostgresTestDatabase.isActive, "a store file only: the PostgreSQL store always records its model, and `check` inspects it"))
    func inspect() throws {
        let store = try F.makeStore()
        defer { withExtendedLifetime(store) {} }
        let before = try store.snapshot()
        let v2 = try F.version2 { entities in
            entities = F.changing(entities, "Task") { $0.attributes[1] = AttributeDescription(name: "priority", type: .string) }
        }
        let inspection = try PersistentStoreCoordinator.inspectStore(at: store.url.path, model: v2)
        #expect(inspection.isIntact)
        #expect(inspection.storeModelName == "Space")
        #expect(inspection.history == HistoryStatistics(transactions: 2, changes: 13, oldestToken: PersistentHistoryToken(rawValue: 1),
                                                         newestToken: PersistentHistoryToken(rawValue: 2), prunedThrough: nil))
        guard case .failure(.migrationNotInferable(let reasons)) = inspection.migration else {
            Issue.record("expected a refusal, got \(inspection.migration)")
            return
        }
        #expect(reasons == ["Task.priority: type changed from integer64 to string, which cannot be inferred"])
        #expect(try PersistentStoreCoordinator.inspectStore(at: store.url.path, model: F.model()).migration == .success(MigrationPlan(steps: [])))
        #expect(try store.snapshot() == before)
    }
}
