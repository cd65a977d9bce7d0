// The build plugin's tool (Plugins/GenerateTypedViews): one file of a model's typed views, as
// `managedstore generate swift --file` writes it. A tool of its own, over the core alone, so that
// the plugin builds no server, no store and no command line for a package that uses it.
//
//   managedstore-typed-views --model MODEL --file OUTPUT [--access internal|public]

import Foundation
import ManagedStoreCodegen
import ManagedStoreCore

func fail(_ message: String, status: Int32 = 2) -> Never {
    FileHandle.standardError.write(Data("managedstore-typed-views: \(message)\n".utf8))
    exit(status)
}

var options: [String: String] = ["--access": "internal"]
var arguments = CommandLine.arguments.dropFirst()
while let name = arguments.popFirst() {
    guard ["--model", "--file", "--access"].contains(name), let value = arguments.popFirst() else {
        fail("usage: managedstore-typed-views --model MODEL --file OUTPUT [--access internal|public] (not \(name))")
    }
    options[name] = value
}
guard let modelPath = options["--model"], let filePath = options["--file"] else { fail("--model and --file are required") }
guard let access = options["--access"], access == "internal" || access == "public" else { fail("--access must be internal or public") }

let model: ManagedObjectModel
do throws(ModelError) {
    model = try ManagedObjectModel(contentsOf: URL(fileURLWithPath: modelPath))
} catch {
    fail("\(modelPath): the model cannot be used:\n" + error.problems.map { "  \($0)" }.joined(separator: "\n"))
}
let problems = SwiftEntityGenerator.problems(model)
guard problems.isEmpty else {
    fail("\(modelPath): cannot be generated as Swift:\n" + problems.map { "  \($0)" }.joined(separator: "\n"))
}
do {
    try TypedViewFiles.writeChanged(TypedViewFiles.files(of: model, file: URL(fileURLWithPath: filePath), folder: nil, access: access))
} catch {
    fail("cannot write \(filePath): \(error.localizedDescription)", status: 1)
}
