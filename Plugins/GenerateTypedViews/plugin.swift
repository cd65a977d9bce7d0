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
        let tool = try context.tool(named: "managedstore-typed-views")
        var models: [URL: Set<URL>] = [:]  // each model with the files it is made of
        for file in target.sourceFiles {
            if file.url.path.hasSuffix(".model.json") {
                models[file.url, default: []].insert(file.url)
            } else if let bundle = Self.modelBundle(holding: file.url) {
                // SwiftPM on Linux (6.3) lists a bundle as one file, whatever its rule (unhandled,
                // or a resource to copy); a build system that lists the files inside gives each.
                // Either way the model is the outermost bundle, and its inputs every file in it,
                // so that editing the model inside makes the build generate again.
                models[bundle, default: []].formUnion(Self.files(in: file.url))
            }
        }
        return models.keys.sorted { $0.path < $1.path }.map { model in
            let name = model.lastPathComponent.components(separatedBy: ".")[0]
            let output = context.pluginWorkDirectoryURL.appendingPathComponent("\(name)+TypedViews.swift")
            return .buildCommand(
                displayName: "Typed views of \(model.lastPathComponent)",
                executable: tool.url,
                arguments: ["--model", model.path, "--file", output.path, "--access", "internal"],
                inputFiles: (models[model] ?? []).sorted { $0.path < $1.path },
                outputFiles: [output])
        }
    }

    /// The Xcode model that `url` is, or is inside: an `.xcdatamodeld` (a versioned bundle) over
    /// an `.xcdatamodel` (one version) inside it; nil for any other file.
    static func modelBundle(holding url: URL) -> URL? {
        var found: URL?
        var candidate = url
        while candidate.pathComponents.count > 1 {
            switch candidate.pathExtension {
            case "xcdatamodeld": return candidate
            case "xcdatamodel": found = found ?? candidate
            default: break
            }
            candidate = candidate.deletingLastPathComponent()
        }
        return found
    }

    /// `url` itself when it is a file; every regular file under it when it is a folder.
    static func files(in url: URL) -> [URL] {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isFolder), isFolder.boolValue else { return [url] }
        let walk = FileManager.default.enumerator(at: url, includingPropertiesForKeys: [.isRegularFileKey])
        var files: [URL] = []
        while let file = walk?.nextObject() as? URL {
            if (try? file.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true { files.append(file) }
        }
        return files
    }
}
