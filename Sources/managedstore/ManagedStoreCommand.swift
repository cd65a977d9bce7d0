import ArgumentParser
import Foundation

@main
struct ManagedStoreCommand: AsyncParsableCommand {
    /// This build's version, in the start-up line and `--version`.
    static let version = "0.9.0"

    static let configuration = CommandConfiguration(
        commandName: "managedstore",
        abstract: "Core Data's object store for Linux: a Swift library and its command line.",
        version: version,
        subcommands: [ServeCommand.self, ModelCommand.self, GenerateCommand.self, ImportCommand.self, ExportCommand.self, DemoCommand.self, TokenCommand.self,
                      HealthcheckCommand.self, MigrateCommand.self, CheckCommand.self])

    /// Parses the command line with the settings the environment adds (EnvironmentArguments.swift),
    /// then runs the command.
    static func main() async {
        let merged: [String]
        do {
            merged = try EnvironmentArguments.merge(Array(CommandLine.arguments.dropFirst()),
                                                    environment: ProcessInfo.processInfo.environment).arguments
        } catch {
            FileHandle.standardError.write(Data("managedstore: \(error)\n".utf8))
            Foundation.exit(64)  // EX_USAGE, as ArgumentParser exits for a bad flag
        }
        do {
            var command = try parseAsRoot(merged)
            if var asynchronous = command as? AsyncParsableCommand {
                try await asynchronous.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: error)
        }
    }
}
