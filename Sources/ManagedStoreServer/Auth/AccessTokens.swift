import Foundation
import ManagedStoreCore

/// What a token may do: `read`, `write` (implies read) or `admin` (implies both), on every
/// entity or, narrowed as `read:Book`, on one.
public struct AccessScope: Sendable, Hashable, CustomStringConvertible {
    public enum Level: Int, Sendable, Comparable {
        case read = 1, write = 2, admin = 3
        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
        var name: String { switch self { case .read: "read"; case .write: "write"; case .admin: "admin" } }
    }

    public var level: Level
    /// nil: every entity.
    public var entity: String?

    public init(_ level: Level, entity: String? = nil) {
        self.level = level
        self.entity = entity
    }

    /// Reads `read`, `write`, `admin`, or one of them narrowed to an entity (`write:Loan`).
    public init?(_ text: String) {
        let parts = text.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        switch parts[0] {
        case "read": level = .read
        case "write": level = .write
        case "admin": level = .admin
        default: return nil
        }
        if parts.count == 2 {
            guard !parts[1].isEmpty else { return nil }
            entity = String(parts[1])
        }
    }

    public var description: String { level.name + (entity.map { ":" + $0 } ?? "") }

    /// Whether this scope allows `needed` on `target`.
    func allows(_ needed: Level, on target: AccessControl.Target) -> Bool {
        guard level >= needed else { return false }
        switch target {
        case .entity(let name): return entity == nil || entity == name
        case .anyEntity: return true
        case .wholeStore: return entity == nil
        }
    }
}

/// One bearer token the server accepts: its name (for logs), the SHA-256 of its value, its scopes.
public struct AccessToken: Sendable {
    public var name: String
    let digest: [UInt8]
    public var scopes: [AccessScope]

    public init(name: String, sha256Hex: String, scopes: [AccessScope]) throws(TokensFileError) {
        guard let digest = Self.bytes(fromHex: sha256Hex), digest.count == 32 else {
            throw .invalid("token '\(name)': sha256 must be 64 hexadecimal digits")
        }
        self.name = name
        self.digest = digest
        self.scopes = scopes
    }

    public init(name: String, token: String, scopes: [AccessScope]) {
        self.name = name
        self.digest = SHA256.digest(Array(token.utf8))
        self.scopes = scopes
    }

    private static func bytes(fromHex hex: String) -> [UInt8]? {
        let digits = Array(hex.lowercased().utf8)
        guard digits.count % 2 == 0 else { return nil }
        var result: [UInt8] = []
        for i in stride(from: 0, to: digits.count, by: 2) {
            guard let high = value(digits[i]), let low = value(digits[i + 1]) else { return nil }
            result.append(high << 4 | low)
        }
        return result
    }

    private static func value(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return digit - UInt8(ascii: "a") + 10
        default: return nil
        }
    }
}

public enum TokensFileError: Error, Sendable, CustomStringConvertible {
    case unreadable(path: String, reason: String)
    case invalid(String)

    public var description: String {
        switch self {
        case let .unreadable(path, reason): return "cannot read the tokens file \(path): \(reason)"
        case .invalid(let detail): return "invalid tokens file: \(detail)"
        }
    }
}

/// The tokens file of `--tokens-file`:
/// `{"tokens": [{"name": "ci", "sha256": "<hex>", "scopes": ["read", "write:Loan"]}]}`, where
/// `"token": "<plain>"` may stand in place of `"sha256"`.
public enum TokensFile {
    public static func load(path: String) throws(TokensFileError) -> [AccessToken] {
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: path)) } catch {
            throw .unreadable(path: path, reason: (error as NSError).localizedDescription)
        }
        return try parse(Array(data))
    }

    public static func parse(_ bytes: [UInt8]) throws(TokensFileError) -> [AccessToken] {
        guard let json = try? JSONParser(maxDepth: 8).parse(bytes), let entries = json["tokens"]?.arrayValue else {
            throw .invalid(#"expected {"tokens": [{"name": ..., "sha256": ..., "scopes": [...]}]}"#)
        }
        var tokens: [AccessToken] = []
        for (i, entry) in entries.enumerated() {
            guard let name = entry["name"]?.stringValue, !name.isEmpty else { throw .invalid("token \(i + 1) has no name") }
            guard let scopeNames = entry["scopes"]?.arrayValue, !scopeNames.isEmpty else { throw .invalid("token '\(name)' has no scopes") }
            var scopes: [AccessScope] = []
            for scopeName in scopeNames {
                guard let text = scopeName.stringValue, let scope = AccessScope(text) else {
                    throw .invalid("token '\(name)': scopes are read, write or admin, optionally narrowed to an entity (read:Book)")
                }
                scopes.append(scope)
            }
            if let hex = entry["sha256"]?.stringValue {
                tokens.append(try AccessToken(name: name, sha256Hex: hex, scopes: scopes))
            } else if let plain = entry["token"]?.stringValue, !plain.isEmpty {
                tokens.append(AccessToken(name: name, token: plain, scopes: scopes))
            } else {
                throw .invalid("token '\(name)' needs \"sha256\" (or \"token\")")
            }
            if tokens.dropLast().contains(where: { $0.name == name }) { throw .invalid("two tokens are named '\(name)'") }
        }
        return tokens
    }

    /// A new random token (32 bytes from the system's generator, base64url, prefixed `ms_`)
    /// and its entry for a tokens file.
    public static func newToken(name: String, scopes: [AccessScope]) -> (token: String, entry: String) {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let token = "ms_" + Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        let entry = JSONValue.object([("name", .string(name)), ("sha256", .string(SHA256.hex(Array(token.utf8)))),
                                      ("scopes", .array(scopes.map { .string($0.description) }))]).serialized()
        return (token, entry)
    }
}
