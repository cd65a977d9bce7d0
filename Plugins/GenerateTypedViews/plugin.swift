import Foundation
import PackagePlugin

/// At build time, the typed entity views of every model in a target (a `*.model.json` file, an
/// `.xcdatamodel` or an `.xcdatamodeld`), written by `managedstore generate swift` into the
/// build's own folder, one file a model, and compiled with the target: what Xcode's "Class
/// Definition" code generation does for a Core Data model. The views are internal to the target.
@main
struct GenerateTypedViews: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) async throws -> [Command] {
        guard let target = target as? SourceModuleTarget else { return [] }
        let tool = try context.tool(named: "managedstore")
        var models: [URL: [URL]] = [:]  // each model with the files it is made of
        for file in target.sourceFiles {
            if file.url.path.hasSuffix(".model.json") { models[file.url, default: []].append(file.url) }
            // A bundle's files are listed one by one: the model is the folder they are in.
            var url = file.url.deletingLastPathComponent()
            while url.pathComponents.count > 1 {
                if url.pathExtension == "xcdatamodel" || url.pathExtension == "xcdatamodeld" {
                    let parent = url.deletingLastPathComponent()
                    models[parent.pathExtension == "xcdatamodeld" ? parent : url, default: []].append(file.url)
                    break
                }
                url = url.deletingLastPathComponent()
            }
        }
        return models.keys.sorted { $0.path < $1.path }.map { model in
            let name = model.lastPathComponent.components(separatedBy: ".")[0]
            let output = context.pluginWorkDirectoryURL.appendingPathComponent("\(name)+TypedViews.swift")
            return .buildCommand(
                displayName: "Typed views of \(model.lastPathComponent)",
                executable: tool.url,
                arguments: ["generate", "swift", "--model", model.path, "--file", output.path, "--access", "internal"],
                inputFiles: models[model] ?? [],
                outputFiles: [output])
        }
    }
}
