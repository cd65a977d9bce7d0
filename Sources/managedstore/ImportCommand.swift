import ArgumentParser
import Foundation
import ManagedStoreServer

/// `managedstore import FILE.ndjson --entity E`: NDJSON into a store, as the API's NDJSON POST.
struct ImportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Import an NDJSON file (one object a line) into a store, in chunks of 1000 lines, each one transaction.",
        discussion: """
        Lines are checked as the API checks a POST (unknown properties, types, the model's rules). A bad line \
        stops the import: its chunk is not stored, the chunks before it are, and the command says which line \
        failed and how many rows were stored, so that the rest can be imported after fixing it (exit 1).
        Example:
          managedstore import tasks.ndjson --entity Task --demo --store ./data/demo.sqlite
        """)

    @Argument(help: "The NDJSON file; - for standard input.")
    var file: String

    @Option(help: "The entity every line is an object of.")
    var entity: String

    @OptionGroup var storeOptions: StoreOptions

    func run() throws {
        let input: FileHandle
        var total: Int?
        if file == "-" {
            input = .standardInput
        } else {
            guard let handle = FileHandle(forReadingAtPath: file) else {
                CommandLog.error("cannot read \(file)")
                throw ExitCode(2)
            }
            input = handle
            total = (try? FileManager.default.attributesOfItem(atPath: file)[.size] as? Int) ?? nil
        }
        let coordinator = try storeOptions.openCoordinator()
        let report = ProgressReport("imported", total: total)
        do {
            let importer = try NDJSONFileImport(coordinator: coordinator, entityName: entity)
            let rows = try importer.run(from: input) { report.show(rows: $0.rows, done: $0.bytesRead) }
            report.end(rows: rows)
        } catch let failure as NDJSONFileImport.Failure {
            CommandLog.error("\(file): \(failure.message)")  // the message names the line
            if !failure.problemJSON.isEmpty { CommandLog.write(failure.problemJSON + "\n") }
            throw ExitCode(1)
        }
        try? coordinator.checkpoint()
    }
}
