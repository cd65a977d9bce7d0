import Dispatch
import Foundation
import Synchronization
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite

@Suite("Nested (parent/child) contexts")
struct NestedContextTests {
    /// Task titles of `context`'s fetch, in title order.
    static func titles(_ context: ManagedObjectContext, _ predicate: ObjectPredicate? = nil) throws -> [String] {
        try context.fetch(FetchRequest(entityName: "Task", predicate: predicate, sortDescriptors: [ObjectSortDescriptor("title")]))
            .map { $0.value("title", as: String.self) ?? "?" }
    }

    /// How many objects of `entity` a fresh root context finds in the store.
    static func storeCount(_ container: PersistentContainer, _ entity: String) throws -> Int {
        let fresh = container.newBackgroundContext(name: "fresh")
        return try fresh.performAndWait { try fresh.count(for: FetchRequest(entityName: entity)) }
    }

    @Test("a child's save reaches its parent only; the parent's save reaches the store")
    func childSaveReachesParentOnly() throws {
        let container = try Fixtures.container()
        let root = container.newBackgroundContext(name: "root")
        let child = ManagedObjectContext(parent: root, name: "child")
        #expect(child.parent === root && root.parent == nil && child.coordinator === root.coordinator)
        let (projectID, taskID) = try child.performAndWait { () throws -> (ManagedObjectID, ManagedObjectID) in
            let project = child.insertNewObject(forEntityName: "Project")
            project.setValue("Apollo", forKey: "name")
            let task = child.insertNewObject(forEntityName: "Task")
            task.setValue("Launch", forKey: "title")
            task.setObject(project, forKey: "project")
            let saved = try child.save()
            #expect(saved.inserted == [project.objectID, task.objectID] && saved.token == nil)
            #expect(!child.hasChanges && !task.isInserted)
            return (project.objectID, task.objectID)
        }
        #expect(try Self.storeCount(container, "Project") == 0, "a child's save writes nothing to the store")
        root.performAndWait {
            #expect(root.hasChanges)
            #expect(Set(root.insertedObjects.map(\.objectID)) == [projectID, taskID])
            let task = root.registeredObject(for: taskID)
            #expect(task?.value("title", as: String.self) == "Launch")
            #expect(task?.objectID(forKey: "project") == projectID)
        }
        try root.performAndWait { try root.save() }
        #expect(try Self.storeCount(container, "Project") == 1)
        let fresh = container.newBackgroundContext(name: "fresh")
        try fresh.performAndWait { () throws in
            #expect(try Self.titles(fresh, .key("project.name") == "Apollo") == ["Launch"])
        }
    }

    @Test("a child's fetches and faults see its parent's unsaved inserts, updates and deletes")
    func childSeesParentChanges() throws {
        let container = try Fixtures.container()
        let root = container.newBackgroundContext(name: "root")
        let (projectID, taskIDs) = try Fixtures.seedProject(root, name: "P", taskTitles: ["a", "b", "c"])
        let inserted = root.performAndWait { () -> ManagedObjectID in
            let task = root.insertNewObject(forEntityName: "Task")
            task.setValue("d", forKey: "title")
            task.setValue(Int64(4), forKey: "priority")
            task.setObject(root.object(with: projectID), forKey: "project")
            root.object(with: taskIDs[0]).setValue("a2", forKey: "title")
            root.object(with: taskIDs[0]).setValue(Int64(5), forKey: "priority")
            root.delete(root.object(with: taskIDs[1]))
            return task.objectID
        }
        let child = ManagedObjectContext(parent: root)
        try child.performAndWait {
            #expect(try Self.titles(child) == ["a2", "c", "d"])
            // Predicates are evaluated against the parent's values: the store still says "a" and 0.
            #expect(try Self.titles(child, .key("priority") >= 4) == ["a2", "d"])
            #expect(try Self.titles(child, .key("title") == "a").isEmpty)
            #expect(try child.count(for: FetchRequest(entityName: "Task")) == 3)
            #expect(try child.fetchObjectIDs(FetchRequest(entityName: "Task", predicate: .key("title") == "d")) == [inserted])
            #expect(throws: ContextError.objectNotFound(taskIDs[1])) { try child.existingObject(with: taskIDs[1]) }
            #expect(try child.existingObject(with: inserted).value("priority", as: Int64.self) == 4)
            let project = child.object(with: projectID)
            #expect(Set(project.objectIDs(forKey: "tasks")) == [taskIDs[0], taskIDs[2], inserted])
            // The child's own pending changes go on top of the parent's.
            let e = child.insertNewObject(forEntityName: "Task")
            e.setValue("e", forKey: "title")
            child.object(with: taskIDs[2]).setValue(Int64(5), forKey: "priority")
            #expect(try Self.titles(child, .key("priority") >= 4) == ["a2", "c", "d"])
            #expect(try Self.titles(child) == ["a2", "c", "d", "e"])
            let eager = try child.fetch(FetchRequest(entityName: "Task", predicate: .key("title") == "d", returnsObjectsAsFaults: false))
            #expect(eager.count == 1 && !eager[0].isFault)
        }
        root.performAndWait { #expect(root.object(with: taskIDs[2]).value("priority", as: Int64.self) == 0, "the child's change stays in the child") }
    }

    @Test("three levels: each save moves the changes one level up")
    func threeLevels() throws {
        let container = try Fixtures.container()
        let root = container.newBackgroundContext(name: "root")
        let (_, taskIDs) = try Fixtures.seedProject(root, name: "P", taskTitles: ["a"])
        let middle = ManagedObjectContext(parent: root, name: "middle")
        let leaf = ManagedObjectContext(parent: middle, name: "leaf")
        root.performAndWait {
            let task = root.insertNewObject(forEntityName: "Task")
            task.setValue("from root", forKey: "title")
        }
        middle.performAndWait { middle.object(with: taskIDs[0]).setValue("a by middle", forKey: "title") }
        let leafTask = try leaf.performAndWait { () throws -> ManagedObjectID in
            #expect(try Self.titles(leaf) == ["a by middle", "from root"])
            let task = leaf.insertNewObject(forEntityName: "Task")
            task.setValue("from leaf", forKey: "title")
            try leaf.save()
            return task.objectID
        }
        try middle.performAndWait { () throws in
            #expect(try Self.titles(middle) == ["a by middle", "from leaf", "from root"])
        }
        try root.performAndWait { () throws in
            #expect(try Self.titles(root) == ["a", "from root"], "the leaf's save stops at the middle")
        }
        try middle.performAndWait { try middle.save() }
        try root.performAndWait { () throws in
            #expect(try Self.titles(root) == ["a by middle", "from leaf", "from root"])
            #expect(root.registeredObject(for: leafTask)?.isInserted == true)
        }
        #expect(try Self.storeCount(container, "Task") == 1)
        try root.performAndWait { try root.save() }
        let fresh = container.newBackgroundContext(name: "fresh")
        try fresh.performAndWait { () throws in #expect(try Self.titles(fresh) == ["a by middle", "from leaf", "from root"]) }
    }

    @Test("temporary IDs travel up unchanged; obtainPermanentIDs in a child gives the ID the store keeps")
    func temporaryAndPermanentIDs() throws {
        let container = try Fixtures.container()
        let root = container.newBackgroundContext(name: "root")
        let child = ManagedObjectContext(parent: root)
        let (temporary, obtained) = try child.performAndWait { () throws -> (ManagedObjectID, ManagedObjectID) in
            let plain = child.insertNewObject(forEntityName: "Task")
            plain.setValue("plain", forKey: "title")
            let early = child.insertNewObject(forEntityName: "Task")
            early.setValue("early", forKey: "title")
            try child.obtainPermanentIDs(for: [early])
            #expect(plain.objectID.isTemporaryID && !early.objectID.isTemporaryID)
            try child.save()
            return (plain.objectID, early.objectID)
        }
        try root.performAndWait {
            #expect(root.registeredObject(for: temporary)?.objectID == temporary, "the parent holds the child's temporary ID")
            #expect(root.registeredObject(for: obtained)?.isInserted == true)
            try root.save()
            let plain = root.registeredObject(for: temporary)
            #expect(plain.map { !$0.objectID.isTemporaryID } == true, "the root's object has its permanent ID after its save")
            #expect(root.registeredObject(for: obtained)?.objectID == obtained)
        }
        child.performAndWait {
            #expect(child.registeredObject(for: temporary)?.objectID == temporary, "the child's object keeps its temporary ID")
        }
        let fresh = container.newBackgroundContext(name: "fresh")
        try fresh.performAndWait { () throws in
            #expect(try fresh.existingObject(with: obtained).value("title", as: String.self) == "early")
            #expect(throws: ContextError.objectNotFound(temporary)) { try fresh.existingObject(with: temporary) }
        }
    }

    @Test("relationships set in a child, to a new object and to a saved one, arrive in the parent and the store")
    func relationships() throws {
        let container = try Fixtures.container()
        let root = container.newBackgroundContext(name: "root")
        let (savedProjectID, savedTaskIDs) = try Fixtures.seedProject(root, name: "Saved", taskTitles: ["old"])
        let savedTagID = try root.performAndWait { () throws -> ManagedObjectID in
            let tag = root.insertNewObject(forEntityName: "Tag")
            tag.setValue("saved-tag", forKey: "label")
            try root.save()
            return tag.objectID
        }
        let child = ManagedObjectContext(parent: root)
        let (newProjectID, newTagID, firstID, secondID) = try child.performAndWait {
            () throws -> (ManagedObjectID, ManagedObjectID, ManagedObjectID, ManagedObjectID) in
            let project = child.insertNewObject(forEntityName: "Project")
            project.setValue("New", forKey: "name")
            let tag = child.insertNewObject(forEntityName: "Tag")
            tag.setValue("new-tag", forKey: "label")
            let first = child.insertNewObject(forEntityName: "Task")
            first.setValue("first", forKey: "title")
            first.setObject(project, forKey: "project")  // to an object inserted in the child
            first.setObjects([tag, child.object(with: savedTagID)], forKey: "tags")
            let second = child.insertNewObject(forEntityName: "Task")
            second.setValue("second", forKey: "title")
            second.setObject(child.object(with: savedProjectID), forKey: "project")  // to a saved object
            // A saved task moves to the new project.
            child.object(with: savedTaskIDs[0]).setObject(project, forKey: "project")
            try child.save()
            return (project.objectID, tag.objectID, first.objectID, second.objectID)
        }
        func check(_ context: ManagedObjectContext, newProject: ManagedObjectID, newTag: ManagedObjectID,
                   first: ManagedObjectID, second: ManagedObjectID) {
            let project = context.object(with: newProject)
            #expect(Set(project.objectIDs(forKey: "tasks")) == [first, savedTaskIDs[0]])
            #expect(context.object(with: savedProjectID).objectIDs(forKey: "tasks") == [second])
            #expect(Set(context.object(with: first).objectIDs(forKey: "tags")) == [newTag, savedTagID])
            #expect(context.object(with: savedTagID).objectIDs(forKey: "tasks") == [first])
            #expect(context.object(with: newTag).objectIDs(forKey: "tasks") == [first])
            #expect(context.object(with: savedTaskIDs[0]).objectID(forKey: "project") == newProject)
        }
        root.performAndWait {
            check(root, newProject: newProjectID, newTag: newTagID, first: firstID, second: secondID)
        }
        let permanent = try root.performAndWait { () throws -> [ManagedObjectID] in
            try root.save()
            return [newProjectID, newTagID, firstID, secondID].map { root.registeredObject(for: $0)!.objectID }
        }
        let fresh = container.newBackgroundContext(name: "fresh")
        fresh.performAndWait {
            check(fresh, newProject: permanent[0], newTag: permanent[1], first: permanent[2], second: permanent[3])
        }
        #expect(try container.coordinator.checkIntegrity().isEmpty)
    }

    @Test("delete rules apply in the child, and the parent and the store get the same result; deny refuses in the child")
    func deleteRules() throws {
        let container = try Fixtures.container()
        let root = container.newBackgroundContext(name: "root")
        let (projectID, taskIDs) = try Fixtures.seedProject(root, name: "P", taskTitles: ["a", "b"])
        let (otherProjectID, otherTaskIDs) = try Fixtures.seedProject(root, name: "Q", taskTitles: ["q1", "q2"])
        let tagID = try root.performAndWait { () throws -> ManagedObjectID in
            let tag = root.insertNewObject(forEntityName: "Tag")
            tag.setValue("t", forKey: "label")
            tag.setObjects([root.object(with: taskIDs[0])], forKey: "tasks")
            try root.save()
            return tag.objectID
        }
        let child = ManagedObjectContext(parent: root)
        // Deny: the tag still holds a task, so the child's save refuses, and nothing reaches the parent.
        child.performAndWait {
            child.delete(child.object(with: tagID))
            #expect {
                try child.save()
            } throws: { error in
                guard case .validation(let errors) = error as? SaveError else { return false }
                return errors.map(\.code) == [.deleteDenied]
            }
            child.rollback()
        }
        root.performAndWait { #expect(!root.hasChanges) }
        // Cascade (project → tasks) and nullify (task → project, task → tags).
        let saved = try child.performAndWait { () throws -> SavedChanges in
            child.delete(child.object(with: projectID))
            child.delete(child.object(with: otherTaskIDs[0]))
            #expect(child.object(with: taskIDs[0]).isDeleted, "cascaded in the child")
            return try child.save()
        }
        #expect(Set(saved.deleted) == Set([projectID, otherTaskIDs[0]] + taskIDs))
        #expect(Set(saved.updated) == [otherProjectID, tagID], "the inverses the deletes emptied")
        root.performAndWait {
            #expect(Set(root.deletedObjects.map(\.objectID)) == Set([projectID, otherTaskIDs[0]] + taskIDs))
            #expect(root.object(with: tagID).objectIDs(forKey: "tasks").isEmpty)
            #expect(root.object(with: otherProjectID).objectIDs(forKey: "tasks") == [otherTaskIDs[1]])
        }
        try root.performAndWait { try root.save() }
        let fresh = container.newBackgroundContext(name: "fresh")
        try fresh.performAndWait { () throws in
            #expect(try Self.titles(fresh) == ["q2"])
            #expect(fresh.object(with: tagID).objectIDs(forKey: "tasks").isEmpty)
            #expect(try fresh.count(for: FetchRequest(entityName: "Project")) == 1)
        }
    }

    @Test("rollback in a child leaves the parent untouched")
    func rollbackInChild() throws {
        let container = try Fixtures.container()
        let root = container.newBackgroundContext(name: "root")
        let (_, taskIDs) = try Fixtures.seedProject(root, name: "P", taskTitles: ["a", "b"])
        root.performAndWait { root.object(with: taskIDs[0]).setValue("a in root", forKey: "title") }
        let child = ManagedObjectContext(parent: root)
        try child.performAndWait {
            let a = child.object(with: taskIDs[0])
            a.setValue("a in child", forKey: "title")
            child.delete(child.object(with: taskIDs[1]))
            child.insertNewObject(forEntityName: "Task").setValue("new", forKey: "title")
            child.rollback()
            #expect(!child.hasChanges)
            #expect(a.value("title", as: String.self) == "a in root", "back to the parent's value")
            #expect(try Self.titles(child) == ["a in root", "b"])
            try child.save()
        }
        try root.performAndWait { () throws in
            #expect(root.insertedObjects.isEmpty && root.deletedObjects.isEmpty)
            #expect(root.updatedObjects.map(\.objectID) == [taskIDs[0]])
            #expect(try Self.titles(root) == ["a in root", "b"])
        }
    }

    @Test("a child's save tells its observers will-save and did-save with its IDs; the parent's observers hear of the changes; no root context merges it")
    func notifications() throws {
        let container = try Fixtures.container()
        let root = container.newBackgroundContext(name: "root")
        let (_, taskIDs) = try Fixtures.seedProject(root, name: "P", taskTitles: ["a"])
        let bystander = container.newBackgroundContext(name: "bystander")
        bystander.performAndWait {
            bystander.automaticallyMergesChangesFromParent = true
            _ = bystander.object(with: taskIDs[0]).value("title", as: String.self)
        }
        let child = ManagedObjectContext(parent: root)
        let childLog = NotificationLog(), rootLog = NotificationLog(), bystanderLog = NotificationLog()
        child.addObserver { childLog.append($0) }
        root.addObserver { rootLog.append($0) }
        bystander.addObserver { bystanderLog.append($0) }
        let (saved, inserted) = try child.performAndWait { () throws -> (SavedChanges, ManagedObjectID) in
            let task = child.insertNewObject(forEntityName: "Task")
            task.setValue("new", forKey: "title")
            child.object(with: taskIDs[0]).setValue("a2", forKey: "title")
            return (try child.save(), task.objectID)
        }
        #expect(inserted.isTemporaryID)
        #expect(saved == SavedChanges(inserted: [inserted], updated: [taskIDs[0]]))
        var changes = ObjectChanges()
        changes.inserted = [inserted]
        changes.updated = [taskIDs[0]]
        #expect(childLog.all == [.objectsDidChange(changes), .willSave, .didSave(saved)])
        #expect(rootLog.all == [.objectsDidChange(changes)], "the parent hears of what it took in, by the same IDs")
        // A merge would have been queued on the bystander's queue during the child's save.
        bystander.performAndWait {
            #expect(bystander.object(with: taskIDs[0]).value("title", as: String.self) == "a", "nothing reached the store")
        }
        #expect(bystanderLog.all.isEmpty, "no root context merges a child's save")
        rootLog.clear()
        let rootSaved = try root.performAndWait { try root.save() }
        #expect(rootLog.all.last == .didSave(rootSaved))
        bystander.performAndWait {
            #expect(bystander.object(with: taskIDs[0]).value("title", as: String.self) == "a2", "the root's save did")
            bystander.automaticallyMergesChangesFromParent = false
        }
    }

    @Test("automaticallyMergesChangesFromParent on a child takes in its siblings' saves and its parent's, under its own changes")
    func automaticMergingInChild() throws {
        let container = try Fixtures.container()
        let root = container.newBackgroundContext(name: "root")
        let (_, taskIDs) = try Fixtures.seedProject(root, name: "P", taskTitles: ["a", "b"])
        let writer = ManagedObjectContext(parent: root, name: "writer")
        let merging = ManagedObjectContext(parent: root, name: "merging")
        let still = ManagedObjectContext(parent: root, name: "still")
        for context in [merging, still] {
            context.performAndWait {
                for id in taskIDs { _ = context.object(with: id).value("title", as: String.self) }
                context.object(with: taskIDs[0]).setValue(Int64(3), forKey: "priority")  // its own unsaved change
            }
        }
        merging.performAndWait { merging.automaticallyMergesChangesFromParent = true }
        try writer.performAndWait {
            writer.object(with: taskIDs[0]).setValue("a by writer", forKey: "title")
            try writer.save()
        }
        // The merge was queued on the merging child's queue during the writer's save: this block runs after it.
        merging.performAndWait {
            let a = merging.object(with: taskIDs[0])
            #expect(a.value("title", as: String.self) == "a by writer")
            #expect(a.value("priority", as: Int64.self) == 3, "its own change stays on top")
        }
        still.performAndWait {
            #expect(still.object(with: taskIDs[0]).value("title", as: String.self) == "a", "a child that does not merge keeps what it read")
        }
        // The parent's own save (to the store) and its own changes.
        try root.performAndWait {
            root.object(with: taskIDs[0]).setValue(true, forKey: "done")
            root.delete(root.object(with: taskIDs[1]))
            try root.save()
        }
        merging.performAndWait {
            let a = merging.object(with: taskIDs[0])
            #expect(a.value("done", as: Bool.self) == true && a.version == 2)
            #expect(a.value("priority", as: Int64.self) == 3)
            #expect(merging.object(with: taskIDs[1]).isInaccessible, "deleted by the parent")
            merging.automaticallyMergesChangesFromParent = false
        }
    }

    @Test("saving a child that changed an object its parent deleted since fails with a conflict, and pushes nothing")
    func parentDeletedObject() throws {
        let container = try Fixtures.container()
        let root = container.newBackgroundContext(name: "root")
        let (_, taskIDs) = try Fixtures.seedProject(root, name: "P", taskTitles: ["a", "b"])
        let child = ManagedObjectContext(parent: root)
        child.performAndWait {
            child.object(with: taskIDs[0]).setValue("a2", forKey: "title")
            child.insertNewObject(forEntityName: "Task").setValue("new", forKey: "title")
        }
        root.performAndWait { root.delete(root.object(with: taskIDs[0])) }
        try child.performAndWait {
            #expect {
                try child.save()
            } throws: { error in
                guard case let .conflict(conflicts, constraints) = error as? SaveError else { return false }
                return constraints.isEmpty && conflicts.map(\.objectID) == [taskIDs[0]] && conflicts[0].newVersion == 0
                    && conflicts[0].persistedSnapshot == nil && conflicts[0].changedProperties == ["title"]
            }
            #expect(child.hasChanges, "the child keeps its changes")
            child.refresh(child.object(with: taskIDs[0]), mergeChanges: false)
            #expect(throws: ContextError.objectNotFound(taskIDs[0])) { try child.existingObject(with: taskIDs[0]) }
            try child.save()
        }
        try root.performAndWait { () throws in
            #expect(try Self.titles(root) == ["b", "new"])
        }
    }

    @Test("validation runs in the child, and again when the root saves (uniqueness is the store's)")
    func validationTwice() throws {
        let container = try Fixtures.container()
        let root = container.newBackgroundContext(name: "root")
        try Fixtures.seedProject(root, name: "Taken", taskTitles: [])
        let child = ManagedObjectContext(parent: root)
        child.performAndWait {
            let task = child.insertNewObject(forEntityName: "Task")
            task.setValue(Int64(9), forKey: "priority")  // no title, priority above 5
            #expect {
                try child.save()
            } throws: { error in
                guard case .validation(let errors) = error as? SaveError else { return false }
                return Set(errors.map(\.code)) == [.missingMandatoryProperty, .tooLarge]
            }
            child.rollback()
        }
        root.performAndWait { #expect(!root.hasChanges, "a refused child save pushes nothing") }
        try child.performAndWait {
            child.insertNewObject(forEntityName: "Project").setValue("Taken", forKey: "name")
            try child.save()  // the child cannot know the store's uniqueness
        }
        root.performAndWait {
            #expect {
                try root.save()
            } throws: { error in
                guard case let .conflict(_, constraints) = error as? SaveError else { return false }
                return constraints.map(\.constraint) == [["name"]]
            }
        }
    }

    @Test("a child keeps its parent alive; a parent does not keep its children")
    func lifetimes() throws {
        let container = try Fixtures.container()
        weak var weakParent: ManagedObjectContext?
        weak var weakChild: ManagedObjectContext?
        var child: ManagedObjectContext?
        do {
            let parent = ManagedObjectContext(coordinator: container.coordinator, name: "short-lived")
            parent.performAndWait { parent.insertNewObject(forEntityName: "Tag").setValue("kept", forKey: "label") }
            weakParent = parent
            child = ManagedObjectContext(parent: parent)
            weakChild = child
        }
        #expect(weakParent != nil)
        let count = try child!.performAndWait { try child!.count(for: FetchRequest(entityName: "Tag")) }
        #expect(count == 1, "the parent's unsaved insert is still there")
        child = nil
        #expect(weakChild == nil && weakParent == nil)
    }

    @Test("a parent's block may use its child: the child's questions are answered on the spot, not deadlocked")
    func childUsedInsideParentBlock() throws {
        let container = try Fixtures.container()
        let root = container.newBackgroundContext(name: "root")
        let child = ManagedObjectContext(parent: root)
        let finished = DispatchSemaphore(value: 0)
        let seen = Mutex<(child: Int, parent: Int)>((-1, -1))
        DispatchQueue.global().async {
            root.performAndWait {
                root.insertNewObject(forEntityName: "Tag").setValue("t", forKey: "label")
                let count = child.performAndWait { () -> Int in
                    child.insertNewObject(forEntityName: "Tag").setValue("u", forKey: "label")
                    try? child.save()
                    return (try? child.count(for: FetchRequest(entityName: "Tag"))) ?? -1
                }
                seen.withLock { $0 = (count, root.insertedObjects.count) }
            }
            finished.signal()
        }
        #expect(finished.wait(timeout: .now() + 20) == .success, "deadlocked")
        #expect(seen.withLock { $0 } == (2, 2))
    }

    @Test("a child cannot be pinned to a query generation")
    func noQueryGenerationInChild() throws {
        let store = TemporaryStore()
        let container = try Fixtures.container(.path(store.url.path))
        let child = ManagedObjectContext(parent: container.viewContext)
        child.performAndWait {
            #expect(throws: QueryGenerationError.childContext) { try child.setQueryGenerationFrom(.current) }
        }
    }

    @Test("twin: random operations through a child, then saved up, leave the store as the same operations done in a root context")
    func twinWithRootContext() throws {
        for seed: UInt64 in [1, 2, 3, 4] {
            let direct = try Fixtures.container()
            let nested = try Fixtures.container()
            let root = nested.newBackgroundContext(name: "root")
            let child = ManagedObjectContext(parent: root, name: "child")
            let directContext = direct.newBackgroundContext(name: "direct")
            var script = RandomOperationScript(seed: seed)
            for round in 0..<8 {
                let operations = script.nextRound()
                try child.performAndWait {
                    for operation in operations { try operation.apply(in: child) }
                    try child.save()
                }
                try directContext.performAndWait {
                    for operation in operations { try operation.apply(in: directContext) }
                }
                // The root saves every other round: in between, the child works on top of the parent's unsaved state.
                guard round % 2 == 1 else { continue }
                try root.performAndWait { try root.save() }
                try directContext.performAndWait { try directContext.save() }
                let nestedDump = try StoreDump(nested), directDump = try StoreDump(direct)
                #expect(nestedDump == directDump, "seed \(seed), round \(round)")
                #expect(!directDump.tasks.isEmpty)
            }
        }
    }
}
