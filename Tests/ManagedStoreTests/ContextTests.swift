import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite
import ManagedStoreTestSupport

@Suite("Contexts, objects and IDs")
struct ContextTests {
    @Test("an inserted object has a temporary ID until save, then a permanent one with version 1")
    func temporaryToPermanentIDs() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let task = context.insertNewObject(forEntityName: "Task")
            task.setValue("Write tests", forKey: "title")
            let temporary = task.objectID
            #expect(temporary.isTemporaryID)
            #expect(temporary.primaryKey == nil)
            #expect(task.isInserted && context.hasChanges)
            try context.save()
            #expect(!task.objectID.isTemporaryID)
            #expect(task.objectID.primaryKey == 1)
            #expect(task.version == 1)
            #expect(!task.isInserted && !context.hasChanges)
            // The old temporary ID still finds the same object in this context.
            #expect(context.registeredObject(for: temporary) === task)
        }
    }

    @Test("obtainPermanentIDs gives keys before save, and relationships follow the new IDs")
    func obtainPermanentIDs() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let project = context.insertNewObject(forEntityName: "Project")
            project.setValue("Apollo", forKey: "name")
            let task = context.insertNewObject(forEntityName: "Task")
            task.setValue("Launch", forKey: "title")
            task.setObject(project, forKey: "project")
            try context.obtainPermanentIDs(for: [project, task])
            #expect(!project.objectID.isTemporaryID && !task.objectID.isTemporaryID)
            #expect(task.objectID(forKey: "project") == project.objectID)
            #expect(project.objectIDs(forKey: "tasks") == [task.objectID])
            let permanent = task.objectID
            try context.save()
            #expect(task.objectID == permanent)
        }
        let reader = container.newBackgroundContext()
        try reader.performAndWait {
            let tasks = try reader.fetch(FetchRequest(entityName: "Task", predicate: .key("project.name") == "Apollo"))
            #expect(tasks.map { $0.value("title", as: String.self) } == ["Launch"])
        }
    }

    @Test("object ID URIs round-trip and are checked against the store")
    func uriRepresentation() throws {
        let container = try Fixtures.container()
        let (projectID, _) = try Fixtures.seedProject(container.viewContext, name: "P", taskTitles: [])
        let uri = projectID.uriRepresentation
        #expect(uri.absoluteString == "managedstore://\(container.coordinator.storeIdentifier.uuidString)/Project/p1")
        #expect(container.coordinator.managedObjectID(forURIRepresentation: uri) == projectID)
        #expect(ManagedObjectID(uriRepresentation: uri) == projectID)
        // Another store's UUID, an unknown entity, or garbage: not IDs of this store.
        let foreign = URL(string: "managedstore://\(UUID().uuidString)/Project/p1")!
        #expect(container.coordinator.managedObjectID(forURIRepresentation: foreign) == nil)
        #expect(container.coordinator.managedObjectID(forURIRepresentation: URL(string: "managedstore://\(container.coordinator.storeIdentifier.uuidString)/Nope/p1")!) == nil)
        #expect(ManagedObjectID(uriRepresentation: URL(string: "managedstore://x/Project/p1")!) == nil)
        #expect(ManagedObjectID(uriRepresentation: URL(string: "http://example.com/Project/p1")!) == nil)
        // Codable as the URI string.
        let data = try JSONEncoder().encode([projectID])
        #expect(try JSONDecoder().decode([ManagedObjectID].self, from: data) == [projectID])
        #expect(projectID.description == "Project/1")
    }

    @Test("one object per ID in a context (uniquing), a fault until a property is read")
    func uniquingAndFaults() throws {
        let container = try Fixtures.container()
        let (projectID, taskIDs) = try Fixtures.seedProject(container.viewContext, name: "P", taskTitles: ["a", "b"])
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let first = context.object(with: taskIDs[0])
            #expect(first.isFault)
            #expect(context.object(with: taskIDs[0]) === first)
            #expect(first.value("title", as: String.self) == "a")
            #expect(!first.isFault)
            // Fetching returns the same registered instance.
            let fetched = try context.fetch(FetchRequest(entityName: "Task", sortDescriptors: [ObjectSortDescriptor("title")]))
            #expect(fetched.first === first)
            #expect(fetched[1].isFault, "fetched objects start as faults")
            #expect(fetched[1].version == 1, "reading the version fires the fault")
            #expect(fetched[1].value("title", as: String.self) == "b")
            #expect(!fetched[1].isFault)
            // returnsObjectsAsFaults = false materializes at once.
            let eager = container.newBackgroundContext()
            try eager.performAndWait {
                let objects = try eager.fetch(FetchRequest(entityName: "Task", returnsObjectsAsFaults: false))
                #expect(objects.count == 2 && objects.allSatisfy { !$0.isFault })
            }
            // Relationships fault on their own.
            let project = context.object(with: projectID)
            #expect(project.hasFault(forRelationshipNamed: "tasks"))
            #expect(Set(project.objectIDs(forKey: "tasks")) == Set(taskIDs))
            #expect(!project.hasFault(forRelationshipNamed: "tasks"))
        }
    }

    @Test("with retainsRegisteredObjects off, saved objects nobody holds are released")
    func weakRegistration() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            context.retainsRegisteredObjects = false
            for i in 0..<100 {
                let tag = context.insertNewObject(forEntityName: "Tag")
                tag.setValue("t\(i)", forKey: "label")
            }
            try context.save()
            #expect(context.registeredObjects.isEmpty)
            context.retainsRegisteredObjects = true
            let kept = context.insertNewObject(forEntityName: "Tag")
            kept.setValue("kept", forKey: "label")
            try context.save()
            #expect(context.registeredObjects.count == 1)
        }
    }

    @Test("existingObject(with:) throws for an object the store does not have")
    func existingObjectThrows() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let missing = try #require(container.coordinator.managedObjectID(entityName: "Task", primaryKey: 99))
        context.performAndWait {
            #expect(throws: ContextError.objectNotFound(missing)) { try context.existingObject(with: missing) }
            // A fault of a missing object fires as inaccessible, empty values.
            let fault = context.object(with: missing)
            #expect(fault.value("title", as: String.self) == nil)
            #expect(fault.isInaccessible)
        }
    }

    @Test("setting a relationship keeps the inverse up to date in memory at once")
    func inverseMaintenance() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let apollo = context.insertNewObject(forEntityName: "Project")
            apollo.setValue("Apollo", forKey: "name")
            let gemini = context.insertNewObject(forEntityName: "Project")
            gemini.setValue("Gemini", forKey: "name")
            let task = context.insertNewObject(forEntityName: "Task")
            task.setValue("T", forKey: "title")
            task.setObject(apollo, forKey: "project")
            #expect(apollo.objects(forKey: "tasks") == [task])
            // Moving the task removes it from the old project's to-many.
            task.setObject(gemini, forKey: "project")
            #expect(apollo.objects(forKey: "tasks").isEmpty)
            #expect(gemini.objects(forKey: "tasks") == [task])
            // Setting from the to-many side sets the to-one.
            apollo.addObject(task, toKey: "tasks")
            #expect(task.object(forKey: "project") === apollo)
            #expect(gemini.count(forKey: "tasks") == 0)
            // Many-to-many, both ways.
            let tag = context.insertNewObject(forEntityName: "Tag")
            tag.setValue("x", forKey: "label")
            task.addObject(tag, toKey: "tags")
            #expect(tag.objects(forKey: "tasks") == [task])
            tag.removeObject(task, fromKey: "tasks")
            #expect(task.objects(forKey: "tags").isEmpty)
            task.addObject(tag, toKey: "tags")
            try context.save()
        }
        // The store agrees after the save, seen from a fresh context.
        let reader = container.newBackgroundContext()
        try reader.performAndWait {
            let task = try #require(try reader.fetch(FetchRequest(entityName: "Task")).first)
            #expect(task.object(forKey: "project")?.value("name", as: String.self) == "Apollo")
            #expect(task.objects(forKey: "tags").map { $0.value("label", as: String.self) } == ["x"])
            let tag = try #require(try reader.fetch(FetchRequest(entityName: "Tag")).first)
            #expect(tag.objectIDs(forKey: "tasks") == [task.objectID])
        }
    }

    @Test("a relationship fault includes this context's unsaved changes made from the other side")
    func relationshipFaultSeesPendingChanges() throws {
        let container = try Fixtures.container()
        let (projectID, taskIDs) = try Fixtures.seedProject(container.viewContext, name: "P", taskTitles: ["a", "b"])
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let newTask = context.insertNewObject(forEntityName: "Task")
            newTask.setValue("c", forKey: "title")
            newTask.setObject(context.object(with: projectID), forKey: "project")
            let moved = context.object(with: taskIDs[0])
            moved.setObject(nil, forKey: "project")
            // The project's tasks were never loaded; loading them now applies both changes.
            let project = context.object(with: projectID)
            #expect(Set(project.objectIDs(forKey: "tasks")) == [taskIDs[1], newTask.objectID])
            try context.save()
            let reader = container.newBackgroundContext()
            try reader.performAndWait {
                #expect(Set(reader.object(with: projectID).objectIDs(forKey: "tasks")) == [taskIDs[1], newTask.objectID])
            }
        }
    }

    @Test("hasChanges and the inserted, updated and deleted sets")
    func changeSets() throws {
        let container = try Fixtures.container()
        let (_, taskIDs) = try Fixtures.seedProject(container.viewContext, name: "P", taskTitles: ["a", "b", "c"])
        let context = container.newBackgroundContext()
        try context.performAndWait {
            #expect(!context.hasChanges)
            let a = context.object(with: taskIDs[0]), b = context.object(with: taskIDs[1])
            a.setValue("a2", forKey: "title")
            context.delete(b)
            let inserted = context.insertNewObject(forEntityName: "Task")
            inserted.setValue("d", forKey: "title")
            #expect(context.hasChanges)
            #expect(context.updatedObjects == [a])
            #expect(context.deletedObjects == [b])
            #expect(context.insertedObjects == [inserted])
            #expect(a.changedValues()["title"] == .attribute(.string("a2")))
            #expect(a.committedValues()["title"] == .attribute(.string("a")))
            try context.save()
            #expect(!context.hasChanges && context.updatedObjects.isEmpty)
            #expect(a.version == 2, "each save of a changed object adds one to its version")
            #expect(b.managedObjectContext == nil, "a deleted and saved object leaves its context")
        }
    }

    @Test("setting a value equal to the stored one does not make a change or a new version")
    func unchangedValueIsNoChange() throws {
        let container = try Fixtures.container()
        let (_, taskIDs) = try Fixtures.seedProject(container.viewContext, name: "P", taskTitles: ["a"])
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let a = context.object(with: taskIDs[0])
            a.setValue("b", forKey: "title")
            a.setValue("a", forKey: "title")
            try context.save()
            context.refresh(a, mergeChanges: false)
            #expect(a.version == 1)
        }
    }

    @Test("rollback discards inserts, updates and deletes")
    func rollback() throws {
        let container = try Fixtures.container()
        let (projectID, taskIDs) = try Fixtures.seedProject(container.viewContext, name: "P", taskTitles: ["a", "b"])
        let context = container.newBackgroundContext()
        context.performAndWait {
            let project = context.object(with: projectID)
            let a = context.object(with: taskIDs[0])
            a.setValue("changed", forKey: "title")
            context.delete(project)  // cascades to both tasks
            #expect(context.object(with: taskIDs[1]).isDeleted)
            let inserted = context.insertNewObject(forEntityName: "Tag")
            context.rollback()
            #expect(!context.hasChanges)
            #expect(a.value("title", as: String.self) == "a")
            #expect(!project.isDeleted && !context.object(with: taskIDs[1]).isDeleted)
            #expect(inserted.managedObjectContext == nil)
            #expect(Set(project.objectIDs(forKey: "tasks")) == Set(taskIDs))
        }
    }

    @Test("reset forgets every object; refresh re-reads the store")
    func resetAndRefresh() throws {
        let container = try Fixtures.container()
        let (_, taskIDs) = try Fixtures.seedProject(container.viewContext, name: "P", taskTitles: ["a"])
        let context = container.newBackgroundContext()
        let other = container.newBackgroundContext()
        try context.performAndWait {
            let a = context.object(with: taskIDs[0])
            #expect(a.value("title", as: String.self) == "a")
            try other.performAndWait {
                other.object(with: taskIDs[0]).setValue("from other", forKey: "title")
                try other.save()
            }
            // Without a refresh the context keeps what it read.
            #expect(a.value("title", as: String.self) == "a")
            // Merging keeps local changes on top of the store's new values and version.
            a.setValue(Int64(3), forKey: "priority")
            context.refresh(a, mergeChanges: true)
            #expect(a.value("title", as: String.self) == "from other")
            #expect(a.value("priority", as: Int64.self) == 3)
            #expect(a.version == 2)
            try context.save()
            #expect(a.version == 3)
            context.refresh(a, mergeChanges: false)
            #expect(a.isFault)
            context.reset()
            #expect(context.registeredObjects.isEmpty)
            #expect(a.managedObjectContext == nil)
            let again = context.object(with: taskIDs[0])
            #expect(again !== a)
            #expect(again.value("priority", as: Int64.self) == 3)
        }
    }

    @Test("perform runs on the context's queue and returns Sendable results")
    func performAsync() async throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let id = try await context.perform {
            #expect(context.isOnQueue)
            let tag = context.insertNewObject(forEntityName: "Tag")
            tag.setValue("async", forKey: "label")
            try context.save()
            return tag.objectID
        }
        #expect(!context.isOnQueue)
        let label = await container.viewContext.perform {
            container.viewContext.object(with: id).value("label", as: String.self)
        }
        #expect(label == "async")
        // performAndWait is reentrant on the queue.
        context.performAndWait { context.performAndWait { #expect(context.isOnQueue) } }
        let viaTask = try await container.performBackgroundTask { context in
            try context.count(for: FetchRequest(entityName: "Tag"))
        }
        #expect(viaTask == 1)
    }

    @Test("the suites' in-memory containers are on the store the run names (MANAGEDSTORE_TEST_STORE)")
    func containersOnTheNamedStore() throws {
        let container = try Fixtures.container()
        #expect((container.coordinator.store is DictionaryStore) == TestStore.isDictionary)
        #expect((container.coordinator.store is PostgreSQLStore) == TestStore.isPostgres)
        #expect((container.coordinator.store is SQLiteStore) == (!TestStore.isDictionary && !TestStore.isPostgres))
    }

    @Test("using a context off its queue traps with a message")
    func offQueueTraps() async {
        await #expect(processExitsWith: .failure) {
            // Exit cleanly if the container cannot be made, so that only the trap passes the test.
            guard let container = try? Fixtures.container() else { exit(0) }
            _ = container.viewContext.insertNewObject(forEntityName: "Task")
        }
    }

    @Test("using an object of a context off the queue traps")
    func objectOffQueueTraps() async {
        await #expect(processExitsWith: .failure) {
            // Exit cleanly if the container cannot be made, so that only the trap passes the test.
            guard let container = try? Fixtures.container() else { exit(0) }
            let context = container.newBackgroundContext()
            nonisolated(unsafe) var leaked: ManagedObject?
            context.performAndWait { leaked = context.insertNewObject(forEntityName: "Task") }
            _ = leaked?.value("title", as: String.self)
        }
    }

    @Test("typed and dynamic property access")
    func propertyAccess() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let task = context.insertNewObject(forEntityName: "Task")
            #expect(task.value("priority", as: Int64.self) == 0, "defaults from the model")
            #expect(task.value("done", as: Bool.self) == false)
            task["title"] = "Dynamic"
            task["priority"] = 4
            task["estimate"] = 1.5
            let due = Date(timeIntervalSinceReferenceDate: 800_000_000.123456)
            task["due"] = due
            #expect(task["title"] as? String == "Dynamic")
            #expect(task["priority"] as? Int64 == 4)
            #expect(task.value("priority", as: Int.self) == 4)
            #expect(task["estimate"] as? Double == 1.5)
            #expect(task["project"] == nil)
            #expect((task["tags"] as? [ManagedObject])?.isEmpty == true)
            try context.save()
            let reader = container.newBackgroundContext()
            try reader.performAndWait {
                let copy = try reader.existingObject(with: task.objectID)
                #expect(copy.value("due", as: Date.self) == due, "dates keep their full precision")
            }
        }
    }
}
