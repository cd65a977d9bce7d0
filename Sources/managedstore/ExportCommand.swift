import ArgumentParser
import Foundation
import ManagedStoreServer

/// `managedstore export --entity E`: every object of an entity as NDJSON.
struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write every object of an entity as NDJSON (one object a line, as GET answers it), from one snapshot of the store.",
        discussion: """
        Example:
          managedstore export --entity Task --demo --store ./data/demo.sqlite > tasks.ndjson
        """)

    @Option(help: "The entity to export.")
    var entity: String

    @Option(help: "The file to write (replaced); standard output when not given.")
    var output: String?

    @OptionGroup var storeOptions: StoreOptions

    func run() throws {
        let coordinator = try storeOptions.openCoordinator()
        let out: FileHandle
        if let output {
            guard FileManager.default.createFile(atPath: output, contents: nil), let handle = FileHandle(forWritingAtPath: output) else {
                CommandLog.error("cannot write \(output)")
                throw ExitCode(2)
            }
            out = handle
        } else {
            out = .standardOutput
        }
        let report = ProgressReport("exported", total: nil)
        do {
            let exporter = try NDJSONExport(coordinator: coordinator, entityName: entity)
            let rows = try exporter.run(write: { try out.write(contentsOf: $0) }) { report.show(rows: $0, done: $0) }
            try out.synchronize()
            report.end(rows: rows)
        } catch let failure as NDJSONFileImport.Failure {
            CommandLog.error(failure.message)
            throw ExitCode(1)
        }
    }
}
