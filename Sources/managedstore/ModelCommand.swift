import ArgumentParser
import Foundation
import ManagedStore

/// `managedstore model check|describe|convert`: a model file on its own, without a store.
struct ModelCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "model",
        abstract: "Check, describe or convert a model (the JSON model format, or Xcode's .xcdatamodel and .xcdatamodeld).",
        subcommands: [Check.self, Describe.self, Convert.self, Schema.self])

    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check a model: every problem at once, each naming entity and property.",
            discussion: "Exits 0 and prints a summary when the model can be used; otherwise prints every problem and exits 2.")

        @Option(help: "The model: a JSON model file, or an Xcode .xcdatamodel or .xcdatamodeld.")
        var model: String

        @OptionGroup var transformers: TransformerOptions

        func run() throws {
            try checkAgainstSchema()
            let loaded = try loadModel(model, transformers)
            let relationships = loaded.authoredEntities.reduce(0) { $0 + $1.relationships.count }
            let attributes = loaded.authoredEntities.reduce(0) { $0 + $1.attributes.count }
            print("ok: \(loaded.name) version \(loaded.version): \(loaded.entities.count) entities, \(attributes) attributes, \(relationships) relationships")
        }

        /// A JSON model is held against the format's JSON Schema first: every violation, with
        /// where it is, ends the command (exit 2). Xcode's models have no schema to apply.
        private func checkAgainstSchema() throws {
            let url = URL(fileURLWithPath: model)
            guard !["xcdatamodel", "xcdatamodeld"].contains(url.pathExtension.lowercased()),
                  let data = try? Data(contentsOf: url), let json = try? JSONParser().parse([UInt8](data)),
                  let schema = try? JSONParser().parse(Array(ModelJSONSchema.text.utf8)) else { return }
            let violations = JSONSchemaCheck.violations(of: json, against: schema)
            guard !violations.isEmpty else { return }
            CommandLog.error("\(model): the model does not follow the model format's schema (managedstore model schema):")
            for violation in violations { CommandLog.write("  \(violation)\n") }
            throw ExitCode(2)
        }
    }

    struct Schema: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the JSON Schema of the JSON model format (the file openapi/model.schema.json).")

        func run() throws { print(ModelJSONSchema.text) }
    }

    struct Describe: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print a model's entities, attributes and relationships as tables.")

        @Option(help: "The model: a JSON model file, or an Xcode .xcdatamodel or .xcdatamodeld.")
        var model: String

        @OptionGroup var transformers: TransformerOptions

        func run() throws {
            print(ModelDescription.text(of: try loadModel(model, transformers)), terminator: "")
        }
    }

    struct Convert: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Convert a model between the JSON model format and Xcode's .xcdatamodel.",
            discussion: """
            The output's kind follows its name: a path ending in .xcdatamodel is written as the \
            folder Xcode reads (its `contents` file); any other as a JSON model file. Either way, \
            reading the output gives back the same model.
            Examples:
              managedstore model convert --model tracker.json --output Tracker.xcdatamodel
              managedstore model convert --model App.xcdatamodeld --output app.json
            """)

        @Option(help: "The model: a JSON model file, or an Xcode .xcdatamodel or .xcdatamodeld.")
        var model: String

        @OptionGroup var transformers: TransformerOptions

        @Option(help: "Where to write: a path ending in .xcdatamodel, or a JSON file.")
        var output: String

        func run() throws {
            let loaded = try loadModel(model, transformers)
            let url = URL(fileURLWithPath: output)
            do {
                if url.pathExtension.lowercased() == "xcdatamodel" {
                    let contents: String
                    do throws(ModelError) { contents = try loaded.xcodeModelContents() } catch {
                        CommandLog.error("\(model): cannot be written as an Xcode model:")
                        for problem in error.problems { CommandLog.write("  \(problem)\n") }
                        throw ExitCode(2)
                    }
                    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
                    try Data(contents.utf8).write(to: url.appendingPathComponent("contents"), options: .atomic)
                } else {
                    try Data((Self.indented(loaded.jsonValue) + "\n").utf8).write(to: url, options: .atomic)
                }
            } catch let exit as ExitCode {
                throw exit
            } catch {
                CommandLog.error("cannot write \(output): \(error.localizedDescription)")
                throw ExitCode(1)
            }
            CommandLog.write("wrote \(output): \(loaded.name) version \(loaded.version), \(loaded.entities.count) entities\n")
        }

        /// JSON for people to edit: an object's members a line each, and anything that fits
        /// on a short line (an attribute, a list of names) on one.
        static func indented(_ value: JSONValue, _ depth: Int = 0) -> String {
            let line = value.serialized()
            guard line.count > 100 else { return line }
            let pad = String(repeating: "  ", count: depth + 1), end = String(repeating: "  ", count: depth)
            switch value {
            case .object(let members):
                let inner = members.map { pad + JSONValue.string($0.0).serialized() + ": " + indented($0.1, depth + 1) }
                return "{\n" + inner.joined(separator: ",\n") + "\n" + end + "}"
            case .array(let items):
                return "[\n" + items.map { pad + indented($0, depth + 1) }.joined(separator: ",\n") + "\n" + end + "]"
            default:
                return line
            }
        }
    }
}
