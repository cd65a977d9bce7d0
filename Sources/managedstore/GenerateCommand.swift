import ArgumentParser
import Foundation
import ManagedStore

/// `managedstore generate swift --model M --output DIR`: typed entity views for a model.
struct GenerateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "generate",
        abstract: "Generate code from a model.",
        subcommands: [Swift.self])

    struct Swift: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write a Swift file per entity: its typed view (TypedObject), with typed properties, keys, fetches and inserts.",
            discussion: """
            Each file declares a struct named after its entity that wraps a ManagedObject: \
            `task.title`, `task.project`, `Task.insert(into: context)`, \
            `Task.fetch(in: context, where: Task.priority >= 3, sortedBy: [Task.title.ascending])`. \
            A comparison of a key with a value of another type does not compile. Files of \
            entities the model no longer has are not removed.
            Example:
              managedstore generate swift --model models/Tracker.xcdatamodeld --output Sources/App/Model
            """)

        @Option(help: "The model: a JSON model file, or an Xcode .xcdatamodel or .xcdatamodeld.")
        var model: String

        @Option(help: "The folder to write <Entity>.swift into (made if missing).")
        var output: String

        @Option(help: "The access level of what the files declare: public or internal.")
        var access = "public"

        func validate() throws {
            guard access == "public" || access == "internal" else { throw ValidationError("--access must be public or internal") }
        }

        func run() throws {
            let loaded = try loadModel(model)
            let problems = SwiftEntityGenerator.problems(loaded)
            guard problems.isEmpty else {
                CommandLog.error("\(model): cannot be generated as Swift:")
                for problem in problems { CommandLog.write("  \(problem)\n") }
                throw ExitCode(2)
            }
            let folder = URL(fileURLWithPath: output)
            do {
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                for entity in loaded.entities {
                    let text = SwiftEntityGenerator.file(for: entity, of: loaded, access: access)
                    let file = folder.appendingPathComponent("\(entity.name).swift")
                    // Unchanged files are left as they are, so that a build does not redo them.
                    if (try? String(contentsOf: file, encoding: .utf8)) != text { try Data(text.utf8).write(to: file, options: .atomic) }
                }
            } catch {
                CommandLog.error("cannot write into \(output): \(error.localizedDescription)")
                throw ExitCode(1)
            }
            CommandLog.write("wrote \(loaded.entities.count) files into \(output)\n")
        }
    }
}
