import ArgumentParser

@main
struct ManagedStoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "managedstore",
        abstract: "Core Data's object store for Linux: a Swift library and its command line.",
        subcommands: [ServeCommand.self, DemoCommand.self])
}
