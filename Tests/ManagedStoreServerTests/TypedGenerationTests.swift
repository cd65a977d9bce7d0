import Foundation
import Testing

/// `managedstore generate swift`: the demo model's views in Tests/TypedModelTests/Generated are
/// what the command writes, and a wrong type in a predicate or a property does not compile.
@Suite("managedstore generate swift", .sqliteWhateverTheRun)
struct TypedGenerationTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardizedFileURL
    static let generated = root.appendingPathComponent("Tests/TypedModelTests/Generated")

    @Test("the views the typed tests compile are the command's output for the shipped demo model, unchanged")
    func generatedFilesAreCurrent() throws {
        let folder = TemporaryFolder()
        let run = try ServerProcess.run(["generate", "swift", "--model", Self.root.appendingPathComponent("models/Tracker.xcdatamodeld").path,
                                         "--output", folder.url.path, "--access", "internal"])
        #expect(run.status == 0, "\(run)")
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.generated.path).sorted()
        #expect(names == ["Project.swift", "Tag.swift", "Task.swift"])
        for name in names {
            let fresh = try String(contentsOf: folder.url.appendingPathComponent(name), encoding: .utf8)
            let kept = try String(contentsOf: Self.generated.appendingPathComponent(name), encoding: .utf8)
            #expect(fresh == kept, "\(name) is stale: managedstore generate swift --model models/Tracker.xcdatamodeld --output Tests/TypedModelTests/Generated --access internal")
        }
        let refused = try ServerProcess.run(["generate", "swift", "--model", Self.keywordModel(folder), "--output", folder.url.path])
        #expect(refused.status == 2 && refused.stderr.contains("Item.default: is a Swift keyword"), "\(refused)")
    }

    static func keywordModel(_ folder: TemporaryFolder) throws -> String {
        let path = folder.url.appendingPathComponent("keywords.json").path
        try Data(#"{"name": "K", "entities": [{"name": "Item", "attributes": [{"name": "default", "type": "string"}]}]}"#.utf8)
            .write(to: URL(fileURLWithPath: path))
        return path
    }

    /// Type-checks `code` with the generated views against the built ManagedStore module; the
    /// compiler's status and its diagnostics.
    static func typecheck(_ code: String, views: URL = generated) throws -> (status: Int32, output: String) {
        let folder = TemporaryFolder()
        for name in try FileManager.default.contentsOfDirectory(atPath: views.path) {
            try FileManager.default.copyItem(at: views.appendingPathComponent(name), to: folder.url.appendingPathComponent(name))
        }
        try Data(("import Foundation\nimport ManagedStore\n" + code).utf8).write(to: folder.url.appendingPathComponent("use.swift"))
        let sources = try FileManager.default.contentsOfDirectory(atPath: folder.url.path).map { folder.url.appendingPathComponent($0).path }
        return try SwiftTypecheck.run(sources)
    }

    @Test("typed predicates and properties compile with the right types and not with wrong ones")
    func wrongTypesDoNotCompile() throws {
        let right = try Self.typecheck("""
            func use(_ context: ManagedObjectContext) throws -> [Task] {
                let task = Task.insert(into: context)
                task.priority = 3
                task.title = "Launch"
                return try Task.fetch(in: context, where: Task.priority >= 3 && Task.title.beginsWith("L"), sortedBy: [Task.priority.descending])
            }
            func throughProject(_ context: ManagedObjectContext, _ task: Task) throws -> [Task] {
                let name: String? = task.value(Task.project.name)
                task.setValue(true, for: Task.project.archived)
                return try Task.fetch(in: context, where: Task.project.name == (name ?? "") && Task.project.archived != true,
                                      sortedBy: [Task.project.name.ascending])
            }
            """)
        #expect(right.status == 0, "the right types must compile: \(right.output)")
        for (code, diagnostic) in [
            ("func f() -> ObjectPredicate { Task.priority >= \"three\" }", "cannot be applied to operands of type 'TypedAttribute<Task, Int64>' and 'String'"),
            ("func f() -> ObjectPredicate { Task.title == 5 }", "TypedAttribute<Task, String>"),
            ("func f(_ task: Task) { task.priority = \"high\" }", "cannot assign value of type 'String' to type 'Int64'"),
            ("func f(_ task: Task, _ tag: Tag) { task.project = tag }", "cannot assign value of type 'Tag' to type 'Project'"),
            ("func f() -> ObjectPredicate { Task.done.beginsWith(\"t\") }", "beginsWith"),
            // Through a to-one, the destination's keys keep their types; a to-many ends the path.
            ("func f() -> ObjectPredicate { Task.project.name == 5 }", "TypedAttribute<Task, String>"),
            ("func f() -> ObjectPredicate { Task.project.archived >= \"yes\" }", "TypedAttribute<Task, Bool>"),
            ("func f() -> ObjectPredicate { Task.project.title == \"x\" }", "title"),
            ("func f() -> ObjectPredicate { Task.tags.label == \"x\" }", "label"),
            ("func f() -> [TypedSort<Project>] { [Task.project.name.ascending] }", "TypedSort<Task>"),
        ] {
            let wrong = try Self.typecheck(code)
            #expect(wrong.status != 0 && wrong.output.contains(diagnostic), "\(code) must not compile: \(wrong.output.prefix(600))")
        }
    }

    @Test("inheritance: a sub-entity's view has its parent's properties and views itself as its parent; an abstract entity cannot be inserted")
    func inheritedViews() throws {
        let folder = TemporaryFolder()
        let model = folder.url.appendingPathComponent("media.json")
        try Data(#"""
            {"name": "Media", "entities": [
              {"name": "Medium", "abstract": true, "attributes": [{"name": "catalogNumber", "type": "integer64"}]},
              {"name": "Magazine", "parent": "Medium", "attributes": [{"name": "issue", "type": "integer32"}]},
              {"name": "Atlas", "parent": "Medium", "attributes": [{"name": "region", "type": "string"}]}]}
            """#.utf8).write(to: model)
        let views = folder.url.appendingPathComponent("views")
        let run = try ServerProcess.run(["generate", "swift", "--model", model.path, "--output", views.path, "--access", "internal"])
        #expect(run.status == 0, "\(run)")
        let right = try Self.typecheck("""
            func use(_ context: ManagedObjectContext) throws -> [Medium] {
                let magazine = Magazine.insert(into: context)
                magazine.catalogNumber = 7
                magazine.issue = 12
                let medium: Medium = magazine.asMedium
                _ = medium.catalogNumber
                return try Medium.fetch(in: context, where: Medium.catalogNumber >= 3, sortedBy: [Medium.catalogNumber.ascending])
            }
            """, views: views)
        #expect(right.status == 0, "the right uses must compile: \(right.output)")
        for (code, diagnostic) in [
            ("func f(_ context: ManagedObjectContext) { _ = Medium.insert(into: context) }", "type 'Medium' has no member 'insert'"),
            ("func f(_ medium: Medium) { _ = medium.issue }", "has no member 'issue'"),
            ("func f(_ atlas: Atlas) -> Magazine { atlas.asMagazine }", "has no member 'asMagazine'"),
        ] {
            let wrong = try Self.typecheck(code, views: views)
            #expect(wrong.status != 0 && wrong.output.contains(diagnostic), "\(code) must not compile: \(wrong.output.prefix(600))")
        }
    }
}
