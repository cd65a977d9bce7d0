import ArgumentParser
import Foundation
import ManagedStoreServer

/// `managedstore export --entity E`: every object of an entity as NDJSON.
struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write every object of an entity as NDJSON (one object a line, as GET answers it): from a store file, or through a running server.",
        discussion: """
        Examples:
          managedstore export --entity Task --demo --store ./data/demo.sqlite > tasks.ndjson    # the file, one snapshot
          managedstore export --entity Task --where 'done == NO' --url http://127.0.0.1:8080 --token T > open.ndjson
        """)

    @Option(help: "The entity to export.")
    var entity: String

    @Option(help: "Only the objects matching this predicate (NSPredicate format).")
    var `where`: String?

    @Option(help: "The file to write (replaced); standard output when not given.")
    var output: String?

    @OptionGroup var storeOptions: StoreOptions

    func run() throws {
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
        if let server = storeOptions.server {
            let rows = try RemoteTransfer.export(entity: entity, where: `where`, through: server, write: { try out.write(contentsOf: $0) }) {
                report.show(rows: $0, done: $0)
            }
            try out.synchronize()
            return report.end(rows: rows)
        }
        guard `where` == nil else {
            CommandLog.error("--where needs a server (--url): a store file is exported whole")
            throw ExitCode(2)
        }
        let coordinator = try storeOptions.openCoordinator()
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
