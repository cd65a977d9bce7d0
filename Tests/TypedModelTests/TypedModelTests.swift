import Foundation
import Testing
import ManagedStore

/// The demo model's typed views, as `managedstore generate swift` wrote them (Generated/), used
/// as an app uses them: insert, typed properties, relationships, typed fetches and sorts, save.
@Suite("Typed entity views")
struct TypedModelTests {
    @Test("insert through typed views, link them, save, and fetch with typed predicates and sorts")
    func typedRoundTrip() throws {
        let container = try PersistentContainer(model: .taskTracker(), store: .inMemory)
        let context = container.newBackgroundContext()
        let ids = try context.performAndWait { () throws -> [ManagedObjectID] in
            let apollo = Project.insert(into: context)
            apollo.name = "Apollo"
            let urgent = Tag.insert(into: context)
            urgent.label = "urgent"
            var tasks: [Task] = []
            for (title, priority) in [("Launch", Int64(5)), ("Land", 3), ("Orbit", 1)] {
                let task = Task.insert(into: context)
                task.title = title
                task.priority = priority
                task.project = apollo
                tasks.append(task)
            }
            tasks[0].tags = [urgent]
            tasks[1].due = Date(timeIntervalSinceReferenceDate: 86_400)
            try context.save()
            #expect(apollo.archived == false, "a required attribute with a default reads as a plain value")
            #expect(apollo.tasks.count == 3 && urgent.tasks.map(\.title) == ["Launch"], "inverses kept")
            return tasks.map(\.objectID)
        }
        let reader = container.newBackgroundContext()
        try reader.performAndWait {
            let important = try Task.fetch(in: reader, where: Task.priority >= 3 && Task.done == false, sortedBy: [Task.priority.descending])
            #expect(important.map(\.title) == ["Launch", "Land"])
            #expect(important.map(\.objectID) == Array(ids.prefix(2)))
            let named = try Task.fetch(in: reader, where: Task.title.beginsWith("L") && Task.due != nil)
            #expect(named.map(\.title) == ["Land"])
            let apollo = try #require(try Project.fetch(in: reader, where: Project.name == "Apollo").first)
            #expect(try Task.fetch(in: reader, where: Task.project == apollo, sortedBy: [Task.title.ascending]).map(\.title) == ["Land", "Launch", "Orbit"])
            #expect(try Task.fetch(in: reader, where: Task.priority.isIn([1, 5]) || !(Task.tags == nil)).count >= 2)
            #expect(try Task.fetch(in: reader, where: Task.priority.between(2, 4)).map(\.title) == ["Land"])
            let untyped = try reader.existingObject(with: ids[2])
            #expect(untyped.typed(as: Task.self)?.title == "Orbit" && untyped.typed(as: Project.self) == nil)
        }
    }

    @Test("the README's typed tour runs as written")
    func readmeTypedTour() async throws {
        let container = try PersistentContainer(model: .taskTracker(), store: .inMemory)
        let writer = container.newBackgroundContext(), reader = container.newBackgroundContext()
        // README: begin
        let taskID = try await writer.perform {
            let project = Project.insert(into: writer)
            project.name = "Apollo"
            let task = Task.insert(into: writer)
            task.title = "Launch"
            task.priority = 5
            task.project = project                         // project.tasks now holds task too
            try writer.save()
            return task.objectID
        }
        let titles = try await reader.perform {
            try Task.fetch(in: reader, where: Task.priority >= 3 && Task.title.beginsWith("L"),
                           sortedBy: [Task.title.ascending], limit: 20).compactMap(\.title)
        }
        // README: end
        #expect(titles == ["Launch"] && taskID.entityName == "Task")
    }

    @Test("relationships change through typed views: a to-one set and cleared, a to-many replaced, and saved")
    func relationshipChanges() throws {
        let container = try PersistentContainer(model: .taskTracker(), store: .inMemory)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let (a, b) = (Project.insert(into: context), Project.insert(into: context))
            a.name = "A"
            b.name = "B"
            let task = Task.insert(into: context)
            task.title = "Move"
            task.project = a
            try context.save()
            task.project = b
            #expect(a.tasks.isEmpty && b.tasks.map(\.title) == ["Move"])
            let (x, y) = (Tag.insert(into: context), Tag.insert(into: context))
            x.label = "x"
            y.label = "y"
            task.tags = [x, y]
            try context.save()
            task.tags = [y]
            task.project = nil
            try context.save()
            #expect(x.tasks.isEmpty && y.tasks.map(\.title) == ["Move"] && b.tasks.isEmpty)
        }
    }

    @Test("typed keys through a to-one: predicates and sorts give what their string key paths give, and read and write at the path's end")
    func keyPathsThroughToOne() throws {
        let container = try PersistentContainer(model: .taskTracker(), store: .inMemory)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            for (name, titles) in [("Apollo", ["Launch", "Orbit"]), ("Gemini", ["Dock"]), ("Zond", [])] {
                let project = Project.insert(into: context)
                project.name = name
                project.archived = name == "Gemini"
                for title in titles {
                    let task = Task.insert(into: context)
                    task.title = title
                    task.project = project
                }
            }
            let loose = Task.insert(into: context)
            loose.title = "Unfiled"
            try context.save()

            #expect(Task.project.name.keyPath == "project.name")
            // Each typed form against the string form it stands for: the same objects, in the same order.
            let twins: [(ObjectPredicate, ObjectPredicate)] = [
                (Task.project.name == "Apollo", .key("project.name") == "Apollo"),
                (Task.project.name.beginsWith("G") || Task.project.archived == true,
                 .key("project.name").beginsWith("G") || .key("project.archived") == true),
                (Task.project.name != nil, .key("project.name") != nil),
                (Task.project.name.isIn(["Gemini", "Zond"]), .key("project.name").isIn(["Gemini", "Zond"])),
            ]
            for (typed, untyped) in twins {
                let sorts = [Task.project.name.descending, Task.title.ascending]
                let viaTyped = try Task.fetch(in: context, where: typed, sortedBy: sorts).map(\.objectID)
                let viaString = try context.fetch(FetchRequest(entityName: "Task", predicate: untyped, sortDescriptors: [
                    ObjectSortDescriptor("project.name", ascending: false), ObjectSortDescriptor("title")])).map(\.objectID)
                #expect(viaTyped == viaString && !viaTyped.isEmpty, "\(typed)")
            }
            #expect(try Task.fetch(in: context, where: Task.project.name == "Apollo", sortedBy: [Task.title.descending]).map(\.title)
                    == ["Orbit", "Launch"])
            // != an object: the tasks of other projects and those of none.
            let gemini = try #require(try Project.fetch(in: context, where: Project.name == "Gemini").first)
            #expect(try Task.fetch(in: context, where: Task.project != gemini, sortedBy: [Task.title.ascending]).map(\.title)
                    == ["Launch", "Orbit", "Unfiled"])

            // Read and written at the path's end; a step that holds nothing reads nil and takes no write.
            let dock = try #require(try Task.fetch(in: context, where: Task.title == "Dock").first)
            #expect(dock.value(Task.project.name) == "Gemini" && dock.value(Task.project.archived) == true)
            dock.setValue("Gemini II", for: Task.project.name)
            #expect(dock.project?.name == "Gemini II")
            #expect(loose.value(Task.project.name) == nil)
            loose.setValue("nowhere", for: Task.project.name)
            #expect(loose.project == nil && !loose.object.hasChanges)
            try context.save()
        }
    }
}
