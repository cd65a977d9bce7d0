import Foundation
import ManagedStoreCore

/// The files of a model's typed views, and writing them so that a build compiles only what changed.
package enum TypedViewFiles {
    /// One file holding every entity's view (`file`), or a file per entity in `folder`.
    package static func files(of model: ManagedObjectModel, file: URL?, folder: URL?, access: String) -> [(URL, String)] {
        if let file { return [(file, SwiftEntityGenerator.combinedFile(of: model, access: access))] }
        let folder = folder ?? URL(fileURLWithPath: ".")
        return model.entities.map { (folder.appendingPathComponent("\($0.name).swift"), SwiftEntityGenerator.file(for: $0, of: model, access: access)) }
    }

    /// Writes each file whose text differs from what is there: an unchanged file keeps its
    /// date, so the build that asked for it does not compile it again.
    package static func writeChanged(_ files: [(URL, String)]) throws {
        for (url, text) in files {
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            if (try? String(contentsOf: url, encoding: .utf8)) != text { try Data(text.utf8).write(to: url, options: .atomic) }
        }
    }
}
