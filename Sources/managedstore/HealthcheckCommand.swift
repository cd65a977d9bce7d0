import ArgumentParser
import Foundation

/// `managedstore healthcheck`: exit 0 when the server at `--url` is ready (`/v1/readyz` answers
/// 200), 1 otherwise. The container image's HEALTHCHECK: no curl in the image, so the binary
/// asks itself, over a plain socket (`ServerClient`).
struct HealthcheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "healthcheck",
        abstract: "Exit 0 when the server's /v1/readyz answers 200, else 1 (for a container's HEALTHCHECK).")

    @Option(help: "The server's base URL (http only). Default: http://127.0.0.1 and the port of MANAGEDSTORE_PORT, else 8080.")
    var url: String?

    @Option(help: "Seconds to wait for the answer.")
    var timeout: Double = 5

    func validate() throws {
        guard timeout > 0, timeout <= 300 else { throw ValidationError("--timeout must be above 0 and at most 300 seconds") }
        guard HTTPProbe.Target(url: baseURL) != nil else { throw ValidationError("--url must be http://HOST[:PORT], got \(baseURL)") }
    }

    private var baseURL: String {
        url ?? "http://127.0.0.1:\(ProcessInfo.processInfo.environment["MANAGEDSTORE_PORT"] ?? "8080")"
    }

    func run() throws {
        guard let target = HTTPProbe.Target(url: baseURL) else { throw ExitCode(1) }
        do {
            let status = try ServerClient(target: target, token: nil, timeout: timeout).send("GET", "/v1/readyz").status
            guard status == 200 else {
                FileHandle.standardError.write(Data("managedstore healthcheck: \(baseURL)/v1/readyz answered \(status)\n".utf8))
                throw ExitCode(1)
            }
        } catch let error as HTTPProbe.Failure {
            FileHandle.standardError.write(Data("managedstore healthcheck: \(baseURL): \(error)\n".utf8))
            throw ExitCode(1)
        }
    }
}
