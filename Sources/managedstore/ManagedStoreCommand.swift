import ArgumentParser

@main
struct ManagedStoreCommand: AsyncParsableCommand {
    /// This build's version, in the start-up line and `--version`.
    static let version = "0.9.0"

    static let configuration = CommandConfiguration(
        commandName: "managedstore",
        abstract: "Core Data's object store for Linux: a Swift library and its command line.",
        version: version,
        subcommands: [ServeCommand.self, ImportCommand.self, ExportCommand.self, DemoCommand.self])
}
