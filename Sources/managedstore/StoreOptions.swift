import ArgumentParser
import Foundation
import ManagedStore

/// Where the objects of `import` and `export` are: a store file opened here (`--store` with
/// `--model` or `--demo`), or else a running server, through its API (`--url`, by default
/// http://127.0.0.1:8080, with `--token`).
struct StoreOptions: ParsableArguments {
    @Option(help: "The model: a JSON model file, or an Xcode .xcdatamodel or .xcdatamodeld, with --store. Use --demo for the built-in task tracker.")
    var model: String?

    @OptionGroup var transformers: TransformerOptions

    @Flag(help: "Use the built-in task-tracker model (Project, Task, Tag), with --store.")
    var demo = false

    @Option(help: "The SQLite store file to open here (created with its folder if missing). Without it, the command goes through a running server (--url).")
    var store: String?

    @Option(help: "A running server's base URL (http), used when no --store is given.")
    var url: String?

    @Option(help: "The bearer token for the server (MANAGEDSTORE_TOKEN keeps it out of the process list).")
    var token: String?

    func validate() throws {
        if let store {
            guard url == nil, token == nil else { throw ValidationError("--store opens a store file here; --url and --token are for going through a server: give one or the other") }
            guard (model != nil) != demo else { throw ValidationError("give the model: --model FILE, or --demo for the built-in task tracker (not both)") }
            guard store != ":memory:" else { throw ValidationError("--store must be a file: an in-memory store would be gone when the command ends") }
        } else {
            guard model == nil, !demo else { throw ValidationError("--model and --demo go with --store; through a server (--url) the server's model is used") }
            guard HTTPProbe.Target(url: baseURL) != nil else { throw ValidationError("--url must be http://HOST[:PORT], got \(baseURL)") }
        }
    }

    var baseURL: String { url ?? "http://127.0.0.1:8080" }

    /// The server to go through, when no store file is named.
    var server: ServerClient? {
        guard store == nil, let target = HTTPProbe.Target(url: baseURL) else { return nil }
        return ServerClient(target: target, token: token)
    }

    /// The store's coordinator; a model or store that cannot be opened ends the command (exit 2 or 1).
    func openCoordinator() throws -> PersistentStoreCoordinator {
        guard let store else { throw ValidationError("no --store given") }
        let loaded = try loadModel(model, transformers)
        do {
            return try PersistentStoreCoordinator(model: loaded, store: .path(store))
        } catch {
            CommandLog.error("\(store): \(error)")
            throw ExitCode(1)
        }
    }
}

/// Kept so that scripts written for earlier versions still run: every Transformable of an
/// Xcode model is now read as the bytes its transformer writes, with no flag.
struct TransformerOptions: ParsableArguments {
    @Option(help: ArgumentHelp("No longer needed (ignored): every Transformable attribute of an Xcode model is kept as the bytes its transformer writes.",
                               valueName: "names", visibility: .hidden))
    var binaryTransformers: String?
}

/// The model at `path` (the JSON model format, or an Xcode `.xcdatamodel` or `.xcdatamodeld`),
/// or the built-in task tracker when there is none; a model that cannot be read or is not
/// valid ends the command (exit 2), every problem on its own line.
func loadModel(_ path: String?, _ transformers: TransformerOptions) throws -> ManagedObjectModel {
    guard let path else { return .taskTracker() }
    do throws(ModelError) {
        return try ManagedObjectModel(contentsOf: URL(fileURLWithPath: path))
    } catch {
        CommandLog.error("\(path): the model cannot be used:")
        for problem in error.problems { CommandLog.write("  \(problem)\n") }
        throw ExitCode(2)
    }
}

/// Messages of the command line on stderr, written at once.
enum CommandLog {
    static func error(_ message: String) { write("managedstore: \(message)\n") }
    static func write(_ text: String) { FileHandle.standardError.write(Data(text.utf8)) }
    static var isTerminal: Bool { isatty(STDERR_FILENO) == 1 }
}

/// Progress on stderr: a bar redrawn in place on a terminal, otherwise (a log, a pipe) a plain
/// line every few seconds and one at the end.
final class ProgressReport {
    private let verb: String
    private let total: Int?
    private let started = Date()
    private var lastShown = Date.distantPast
    private let terminal = CommandLog.isTerminal

    /// `total`: the amount `show`'s `done` runs to (bytes of the input, say), when known.
    init(_ verb: String, total: Int?) {
        self.verb = verb
        self.total = total
    }

    func show(rows: Int, done: Int) {
        let now = Date()
        guard now.timeIntervalSince(lastShown) >= (terminal ? 0.1 : 5) else { return }
        lastShown = now
        CommandLog.write(line(rows: rows, done: done) + (terminal ? "\r" : "\n"))
    }

    func end(rows: Int) {
        let seconds = max(Date().timeIntervalSince(started), 0.001)
        let rate = Int(Double(rows) / seconds)
        CommandLog.write((terminal ? "\u{1B}[2K" : "") + "\(verb) \(rows) rows in \(String(format: "%.1f", seconds)) s (\(rate) rows/s)\n")
    }

    private func line(rows: Int, done: Int) -> String {
        guard let total, total > 0 else { return "\(verb) \(rows) rows" }
        let fraction = min(1, Double(done) / Double(total))
        guard terminal else { return "\(verb) \(rows) rows (\(Int(fraction * 100))%)" }
        let width = 30
        let filled = Int(fraction * Double(width))
        return "[" + String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled) + "] "
            + "\(Int(fraction * 100))% \(rows) rows"
    }
}
