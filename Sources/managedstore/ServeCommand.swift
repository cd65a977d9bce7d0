import ArgumentParser
import Foundation
import Logging
import ManagedStore
import ManagedStoreHTTP
import ManagedStoreOpenAPI
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
          managedstore serve --demo --store postgres://app@db:5432/app --tokens-file tokens.json --host 0.0.0.0
        The API is described at /v1/openapi.yaml once the server runs.
        """)

    @Option(help: "The model: a JSON model file, or an Xcode .xcdatamodel or .xcdatamodeld. Use --demo for the built-in task tracker.")
    var model: String?

    @OptionGroup var transformers: TransformerOptions

    @Flag(help: "Use the built-in task-tracker model (Project, Task, Tag).")
    var demo = false

    @Option(help: "The SQLite store file (created with its folder if missing), :memory: for an in-memory store, or a PostgreSQL URI (postgres://user@host:5432/db; the password from the URI, PGPASSWORD or ~/.pgpass, never shown): any number of servers may share one database.")
    var store: String

    @Option(help: "The address to listen on (IPv4).")
    var host = "127.0.0.1"

    @Option(help: "The port to listen on; 0 picks a free one (printed at start).")
    var port: UInt16 = 8080

    @Option(help: "Read contexts for GET requests, each with its own SQLite connection.")
    var readContexts = 4

    @Option(help: "The merge policy when a request names none: error, store-trump, object-trump, overwrite or rollback.")
    var mergePolicy = "error"

    @Option(help: "The largest request body accepted, in bytes (larger is 413, refused before it is all read).")
    var maxBodyBytes = 8_388_608

    @Option(help: "full: a 2xx write survives a power cut (WAL, synchronous=FULL). normal: it survives a crash of the process.")
    var durability = "full"

    @Flag(help: "Refuse PATCH, PUT and DELETE that do not name the version they are based on (428).")
    var requireIfMatch = false

    @Flag(help: "Commit each write alone instead of grouping waiting writes in one transaction (for comparison).")
    var noGroupCommit = false

    @Flag(help: "Record no persistent history (to measure its cost): the change feed stays empty, and merge policies count every property as changed by the store.")
    var noHistory = false

    @Option(help: "libmicrohttpd threads (at least 2).")
    var threads = 4

    @Option(help: "Seconds an idle or half-sent connection is kept.")
    var connectionTimeout = 30

    @Option(help: "Seconds a request's head (its line and headers) may take to arrive in full from its first byte; then the connection is closed.")
    var headerTimeout = 10

    @Option(help: "Connections held at once (less if the file limit is lower; the start-up line says). When full, a new connection takes the place of the one that has waited longest for a request.")
    var maxConnections = 16_384

    @Option(help: "Connections one client address may hold; more are closed as they come. 0: no limit, for a server behind a reverse proxy (every client then has the proxy's address).")
    var maxConnectionsPerClient = 64

    @Option(help: "Seconds a fetch or count may run before it is stopped and answered 503 query-timeout.")
    var queryTimeout: Double = 5

    @Option(help: "Bytes of request bodies held in memory across all connections at once; beyond it requests are answered 503 with Retry-After.")
    var maxInflightBodyBytes = 268_435_456

    @Option(help: "Live queries (GET /v1/objects/{Entity}/live streams) this server holds at once; one more is answered 503 with Retry-After.")
    var maxLiveQueries = 1000

    @Option(help: "Bytes a live query's client may leave unread (its changes are squashed meanwhile) before its stream is closed; it then resumes with Last-Event-ID.")
    var maxLiveLagBytes = 8_388_608

    @Option(help: "Seconds one request body may take to arrive, however slowly it trickles in (then the connection is closed).")
    var bodyTimeout = 60

    @Option(help: "Seconds to finish on SIGTERM or SIGINT: answer what was received, commit, checkpoint, exit.")
    var shutdownTimeout: Double = 10

    @Option(help: "How long the change history is kept: a whole number of s, m, h or d (90m, 7d), or forever. Older saves are pruned; reading the change feed from before them is 410.")
    var historyRetention = "7d"

    @Option(help: "How long a write sent with an Idempotency-Key is remembered: a retry within it gets the stored answer; a whole number of s, m, h or d (24h, 7d). Expired keys are deleted in the background.")
    var idempotencyTtl = "24h"

    @Option(help: "A JSON file of the bearer tokens accepted: {\"tokens\": [{\"name\", \"sha256\", \"scopes\": [\"read\", \"write:Book\", \"admin\"]}]} (make entries with `managedstore token new`).")
    var tokensFile: String?

    @Flag(help: "Serve every address without tokens. Without it and without tokens, a server on an address other than loopback makes tokens.json beside the store, with one admin token printed once.")
    var insecureOpen = false

    @Option(help: "The form of the log lines on stderr: text (logfmt) or json (one object a line).")
    var logFormat = "text"

    @Option(help: "on: one log line per request on stderr (written in batches, within 100 ms); off: none, for those who log at a proxy.")
    var logRequests = "on"

    @Flag(help: "Print the effective settings and where each came from (command line, environment, default), secrets masked, and exit.")
    var printConfig = false

    /// The connection limits in force, for the start-up line: `connections 16384 (64 per client)`.
    private func connectionLimits(_ http: HTTPServer) -> String {
        let perClient = maxConnectionsPerClient == 0 ? "no limit per client" : "\(maxConnectionsPerClient) per client"
        let lowered = http.connectionLimit < maxConnections ? ", fewer than --max-connections: the file limit is \(http.fileLimit)" : ""
        return "connections \(http.connectionLimit) (\(perClient)\(lowered))"
    }

    func validate() throws {
        guard (model == nil) != !demo else { throw ValidationError("give --model FILE or --demo") }
        guard MergePolicy(name: mergePolicy) != nil else {
            throw ValidationError("--merge-policy must be one of \(MergePolicy.builtIn.map(\.name).joined(separator: ", "))")
        }
        guard HistoryRetention.Setting(historyRetention) != nil else {
            throw ValidationError("--history-retention must be a whole number of s, m, h or d (7d, 12h), from 1s to 36500d, or forever")
        }
        guard DurationText.parse(idempotencyTtl) != nil else {
            throw ValidationError("--idempotency-ttl must be a whole number of s, m, h or d (24h, 90m), from 1s to 36500d")
        }
        guard StoreDescription.Durability(rawValue: durability) != nil else { throw ValidationError("--durability must be full or normal") }
        guard LineLogHandler.Format(rawValue: logFormat) != nil else { throw ValidationError("--log-format must be text or json") }
        guard ["on", "off"].contains(logRequests) else { throw ValidationError("--log-requests must be on or off") }
        guard readContexts >= 1, maxBodyBytes >= 1, threads >= 1, connectionTimeout >= 1, maxInflightBodyBytes >= 1, bodyTimeout >= 1 else {
            throw ValidationError("--read-contexts, --max-body-bytes, --threads, --connection-timeout, --max-inflight-body-bytes and --body-timeout must be positive")
        }
        guard threads <= 1_024, readContexts <= 1_024, connectionTimeout <= 86_400, bodyTimeout <= 86_400 else {
            throw ValidationError("--threads and --read-contexts are at most 1024, --connection-timeout and --body-timeout at most 86400 seconds")
        }
        guard (1...86_400).contains(headerTimeout) else { throw ValidationError("--header-timeout must be from 1 to 86400 seconds") }
        guard (1...1_048_576).contains(maxConnections) else { throw ValidationError("--max-connections must be from 1 to 1048576") }
        guard (0...1_048_576).contains(maxConnectionsPerClient) else {
            throw ValidationError("--max-connections-per-client must be from 0 (no limit) to 1048576")
        }
        guard (1...1_048_576).contains(maxLiveQueries) else { throw ValidationError("--max-live-queries must be from 1 to 1048576") }
        guard maxLiveLagBytes >= 65_536 else { throw ValidationError("--max-live-lag-bytes must be at least 65536") }
        guard queryTimeout > 0, queryTimeout <= 86_400, shutdownTimeout >= 0, shutdownTimeout <= 86_400 else {
            throw ValidationError("--query-timeout must be above 0 and --shutdown-timeout 0 or more (seconds, at most a day)")
        }
    }

    func run() throws {
        if printConfig {
            FileHandle.standardOutput.write(Data(EffectiveConfiguration.text(of: self).utf8))
            return
        }
        let signals = SignalWaiter()
        let format = LineLogHandler.Format(rawValue: logFormat) ?? .text
        LoggingSystem.bootstrap { _ in LineLogHandler(format: format) }
        let logger = Logger(label: "managedstore")
        let loaded = try loadModel(model, transformers)
        var description = StoreDescription.path(store, readerCount: readContexts, durability: StoreDescription.Durability(rawValue: durability) ?? .full)
        description.recordsHistory = !noHistory
        description.idempotencyKeyLifetime = DurationText.parse(idempotencyTtl) ?? .seconds(86_400)
        var service = ServiceConfiguration()
        service.logger = logger
        if logRequests == "on" { service.requestLog = RequestLog(format: format) }
        let (tokens, tokensNotice) = try accessTokens()
        service.accessTokens = tokens
        service.mergePolicy = MergePolicy(name: mergePolicy) ?? .error
        service.requireIfMatch = requireIfMatch
        service.groupCommit = !noGroupCommit
        service.queryTimeout = .milliseconds(Int64(queryTimeout * 1000))
        service.historyRetention = HistoryRetention.Setting(historyRetention) ?? .sevenDays
        service.maxLiveQueries = maxLiveQueries
        service.maxLiveLagBytes = maxLiveLagBytes
        var http = HTTPServer.Configuration()
        http.host = host
        http.port = port
        http.threads = threads
        http.maxBodyBytes = maxBodyBytes
        http.connectionTimeout = connectionTimeout
        http.headerTimeout = headerTimeout
        http.maxConnections = maxConnections
        http.maxConnectionsPerClient = maxConnectionsPerClient
        http.maxInflightBodyBytes = maxInflightBodyBytes
        http.bodyTimeout = bodyTimeout
        // Not an option: only the tests that compare the two ways of sending a stream set it.
        http.handsOffStreams = ProcessInfo.processInfo.environment["MANAGEDSTORE_STREAMS_THROUGH_LIBMICROHTTPD"] != "1"
        // The port opens first; the store is opened (and migrated) on a thread of its own, so
        // /v1/healthz answers at once and /v1/readyz says 503 until the store is ready.
        let storeDescription = description
        let server = ManagedStoreServer(opening: {
            logger.info("opening the store", metadata: ["store": .string(shownStore)])
            let coordinator = try PersistentStoreCoordinator(model: loaded, store: storeDescription)
            if !coordinator.appliedMigration.isEmpty {
                logger.info("migrated", metadata: ["steps": .array(coordinator.appliedMigration.steps.map { .string($0.description) })])
            }
            return coordinator
        }, service: service, http: http)
        do {
            try server.start(listening: { port in
                // The first line on stderr, at once and before the store's own lines: where a
                // container's log starts.
                FileHandle.standardError.write(Data(("managedstore \(ManagedStoreCommand.version) listening on http://\(host):\(port) "
                    + "model \(loaded.name) store \(shownStore) \(connectionLimits(server.http))\n").utf8))
                if let tokensNotice { FileHandle.standardError.write(Data(tokensNotice.utf8)) }
            }, failed: { error in
                // Nothing can be served: say why and leave (the port closes with the process).
                logger.critical("the store could not be opened", metadata: ["error": .string("\(error)")])
                LogSink.standardError.append("managedstore: \(error)\n")
                Glibc.exit(1)  // flushes the log's sink (at exit)
            })
        } catch {
            FileHandle.standardError.write(Data("managedstore: \(error)\n".utf8))
            // The token made for this store is shown once: even when the port could not open.
            if let tokensNotice { FileHandle.standardError.write(Data(tokensNotice.utf8)) }
            throw ExitCode(1)
        }
        // Listening on every address (in a container): the commands to try go to this machine.
        let base = "http://\(host == "0.0.0.0" ? "127.0.0.1" : host):\(server.port)"
        if insecureOpen && service.accessTokens.isEmpty && !Self.isLoopback(host) {
            say("managedstore: --insecure-open: anyone who reaches \(host):\(server.port) may read and write, without a token")
        }
        let storeSettings = StoreDescription.isPostgresURI(store) ? "PostgreSQL" : "durability \(durability)"
        say("managedstore serving \(loaded.name) from \(shownStore) at http://\(host):\(server.port)  (\(storeSettings), \(readContexts) read contexts)")
        for line in ModelNotes.lines(for: loaded) { say(line) }
        say("try:")
        for line in StartupExamples.lines(for: loaded, base: base) { say("  " + line) }
        let signal = signals.wait()
        logger.info("stopping", metadata: ["signal": .string(signal), "timeout_s": .stringConvertible(shutdownTimeout)])
        say("managedstore: stopping (answering what was received, then committing and checkpointing)")
        let started = Date()
        server.stop(timeout: shutdownTimeout)
        // Every request line is out before the last line.
        logger.info("stopped", metadata: ["after_ms": .stringConvertible(Int(Date().timeIntervalSince(started) * 1000))])
        LogSink.standardError.flush()
        say("managedstore: stopped")
    }

    /// The tokens to require: from `--tokens-file`; none on loopback or with `--insecure-open`;
    /// otherwise those of `tokens.json` beside the store, made with one admin token if missing,
    /// with the notice that shows that token once (written after the log's first line).
    private func accessTokens() throws -> (tokens: [AccessToken], notice: String?) {
        do {
            if let tokensFile { return (try TokensFile.load(path: tokensFile), nil) }
            if insecureOpen || Self.isLoopback(host) { return ([], nil) }
            // No file to keep tokens beside: an in-memory store, or a database that many
            // servers share (tokens are configuration, given to each of them).
            guard store != ":memory:" else {
                FileHandle.standardError.write(Data("managedstore: an in-memory store on \(host) needs --tokens-file or --insecure-open\n".utf8))
                throw ExitCode(2)
            }
            guard !StoreDescription.isPostgresURI(store) else {
                FileHandle.standardError.write(Data("managedstore: a postgres:// store on \(host) needs --tokens-file or --insecure-open\n".utf8))
                throw ExitCode(2)
            }
            let beside = URL(fileURLWithPath: store).deletingLastPathComponent().appendingPathComponent("tokens.json")
            if FileManager.default.fileExists(atPath: beside.path) { return (try TokensFile.load(path: beside.path), nil) }
            let (token, entry) = TokensFile.newToken(name: "admin", scopes: [AccessScope(.admin)])
            try FileManager.default.createDirectory(at: beside.deletingLastPathComponent(), withIntermediateDirectories: true)
            guard FileManager.default.createFile(atPath: beside.path, contents: Data("{\"tokens\": [\(entry)]}\n".utf8),
                                                 attributes: [.posixPermissions: 0o600]) else {
                FileHandle.standardError.write(Data("managedstore: cannot write \(beside.path)\n".utf8))
                throw ExitCode(1)
            }
            let notice = "managedstore: no tokens were configured and \(host) is not loopback: made \(beside.path) "
                + "with one admin token, shown this once (only its SHA-256 is kept):\n  \(token)\n"
            return (try TokensFile.load(path: beside.path), notice)
        } catch let error as TokensFileError {
            FileHandle.standardError.write(Data("managedstore: \(error)\n".utf8))
            throw ExitCode(64)
        }
    }

    /// The store as it may be shown: a PostgreSQL URI without its password.
    private var shownStore: String { StoreDescription.redacted(store) }

    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }

    /// Writes one line to stdout at once. A container's log is a pipe, where `print` would
    /// keep the start-up lines in a buffer until the process exits.
    private func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }
}
