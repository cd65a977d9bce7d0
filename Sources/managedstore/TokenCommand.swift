import ArgumentParser
import Foundation
import ManagedStoreServer

/// `managedstore token new`: a new bearer token and its tokens-file entry.
struct TokenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token", abstract: "Make bearer tokens for --tokens-file.", subcommands: [New.self])

    struct New: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "new",
            abstract: "Print a new token (keep it: it is not stored) and its entry for a tokens file (which keeps only its SHA-256).")

        @Option(help: "Comma-separated scopes: read, write, admin, each optionally narrowed to an entity (read:Book).")
        var scopes: String

        @Option(help: "The token's name, shown in logs instead of the token.")
        var name = "token"

        func validate() throws {
            guard !parsedScopes.isEmpty, parsedScopes.count == scopes.split(separator: ",").count else {
                throw ValidationError("--scopes must be read, write or admin, optionally narrowed to an entity (read:Book), separated by commas")
            }
            guard !name.isEmpty, name.count <= 100 else { throw ValidationError("--name must be 1 to 100 characters") }
        }

        private var parsedScopes: [AccessScope] {
            scopes.split(separator: ",").compactMap { AccessScope($0.trimmingCharacters(in: .whitespaces)) }
        }

        func run() {
            let (token, entry) = TokensFile.newToken(name: name, scopes: parsedScopes)
            print("token: \(token)")
            print("tokens-file entry: \(entry)")
        }
    }
}
