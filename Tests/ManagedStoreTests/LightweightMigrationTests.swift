import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite

/// Lightweight migration of stores holding objects, links and history: each change Core Data
/// infers, opened with the next model version, the data read back through the public API, the
/// store checked, its schema the one a new store of that version gets.
@Suite("Lightweight migration")
struct LightweightMigrationTests {
    typealias F = MigrationFixture

    /// Opens the fixture store with `model`, expecting the plan `steps` (as printed), checks the
    /// store and its schema, and returns the container.
    func migrate(_ store: MigrationStore, to model: ManagedObjectModel, expecting steps: [String],
                 sourceLocation: SourceLocation = #_sourceLocation) throws -> PersistentContainer {
        let container = try PersistentContainer(model: model, store: store.description)
        #expect(container.coordinator.appliedMigration.steps.map(\.description) == steps, sourceLocation: sourceLocation)
        try F.expectIntact(container, sourceLocation: sourceLocation)
        try F.expectSchema(store, as: model, sourceLocation: sourceLocation)
        return container
    }

    @Test("added attributes: an optional one reads nil, one with a default has it in every existing object")
    func addAttributes() throws {
        let store = try F.makeStore()
        defer { withExtendedLifetime(store) {} }
        let v2 = try F.version2 { entities in
            entities = F.changing(entities, "Task") {
                $0.attributes += [AttributeDescription(name: "summary", type: .string),
                                  AttributeDescription(name: "rank", type: .integer32, isOptional: false, defaultValue: .integer(7)),
                                  AttributeDescription(name: "budget", type: .decimal, defaultValue: .decimal(Decimal(string: "12.50")!))]
            }
        }
        let container = try migrate(store, to: v2, expecting: [
            "add attribute Task.summary (string, optional)",
            "add attribute Task.rank (integer32, required, default 7)",
            #"add attribute Task.budget (decimal, optional, default "12.5")"#,
        ])
        let context = container.newBackgroundContext()
        #expect(try F.objects(context, "Task", "summary == nil").count == 4)
        #expect(try F.objects(context, "Task", "rank == 7").count == 4)
        #expect(try F.objects(context, "Task", "budget == 12.5").count == 4)
        let land = try F.object(context, "Task", "title", "Land")
        #expect(context.performAndWait { land.objectIDs(forKey: "tags").count } == 2)
    }

    @Test("removed attributes go, indexed or not; every other value, link and history entry stays")
    func removeAttributes() throws {
        let store = try F.makeStore()
        defer { withExtendedLifetime(store) {} }
        let v2 = try F.version2 { entities in
            entities = F.changing(entities, "Task") {
                $0.attributes.removeAll { $0.name == "priority" || $0.name == "estimate" }
                $0.indexes = []
            }
        }
        let container = try migrate(store, to: v2, expecting: [
            "remove attribute Task.priority", "remove attribute Task.estimate", "drop index Task(priority)",
        ])
        let context = container.newBackgroundContext()
        let launch = try F.object(context, "Task", "title", "Launch!")
        #expect(context.performAndWait { launch.value("note", as: String.self) } == "go now")
        #expect(context.performAndWait { launch.object(forKey: "project")?.value("name", as: String.self) } == "Apollo")
        // The history forgets the removed property: a property of that name added later must not inherit it.
        let update = try #require(try container.coordinator.history(after: .zero).last?.changes.first)
        #expect(update.updatedProperties == ["title", "note"])
    }

    @Test("a rename through renamingIdentifier keeps the values under the new name, in fetches, indexes and history")
    func renameAttribute() throws {
        let store = try F.makeStore()
        defer { withExtendedLifetime(store) {} }
        let v2 = try F.version2 { entities in
            entities = F.changing(entities, "Task") {
                $0.attributes[0].name = "name"
                $0.attributes[0].renamingIdentifier = "title"
                $0.attributes[1].name = "level"
                $0.attributes[1].renamingIdentifier = "priority"
                $0.indexes = [["level"]]
            }
        }
        let container = try migrate(store, to: v2, expecting: [
            "rename attribute Task.title -> Task.name", "rename attribute Task.priority -> Task.level",
        ])
        let context = container.newBackgroundContext()
        #expect(try F.objects(context, "Task", "name == \"Land\"").count == 1)
        #expect(try F.objects(context, "Task", "level >= 1").count == 2)
        let update = try #require(try container.coordinator.history(after: .zero).last?.changes.first)
        #expect(update.updatedProperties == ["name", "level", "note"])
        #expect(update.previousValues["name"] == .attribute(.string("Launch")))
        // The next version, which keeps the identifier, matches: no migration, nothing to do.
        #expect(try store.plan(for: v2).isEmpty)
    }

    @Test("two attributes swap names through renamingIdentifier; stock sqlite3 finds the file sound")
    func swapAttributes() throws {
        let store = try F.makeStore()
        defer { withExtendedLifetime(store) {} }
        let v2 = try F.version2 { entities in
            entities = F.changing(entities, "Task") {
                $0.attributes[0] = AttributeDescription(name: "note", type: .string, isOptional: false, renamingIdentifier: "title")
                $0.attributes[3] = AttributeDescription(name: "title", type: .string, renamingIdentifier: "note")
            }
        }
        let container = try migrate(store, to: v2, expecting: [
            "rename attribute Task.title -> Task.note", "rename attribute Task.note -> Task.title",
        ])
        let context = container.newBackgroundContext()
        let launch = try F.object(context, "Task", "note", "Launch!")
        #expect(context.performAndWait { launch.value("title", as: String.self) } == "go now")
        if !store.isPostgres, StockSQLite.isInstalled {
            let check = try StockSQLite.run(store.url, "PRAGMA integrity_check")
            #expect(check.lines == ["ok"], "\(check.stderr)")
        }
    }

    @Test("optional to required takes the default where there was no value; required to optional needs nothing")
    func optionality() throws {
        let store = try F.makeStore()
        defer { withExtendedLifetime(store) {} }
        let v2 = try F.version2 { entities in
            entities = F.changing(entities, "Task") {
                $0.attributes[3].isOptional = false
                $0.attributes[3].defaultValue = .string("none")
            }
            entities = F.changing(entities, "Project") { $0.attributes[0].isOptional = true }
        }
        let container = try migrate(store, to: v2, expecting: [
            "make attribute Project.name optional",
            #"make attribute Task.note required (3 objects without a value take the default "none")"#,
            "change the rules of Task.note (default): nothing stored changes",
        ])
        let context = container.newBackgroundContext()
        #expect(try F.objects(context, "Task", "note == \"none\"").count == 3)
        #expect(try F.objects(context, "Task", "note == \"go now\"").count == 1)
    }

    @Test("validation rules alone change nothing stored; the new model is recorded")
    func rulesOnly() throws {
        let store = try F.makeStore()
        defer { withExtendedLifetime(store) {} }
        let before = try store.schema()
        let v2 = try F.version2 { entities in
            entities = F.changing(entities, "Task") { $0.attributes[1].maxValue = .integer(10) }
            entities = F.changing(entities, "Tag") { $0.relationships[0].deleteRule = .deny }
        }
        _ = try migrate(store, to: v2, expecting: [
            "change the rules of Task.priority (max): nothing stored changes",
            "change the rules of Tag.tasks (deleteRule): nothing stored changes",
        ])
        #expect(try store.schema() == before)
        #expect(try store.plan(for: v2).isEmpty)
        // Only the version number changed: the model is recorded all the same.
        let v3 = try F.model(v2.entities, version: 3)
        #expect(try store.plan(for: v3).steps == [.recordModel(name: "Space", version: 3)])
    }

    @Test("entities added and removed: the removed one's table, links and history go; the others keep theirs")
    func addAndRemoveEntities() throws {
        let store = try F.makeStore()
        defer { withExtendedLifetime(store) {} }
        let v2 = try F.version2 { entities in
            entities.removeAll { $0.name == "Passport" }
            entities = F.changing(entities, "Person") { $0.relationships = [] }
            entities = F.changing(entities, "Task") {
                $0.relationships.append(RelationshipDescription(name: "comments", destination: "Comment", inverse: "task", isToMany: true))
            }
            entities.append(EntityDescription(name: "Comment", attributes: [AttributeDescription(name: "text", type: .string)],
                                              relationships: [RelationshipDescription(name: "task", destination: "Task", inverse: "comments")]))
        }
        let historyBefore = try Self.historyCounts(store)
        let container = try migrate(store, to: v2, expecting: [
            "remove entity Passport and its 2 objects", "add entity Comment",
            "add relationship Task.comments (to-many) <-> Comment.task (to-one)",
            "remove relationship Person.passport <-> Passport.owner and its links",
        ])
        var expected = historyBefore
        expected["Passport"] = nil
        #expect(try Self.historyCounts(container) == expected)
        let context = container.newBackgroundContext()
        let land = try F.object(context, "Task", "title", "Land")
        try context.performAndWait {
            #expect(land.objectIDs(forKey: "comments").isEmpty)
            let comment = context.insertNewObject(forEntityName: "Comment")
            comment.setValue("steady", forKey: "text")
            comment.setObject(land, forKey: "task")
            try context.save()
        }
        #expect(try F.objects(context, "Task", "comments.@count == 1").count == 1)
    }

    /// Changes recorded in the history per entity name.
    static func historyCounts(_ container: PersistentContainer) throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for transaction in try container.coordinator.history(after: .zero) {
            for change in transaction.changes { counts[change.objectID.entityName, default: 0] += 1 }
        }
        return counts
    }

    static func historyCounts(_ store: MigrationStore) throws -> [String: Int] {
        try historyCounts(PersistentContainer(model: F.model(), store: store.description))
    }

    @Test("a renamed entity keeps its objects, links, history and key sequence; its join table changes sides")
    func renameEntity() throws {
        let store = try F.makeStore()
        defer { withExtendedLifetime(store) {} }
        let v2 = try F.version2 { entities in
            entities = F.changing(entities, "Task") { $0.name = "Job"; $0.renamingIdentifier = "Task" }
            entities = F.changing(entities, "Project") { $0.relationships[0].destination = "Job" }
            entities = F.changing(entities, "Tag") { $0.relationships[0].destination = "Job" }
        }
        let container = try migrate(store, to: v2, expecting: ["rename entity Task -> Job"])
        let context = container.newBackgroundContext()
        let land = try F.object(context, "Job", "title", "Land")
        try context.performAndWait {
            #expect(land.object(forKey: "project")?.value("name", as: String.self) == "Apollo")
            #expect(Set(land.objects(forKey: "tags").compactMap { $0.value("label", as: String.self) }) == ["urgent", "moon"])
            let job = context.insertNewObject(forEntityName: "Job")
            job.setValue("Splash", forKey: "title")
            try context.save()
            #expect(job.objectID.primaryKey == 5, "keys go on after the entity's old ones")
        }
        #expect(try F.objects(context, "Tag", "ANY tasks.title == \"Land\"").count == 2)
        #expect(try Self.historyCounts(container)["Job"] == 6)  // 4 inserts, 1 update, 1 insert now
        #expect(try Self.historyCounts(container)["Task"] == nil)
    }

    @Test("a renamed entity whose join table keeps its side takes the table under the new name")
    func renameJoinTable() throws {
        let store = try F.makeStore()
        defer { withExtendedLifetime(store) {} }
        let v2 = try F.version2 { entities in
            entities = F.changing(entities, "Tag") { $0.name = "Label"; $0.renamingIdentifier = "Tag" }
            entities = F.changing(entities, "Task") { $0.relationships[1].destination = "Label" }
        }
        let container = try migrate(store, to: v2, expecting: ["rename entity Tag -> Label"])
        #expect(try store.schema().contains { $0.hasPrefix("_join_Label_tasks.a ") })
        let context = container.newBackgroundContext()
        #expect(try F.objects(context, "Task", "ANY tags.label == \"urgent\"").count == 2)
        #expect(try F.objects(context, "Label", "tasks.@count == 2").count == 1)
    }

    @Test("a rename that moves which side stores a one-to-one's links moves them into the other table")
    func moveOneToOneLinks() throws {
        let store = try F.makeStore()
        defer { withExtendedLifetime(store) {} }
        let v2 = try F.version2 { entities in
            entities = F.changing(entities, "Passport") { $0.name = "Visa"; $0.renamingIdentifier = "Passport" }
            entities = F.changing(entities, "Person") { $0.relationships[0].destination = "Visa" }
        }
        let container = try migrate(store, to: v2, expecting: [
            "rename entity Passport -> Visa", "move the links of Person.passport into Person's table",
        ])
        let context = container.newBackgroundContext()
        let ada = try F.object(context, "Person", "name", "Ada")
        let p2 = try F.object(context, "Visa", "number", "P2")
        context.performAndWait {
            #expect(ada.object(forKey: "passport")?.value("number", as: String.self) == "P1")
            #expect(ada.object(forKey: "passport")?.object(forKey: "owner") === ada)
            #expect(p2.object(forKey: "owner") == nil)
        }
        #expect(try F.objects(context, "Person", "passport == nil").count == 1)
    }

    @Test("renamed relationships keep their links: a foreign key column, and a many-to-many")
    func renameRelationships() throws {
        let store = try F.makeStore()
        defer { withExtendedLifetime(store) {} }
        let v2 = try F.version2 { entities in
            entities = F.changing(entities, "Task") {
                $0.relationships[0] = RelationshipDescription(name: "list", destination: "Project", inverse: "items", renamingIdentifier: "project")
                $0.relationships[1] = RelationshipDescription(name: "labels", destination: "Tag", inverse: "tasks", isToMany: true, renamingIdentifier: "tags")
            }
            entities = F.changing(entities, "Project") {
                $0.relationships[0] = RelationshipDescription(name: "items", destination: "Task", inverse: "list", isToMany: true,
                                                              deleteRule: .cascade, renamingIdentifier: "tasks")
            }
            entities = F.changing(entities, "Tag") { $0.relationships[0].inverse = "labels" }
        }
        let container = try migrate(store, to: v2, expecting: [
            "rename relationship Project.tasks -> Project.items",
            "rename relationship Task.project -> Task.list",
            "rename relationship Task.tags -> Task.labels",
        ])
        let context = container.newBackgroundContext()
        let apollo = try F.object(context, "Project", "name", "Apollo")
        context.performAndWait { #expect(apollo.objectIDs(forKey: "items").count == 2) }
        #expect(try F.objects(context, "Task", "list.name == \"Gemini\"").count == 1)
        #expect(try F.objects(context, "Task", "ANY labels.label == \"moon\"").count == 1)
    }

    @Test("added relationships start empty and take links: to-one with to-many, many-to-many")
    func addRelationships() throws {
        let store = try F.makeStore()
        defer { withExtendedLifetime(store) {} }
        let v2 = try F.version2 { entities in
            entities = F.changing(entities, "Task") {
                $0.relationships.append(RelationshipDescription(name: "assignee", destination: "Person", inverse: "tasks"))
            }
            entities = F.changing(entities, "Project") {
                $0.relationships.append(RelationshipDescription(name: "members", destination: "Person", inverse: "projects", isToMany: true))
            }
            entities = F.changing(entities, "Person") {
                $0.relationships += [RelationshipDescription(name: "tasks", destination: "Task", inverse: "assignee", isToMany: true),
                                     RelationshipDescription(name: "projects", destination: "Project", inverse: "members", isToMany: true)]
            }
        }
        let container = try migrate(store, to: v2, expecting: [
            "add relationship Project.members (to-many) <-> Person.projects (to-many)",
            "add relationship Task.assignee (to-one) <-> Person.tasks (to-many)",
        ])
        let context = container.newBackgroundContext()
        #expect(try F.objects(context, "Task", "assignee == nil").count == 4)
        let ada = try F.object(context, "Person", "name", "Ada")
        let launch = try F.object(context, "Task", "title", "Launch!")
        let apollo = try F.object(context, "Project", "name", "Apollo")
        try context.performAndWait {
            launch.setObject(ada, forKey: "assignee")
            apollo.addObject(ada, toKey: "members")
            try context.save()
        }
        #expect(try F.objects(context, "Person", "ANY projects.name == \"Apollo\" AND tasks.@count == 1").count == 1)
    }

    @Test("a to-one made to-many (its inverse to-many) keeps its links, now in a link list, as Core Data infers it")
    func toOneMadeToMany() throws {
        let store = try F.makeStore()
        defer { withExtendedLifetime(store) {} }
        let v2 = try F.version2 { entities in
            entities = F.changing(entities, "Task") {
                $0.relationships[0] = RelationshipDescription(name: "projects", destination: "Project", inverse: "tasks", isToMany: true,
                                                              renamingIdentifier: "project")
            }
            entities = F.changing(entities, "Project") { $0.relationships[0].inverse = "projects" }
        }
        let container = try migrate(store, to: v2, expecting: [
            "rename relationship Task.project -> Task.projects",
            "make Task.projects to-many (<-> Project.tasks, to-many): its links move into a link list",
        ])
        let context = container.newBackgroundContext()
        let apollo = try F.object(context, "Project", "name", "Apollo")
        let gemini = try F.object(context, "Project", "name", "Gemini")
        let launch = try F.object(context, "Task", "title", "Launch!")
        try context.performAndWait {
            #expect(Set(apollo.objects(forKey: "tasks").map { $0.value("title", as: String.self) ?? "?" }) == ["Launch!", "Land"])
            #expect(launch.objectIDs(forKey: "projects") == [apollo.objectID])
            // A task may now be in two projects.
            launch.setObjects([apollo, gemini], forKey: "projects")
            try context.save()
        }
        #expect(try F.objects(context, "Project", "ANY tasks.title == \"Launch!\"").count == 2)
        let alone = try F.objects(context, "Task", "projects.@count == 0")
        context.performAndWait { #expect(alone.map { $0.value("title", as: String.self) } == ["Drift"]) }
    }

    @Test("a to-one made to-many whose inverse is ordered: the links move with the inverse's order")
    func toOneMadeToManyKeepsOrder() throws {
        func model(_ version: Int) throws -> ManagedObjectModel {
            try ManagedObjectModel(name: "Shelves", version: version, entities: [
                EntityDescription(name: "Shelf", attributes: [AttributeDescription(name: "label", type: .string)], relationships: [
                    RelationshipDescription(name: "books", destination: "Book", inverse: version == 1 ? "shelf" : "shelves", isToMany: true, isOrdered: true)]),
                EntityDescription(name: "Book", attributes: [AttributeDescription(name: "title", type: .string)], relationships: [
                    version == 1 ? RelationshipDescription(name: "shelf", destination: "Shelf", inverse: "books")
                        : RelationshipDescription(name: "shelves", destination: "Shelf", inverse: "books", isToMany: true, renamingIdentifier: "shelf")]),
            ])
        }
        let store = try MigrationStore()
        defer { withExtendedLifetime(store) {} }
        let first = try PersistentContainer(model: try model(1), store: store.description)
        let shelf: ManagedObjectID = try first.viewContext.performAndWait {
            let context = first.viewContext
            let shelf = context.insertNewObject(forEntityName: "Shelf")
            let books = ["a", "b", "c", "d"].map { title in
                let book = context.insertNewObject(forEntityName: "Book")
                book.setValue(title, forKey: "title")
                return book
            }
            shelf.setObjects([books[2], books[0], books[3]], forKey: "books")  // c, a, d; b on no shelf
            try context.save()
            return shelf.objectID
        }
        let container = try migrate(store, to: try model(2), expecting: [
            "rename relationship Book.shelf -> Book.shelves",
            "make Book.shelves to-many (<-> Shelf.books, to-many): its links move into a link list",
        ])
        let context = container.newBackgroundContext()
        try context.performAndWait {
            #expect(try context.existingObject(with: shelf).objects(forKey: "books").map { $0.value("title", as: String.self) } == ["c", "a", "d"])
            let b = try F.object(context, "Book", "title", "b")
            #expect(b.objectIDs(forKey: "shelves").isEmpty)
        }
    }

    @Test("both sides of a many-to-many made ordered, then unordered again: the links stay, in key order until reordered")
    func manyToManyOrderChanges() throws {
        let store = try F.makeStore()
        defer { withExtendedLifetime(store) {} }
        let ordered = try F.version2 { entities in
            entities = F.changing(entities, "Task") { $0.relationships[1].isOrdered = true }
            entities = F.changing(entities, "Tag") { $0.relationships[0].isOrdered = true }
        }
        let container = try migrate(store, to: ordered, expecting: [
            "make Task.tags ordered: its members keep their key order until reordered",
            "make Tag.tasks ordered: its members keep their key order until reordered",
        ])
        let context = container.newBackgroundContext()
        let land = try F.object(context, "Task", "title", "Land")
        let urgent = try F.object(context, "Tag", "label", "urgent")
        try context.performAndWait {
            #expect(land.objects(forKey: "tags").map { $0.value("label", as: String.self) } == ["urgent", "moon"], "key order")
            land.setObjects(land.objects(forKey: "tags").reversed(), forKey: "tags")
            urgent.setObjects(urgent.objects(forKey: "tasks").reversed(), forKey: "tasks")
            try context.save()
        }
        let reader = container.newBackgroundContext()
        try reader.performAndWait { () throws in
            #expect(try reader.existingObject(with: land.objectID).objects(forKey: "tags").map { $0.value("label", as: String.self) } == ["moon", "urgent"])
            #expect(try reader.existingObject(with: urgent.objectID).objects(forKey: "tasks").map { $0.value("title", as: String.self) } == ["Land", "Launch!"])
        }
        // Back to version 1's relationships (as version 3).
        _ = try migrate(store, to: try F.model(F.entities(), version: 3), expecting: [
            "make Task.tags unordered: its order is dropped",
            "make Tag.tasks unordered: its order is dropped",
        ])
    }

    @Test("a removed relationship takes its links, not its objects")
    func removeRelationship() throws {
        let store = try F.makeStore()
        defer { withExtendedLifetime(store) {} }
        let v2 = try F.version2 { entities in
            entities = F.changing(entities, "Task") { $0.relationships.removeAll { $0.name == "tags" } }
            entities = F.changing(entities, "Tag") { $0.relationships = [] }
        }
        let container = try migrate(store, to: v2, expecting: ["remove relationship Task.tags <-> Tag.tasks and its links"])
        let context = container.newBackgroundContext()
        #expect(try F.objects(context, "Tag").count == 2)
        #expect(try F.objects(context, "Task").count == 4)
    }

    @Test("indexes and uniqueness constraints are added and dropped; a new constraint holds afterwards")
    func constraintsAndIndexes() throws {
        let store = try F.makeStore()
        defer { withExtendedLifetime(store) {} }
        let v2 = try F.version2 { entities in
            entities = F.changing(entities, "Task") {
                $0.indexes = [["title", "priority"]]
                $0.uniquenessConstraints = [["title"]]
            }
            entities = F.changing(entities, "Tag") { $0.uniquenessConstraints = [] }
        }
        let container = try migrate(store, to: v2, expecting: [
            "add uniqueness constraint Task(title)", "drop index Task(priority)", "add index Task(title, priority)",
            "drop uniqueness constraint Tag(label)",
        ])
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let tag = context.insertNewObject(forEntityName: "Tag")
            tag.setValue("moon", forKey: "label")
            try context.save()
            let task = context.insertNewObject(forEntityName: "Task")
            task.setValue("Land", forKey: "title")
            #expect {
                try context.save()
            } throws: { error in
                guard case let SaveError.conflict(_, constraints)? = error as? SaveError else { return false }
                return constraints.first?.constraint == ["title"]
            }
        }
    }
}
