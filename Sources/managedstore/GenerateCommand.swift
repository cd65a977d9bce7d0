import ArgumentParser
import Foundation
import ManagedStore
import ManagedStoreCodegen

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

        @OptionGroup var transformers: TransformerOptions

        @Option(help: "The folder to write <Entity>.swift into (made if missing).")
        var output: String?

        @Option(help: "Instead of --output: one file holding every entity's view (what the build plugin asks for).")
        var file: String?

        @Option(help: "The access level of what the files declare: public or internal.")
        var access = "public"

        func validate() throws {
            guard access == "public" || access == "internal" else { throw ValidationError("--access must be public or internal") }
            guard (output == nil) != (file == nil) else { throw ValidationError("give --output DIR (a file per entity) or --file PATH (one file), not both") }
        }

        func run() throws {
            let loaded = try loadModel(model, transformers)
            let problems = SwiftEntityGenerator.problems(loaded)
            guard problems.isEmpty else {
                CommandLog.error("\(model): cannot be generated as Swift:")
                for problem in problems { CommandLog.write("  \(problem)\n") }
                throw ExitCode(2)
            }
            // One file, or a file per entity: each rewritten only when it changes, so that a
            // build does not compile it again.
            let files = TypedViewFiles.files(of: loaded, file: file.map { URL(fileURLWithPath: $0) },
                                             folder: output.map { URL(fileURLWithPath: $0) }, access: access)
            do {
                try TypedViewFiles.writeChanged(files)
            } catch {
                CommandLog.error("cannot write \(file ?? output ?? ""): \(error.localizedDescription)")
                throw ExitCode(1)
            }
            CommandLog.write("wrote the views of \(loaded.entities.count) entities into \(file ?? output ?? "")\n")
        }
    }
}
