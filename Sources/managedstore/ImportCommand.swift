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
        Through a running server (no --store), the file is streamed as one NDJSON POST: the server's checks, \
        tokens and write queue apply, and its answer says how many objects it stored.
        Examples:
          managedstore import tasks.ndjson --entity Task --demo --store ./data/demo.sqlite
          managedstore import tasks.ndjson --entity Task --url http://127.0.0.1:8080 --token T
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
        let report = ProgressReport("imported", total: total)
        if let server = storeOptions.server {
            let rows = try RemoteTransfer.import(input, entity: entity, through: server) { report.show(rows: 0, done: $0) }
            return report.end(rows: rows)
        }
        let coordinator = try storeOptions.openCoordinator()
        do {
            let importer = try NDJSONFileImport(coordinator: coordinator, entityName: entity)
            let rows = try importer.run(from: input) { report.show(rows: $0.rows, done: $0.bytesRead) }
            report.end(rows: rows)
        } catch let failure as NDJSONFileImport.Failure {
            CommandLog.error("\(file): \(failure.message)")  // the message names the line
            if !failure.problemJSON.isEmpty { CommandLog.write(failure.problemJSON + "\n") }
            throw ExitCode(1)
        }
        try? coordinator.settle()
    }
}
