import ArgumentParser
import Foundation
import ManagedStore
import ManagedStoreServer

/// `managedstore serve`: the REST API of a model's store over HTTP.
struct ServeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve a store over HTTP: reads on a pool of read contexts, writes through one group-committing write queue.",
        discussion: """
        Examples:
          managedstore serve --model tracker.json --store ./data/tracker.sqlite
          managedstore serve --demo --store :memory: --port 0
        The API is described at /v1/openapi.yaml once the server runs.
        """)

    @Option(help: "The model file (JSON model format). Use --demo for the built-in task tracker.")
    var model: String?

    @Flag(help: "Use the built-in task-tracker model (Project, Task, Tag).")
    var demo = false

    @Option(help: "The SQLite store file (created with its folder if missing), or :memory: for an in-memory store.")
    var store: String

    @Option(help: "The address to listen on (IPv4).")
    var host = "127.0.0.1"

    @Option(help: "The port to listen on; 0 picks a free one (printed at start).")
    var port: UInt16 = 8080

    @Option(help: "Read contexts for GET requests, each with its own SQLite connection.")
    var readContexts = 4

    @Option(help: "The merge policy when a request names none: error, store-trump, object-trump, overwrite or rollback (only error is implemented yet).")
    var mergePolicy = "error"

    @Option(help: "The largest request body accepted, in bytes (larger is 413, refused before it is all read).")
    var maxBodyBytes = 8_388_608

    @Option(help: "full: a 2xx write survives a power cut (WAL, synchronous=FULL). normal: it survives a crash of the process.")
    var durability = "full"

    @Flag(help: "Refuse PATCH, PUT and DELETE that do not name the version they are based on (428).")
    var requireIfMatch = false

    @Flag(help: "Commit each write alone instead of grouping waiting writes in one transaction (for comparison).")
    var noGroupCommit = false

    @Option(help: "libmicrohttpd threads (at least 2).")
    var threads = 4

    @Option(help: "Seconds an idle or half-sent connection is kept.")
    var connectionTimeout = 30

    func validate() throws {
        guard (model == nil) != !demo else { throw ValidationError("give --model FILE or --demo") }
        guard ServiceConfiguration.mergePolicies.contains(mergePolicy) else {
            throw ValidationError("--merge-policy must be one of \(ServiceConfiguration.mergePolicies.joined(separator: ", "))")
        }
        guard StoreDescription.Durability(rawValue: durability) != nil else { throw ValidationError("--durability must be full or normal") }
        guard readContexts >= 1, maxBodyBytes >= 1, threads >= 1, connectionTimeout >= 1 else {
            throw ValidationError("--read-contexts, --max-body-bytes, --threads and --connection-timeout must be positive")
        }
    }

    func run() throws {
        let loaded: ManagedObjectModel
        if let model {
            do {
                let data = try Data(contentsOf: URL(fileURLWithPath: model))
                loaded = try ManagedObjectModel(jsonData: [UInt8](data))
            } catch let error as ModelError {
                FileHandle.standardError.write(Data("managedstore: \(model): \(error)\n".utf8))
                throw ExitCode(2)
            } catch {
                FileHandle.standardError.write(Data("managedstore: cannot read \(model): \(error.localizedDescription)\n".utf8))
                throw ExitCode(2)
            }
        } else {
            loaded = .taskTracker()
        }
        let coordinator: PersistentStoreCoordinator
        do {
            coordinator = try PersistentStoreCoordinator(model: loaded, store: .path(store, readerCount: readContexts,
                                                                                      durability: StoreDescription.Durability(rawValue: durability)!))
        } catch {
            FileHandle.standardError.write(Data("managedstore: \(error)\n".utf8))
            throw ExitCode(1)
        }
        var service = ServiceConfiguration()
        service.readContexts = readContexts
        service.mergePolicy = mergePolicy
        service.requireIfMatch = requireIfMatch
        service.groupCommit = !noGroupCommit
        var http = HTTPServer.Configuration()
        http.host = host
        http.port = port
        http.threads = threads
        http.maxBodyBytes = maxBodyBytes
        http.connectionTimeout = connectionTimeout
        let server = ManagedStoreServer(coordinator: coordinator, service: service, http: http)
        do { try server.start() } catch {
            FileHandle.standardError.write(Data("managedstore: \(error)\n".utf8))
            throw ExitCode(1)
        }
        // Listening on every address (in a container): the commands to try go to this machine.
        let base = "http://\(host == "0.0.0.0" ? "127.0.0.1" : host):\(server.port)"
        print("managedstore serving \(loaded.name) from \(store) at http://\(host):\(server.port)  (durability \(durability), \(readContexts) read contexts)")
        print("try:")
        print("  curl -s \(base)/v1/model")
        print("  curl -s -X POST \(base)/v1/objects/Project -H 'Content-Type: application/json' -d '{\"name\": \"Apollo\"}'")
        print("  curl -s '\(base)/v1/objects/Project?where=name%20BEGINSWITH%5Bc%5D%20%22ap%22'")
        FileHandle.standardOutput.synchronizeFile()
        SignalWaiter.waitForTermination()
        print("managedstore: stopping")
        server.stop()
    }
}
