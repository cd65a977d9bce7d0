import ArgumentParser
import Foundation

/// Settings from the environment: every option and flag of a command may also be given as
/// `MANAGEDSTORE_` + its name in upper snake case (`--max-body-bytes` ← `MANAGEDSTORE_MAX_BODY_BYTES`),
/// which is how a container is configured. A flag on the command line wins.
///
/// The options are read off the command's own help, so a new option is configurable from the
/// environment the moment it is declared. The environment only adds arguments: it goes through
/// the same parsing and validation as the command line.
enum EnvironmentArguments {
    /// Where a setting's value came from, for `serve --print-config`.
    enum Source: String { case commandLine = "command line", environment, `default` }

    struct Declared: Equatable {
        var name: String
        var takesValue: Bool
        var variable: String { "MANAGEDSTORE_" + name.uppercased().replacingOccurrences(of: "-", with: "_") }

        /// Whether `arguments` give it (`--name`, `--name value` or `--name=value`).
        func isGiven(in arguments: [String]) -> Bool {
            arguments.contains { $0 == "--\(name)" || $0.hasPrefix("--\(name)=") }
        }
    }

    struct Failure: Error, CustomStringConvertible { var description: String }

    /// The subcommand `arguments` (without the program name) run, if they name one.
    static func command(of arguments: [String]) -> ParsableCommand.Type? {
        guard let first = arguments.first else { return nil }
        return ManagedStoreCommand.configuration.subcommands.first { $0._commandName == first }
    }

    /// The long options and flags of `command`, from its help text (help and version left out).
    static func declared(by command: ParsableCommand.Type) -> [Declared] {
        var result: [Declared] = []
        for line in command.helpMessage(columns: 10_000).split(separator: "\n") {
            // "  -p, --port <port>   The port ..." or "  --demo   Use the ...".
            guard let range = line.range(of: #"^\s+(-[A-Za-z], )?--[a-z0-9][a-z0-9-]*( <[^>]+>)?"#, options: .regularExpression) else { continue }
            let declaration = line[range]
            guard let nameStart = declaration.range(of: "--") else { continue }
            let name = declaration[nameStart.upperBound...].prefix { $0 != " " }
            guard name != "help", name != "version", !result.contains(where: { $0.name == name }) else { continue }
            result.append(Declared(name: String(name), takesValue: declaration.contains("<")))
        }
        return result
    }

    /// `arguments` with every declared option or flag that the environment sets and the
    /// arguments do not already give added at the end of the command's arguments; and the
    /// names that came from the environment.
    static func merge(_ arguments: [String], environment: [String: String]) throws(Failure) -> (arguments: [String], fromEnvironment: [String]) {
        guard let command = command(of: arguments) else { return (arguments, []) }
        var merged = arguments
        var added: [String] = []
        for option in declared(by: command) {
            guard let value = environment[option.variable] else { continue }
            guard !option.isGiven(in: arguments) else { continue }
            if option.takesValue {
                merged.append("--\(option.name)=\(value)")
            } else {
                switch value.lowercased() {
                case "1", "true", "yes", "on": merged.append("--\(option.name)")
                case "0", "false", "no", "off", "": continue
                default: throw Failure(description: "\(option.variable) must be true or false (or 1 or 0), not '\(value)'")
                }
            }
            added.append(option.name)
        }
        // Arguments after "--" are positional: the added options go before it.
        if let separator = arguments.firstIndex(of: "--") {
            merged = Array(arguments[..<separator]) + merged[arguments.count...] + Array(arguments[separator...])
        }
        return (merged, added)
    }

    /// Where each declared setting of the running command came from.
    static func sources(of command: ParsableCommand.Type) -> [(Declared, Source)] {
        let arguments = Array(CommandLine.arguments.dropFirst())
        let environment = ProcessInfo.processInfo.environment
        return declared(by: command).map { option in
            if option.isGiven(in: arguments) { return (option, .commandLine) }
            if environment[option.variable] != nil { return (option, .environment) }
            return (option, .default)
        }
    }
}
