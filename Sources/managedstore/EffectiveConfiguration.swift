import ArgumentParser
import ManagedStore

/// `serve --print-config`: every setting of a parsed command, its value and where it came from.
enum EffectiveConfiguration {
    /// Names of settings whose values are secrets: shown as `****` when set.
    static let secretNames: Set<String> = ["token"]

    static func text<Command: ParsableCommand>(of command: Command) -> String {
        let values = Dictionary(Mirror(reflecting: command).children.compactMap { child -> (String, String)? in
            guard let label = child.label, label.hasPrefix("_") else { return nil }
            return (kebabCase(String(label.dropFirst())), String(describing: child.value))
        }, uniquingKeysWith: { first, _ in first })
        var rows: [(name: String, value: String, origin: String)] = []
        for (option, source) in EnvironmentArguments.sources(of: Command.self) {
            var value = values[option.name].map(unwrapped) ?? "?"
            if value == "nil" { value = "(not set)" }
            if secretNames.contains(option.name) && value != "(not set)" { value = "****" }
            // A database URI's password is a secret inside a value that is not.
            if option.name == "store" { value = StoreDescription.redacted(value) }
            let origin = source == .environment ? "environment \(option.variable)" : source.rawValue
            rows.append((option.name, value, origin))
        }
        // Columns as wide as their widest entry: a value is never cut (the one command meant to
        // show the effective settings must show them whole), and the origins stay aligned.
        let nameWidth = rows.map(\.name.count).max() ?? 0
        let valueWidth = rows.map(\.value.count).max() ?? 0
        return rows.map { row in
            padded(row.name, to: nameWidth) + "  " + padded(row.value, to: valueWidth) + "  " + row.origin
        }.joined(separator: "\n") + "\n"
    }

    /// `text` followed by spaces up to `width` characters; never shortened.
    static func padded(_ text: String, to width: Int) -> String {
        text + String(repeating: " ", count: max(0, width - text.count))
    }

    /// `maxBodyBytes` → `max-body-bytes`, as ArgumentParser names options.
    static func kebabCase(_ name: String) -> String {
        var result = ""
        for character in name {
            if character.isUppercase { result += "-" + character.lowercased() } else { result.append(character) }
        }
        return result
    }

    /// A property wrapper's description as its value: `Option(8080)` or `Optional("x")` → `8080`, `x`.
    static func unwrapped(_ description: String) -> String {
        var text = description
        for prefix in ["Option(", "Flag(", "Optional("] where text.hasPrefix(prefix) && text.hasSuffix(")") {
            text = String(text.dropFirst(prefix.count).dropLast())
        }
        if text.hasPrefix("\"") && text.hasSuffix("\"") && text.count >= 2 { text = String(text.dropFirst().dropLast()) }
        return text
    }
}
