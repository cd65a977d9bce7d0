import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The real `managedstore` executable, started as a process of its own for one test: what a
/// signal, an exit status or a crash can only be tested on.
final class ServerProcess: @unchecked Sendable {
    // @unchecked Sendable: every stored property is set in init and only read afterwards.
    let process = Process()
    let directory: URL
    private let ownsDirectory: Bool
    let port: UInt16
    private let errors = Pipe()
    private let output = Pipe()
    private var errorText: PipeDrain?

    enum Failure: Error { case noExecutable(String), noBanner(String), timedOut([String]) }

    /// Runs the executable with `arguments` and extra `environment` to its end (at most 60 s);
    /// its exit status, stdout and stderr.
    static func run(_ arguments: [String], environment: [String: String] = [:]) throws -> (status: Int32, stdout: String, stderr: String) {
        let process = Process()
        process.executableURL = try executable
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, given in given }
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let outputText = PipeDrain(output), errorText = PipeDrain(errors)
        let deadline = Date().addingTimeInterval(60)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        guard !process.isRunning else { process.terminate(); throw Failure.timedOut(arguments) }
        _ = outputText.waitForEnd(seconds: 10)
        _ = errorText.waitForEnd(seconds: 10)
        return (process.terminationStatus, outputText.text, errorText.text)
    }

    /// The executable built beside the test bundle (`swift build` builds both).
    static var executable: URL {
        get throws {
            let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            for folder in [beside, beside.deletingLastPathComponent()] {
                let candidate = folder.appendingPathComponent("managedstore")
                if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            }
            throw Failure.noExecutable("no managedstore executable beside \(beside.path): run `swift build` first")
        }
    }

    /// Starts `serve --demo` on a free port with a store file in a new folder, and waits for
    /// the start-up line (which must come at once, though stdout is a pipe).
    /// With `directory`, the store in it is used (a restart), and the folder is left for its
    /// owner to remove.
    /// With `model` (a model file), it serves that model instead of the demo's.
    /// With `store` (a `postgres://` URI), that store instead of a file.
    init(arguments: [String] = [], environment: [String: String] = [:], waitUntilReady: Bool = true, directory given: URL? = nil,
         model: String? = nil, store: String? = nil) throws {
        directory = given ?? FileManager.default.temporaryDirectory.appendingPathComponent("managedstore-process-\(UUID().uuidString)")
        ownsDirectory = given == nil
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        process.executableURL = try Self.executable
        process.arguments = ["serve"] + (model.map { ["--model", $0] } ?? ["--demo"]) + ["--store", store ?? directory.appendingPathComponent("store.sqlite").path,
                             "--port", "0", "--durability", "normal"] + arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, given in given }
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        errorText = PipeDrain(errors)
        // The banner: "managedstore serving Tracker from ... at http://127.0.0.1:PORT  (...)".
        var banner = ""
        let deadline = Date().addingTimeInterval(30)
        while !banner.contains("\n") && Date() < deadline {
            let data = output.fileHandleForReading.availableData
            if data.isEmpty { break }
            banner += String(decoding: data, as: UTF8.self)
        }
        // The server's address follows "at http://" (the store, a postgres:// URI, may name an address too).
        guard let range = banner.range(of: #"at http://127\.0\.0\.1:[0-9]+"#, options: .regularExpression),
              let port = UInt16(banner[range].split(separator: ":").last!) else {
            process.terminate()
            throw Failure.noBanner("no start-up line with the address: \(banner.prefix(300))")
        }
        self.port = port
        // Keep reading stdout so the server never blocks on a full pipe.
        _ = PipeDrain(output)
        if waitUntilReady { try self.waitUntilReady(seconds: 30) }
    }

    /// Polls `/v1/readyz` (the store opens after the port does) until it answers 200.
    func waitUntilReady(seconds: Double) throws {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if let status = try? RawHTTPClient(port: port).request("GET", "/v1/readyz").status, status == 200 { return }
            guard process.isRunning else { throw Failure.noBanner("the server exited before it was ready: \(stderr.suffix(500))") }
            usleep(20_000)
        }
        throw Failure.noBanner("the server was not ready within \(seconds) s")
    }

    deinit {
        if process.isRunning { process.terminate() }
        if ownsDirectory { try? FileManager.default.removeItem(at: directory) }
    }

    var storePath: String { directory.appendingPathComponent("store.sqlite").path }

    /// What the process wrote on stderr so far.
    var stderr: String { errorText?.text ?? "" }

    func signal(_ number: Int32) { kill(process.processIdentifier, number) }

    /// Waits for the process to exit; nil if it did not within `seconds`.
    func waitForExit(seconds: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        return process.isRunning ? nil : process.terminationStatus
    }
}

/// A pipe read to its end by a thread of its own, with blocking reads: what came so far, and
/// whether the end came. Not FileHandle's readabilityHandler: its dispatch source can outlive
/// the descriptor it watches (cancelling is asynchronous), and be woken for whatever opens that
/// number next, a database connection's socket in the PostgreSQL runs, crashing libdispatch's
/// event loop (seen twice).
final class PipeDrain: @unchecked Sendable {
    // @unchecked Sendable: `collected` locks itself; `ended` is a semaphore.
    private let collected = CollectedText()
    private let ended = DispatchSemaphore(value: 0)

    init(_ pipe: Pipe) {
        let handle = pipe.fileHandleForReading
        let thread = Thread { [collected, ended] in
            while true {
                let data = handle.availableData
                if data.isEmpty { break }
                collected.append(data)
            }
            ended.signal()
        }
        thread.start()
    }

    var text: String { collected.text }

    /// Waits at most `seconds` for the end of the pipe; false if it did not come.
    func waitForEnd(seconds: Double) -> Bool { ended.wait(timeout: .now() + seconds) == .success }
}

/// Text gathered from a pipe on another thread.
final class CollectedText: @unchecked Sendable {
    // @unchecked Sendable: `collected` is only touched under `lock`.
    private let lock = NSLock()
    private var collected = ""
    func append(_ data: Data) { lock.lock(); collected += String(decoding: data, as: UTF8.self); lock.unlock() }
    var text: String { lock.lock(); defer { lock.unlock() }; return collected }
}
