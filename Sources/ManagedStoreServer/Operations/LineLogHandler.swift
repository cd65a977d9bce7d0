import Foundation
import Logging
import ManagedStoreCore

/// A swift-log handler that writes each entry as one line: logfmt (`--log-format text`) or one
/// JSON object (`json`). Each line is written whole and at once (a container's log shows a line
/// when it happens), through the sink the request lines go through, so the order is kept.
public struct LineLogHandler: LogHandler {
    public enum Format: String, Sendable, CaseIterable {
        case text, json
    }

    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .info
    private let format: Format
    private let write: @Sendable (String) -> Void

    /// Lines to `write` (by default: standard error).
    public init(format: Format, write: @escaping @Sendable (String) -> Void = LineLogHandler.standardError) {
        self.format = format
        self.write = write
    }

    /// Through the request log's sink, at once: in order with the request lines around it.
    public static let standardError: @Sendable (String) -> Void = { line in
        LogSink.standardError.append(line)
        LogSink.standardError.flush()
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var fields: [(String, Logger.MetadataValue)] = [
            ("time", .string(RFC3339.string(from: Date()))), ("level", .string(event.level.rawValue)), ("msg", .string(event.message.description)),
        ]
        let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
        fields += Self.ordered(merged)
        write(format == .json ? Self.json(fields) : Self.logfmt(fields))
    }

    /// The request fields first, in the contract's order, then the rest by name: lines that a
    /// reader's eye (and `grep`) finds in the same place every time.
    private static func ordered(_ metadata: Logger.Metadata) -> [(String, Logger.MetadataValue)] {
        metadata.sorted { a, b in
            let ra = rank[a.key] ?? leading.count, rb = rank[b.key] ?? leading.count
            return ra != rb ? ra < rb : a.key < b.key
        }.map { ($0.key, $0.value) }
    }

    private static let leading = ["request_id", "method", "route", "status", "bytes", "duration_ms", "token"]
    private static let rank = Dictionary(uniqueKeysWithValues: leading.enumerated().map { ($0.element, $0.offset) })

    // MARK: Formats

    static func logfmt(_ fields: [(String, Logger.MetadataValue)]) -> String {
        fields.map { key, value in key + "=" + logfmtValue(text(value)) }.joined(separator: " ") + "\n"
    }

    /// Bare when it is a plain word, else quoted with `"` and `\` escaped (and newlines as `\n`,
    /// so one entry is always one line).
    private static func logfmtValue(_ value: String) -> String {
        let plain = !value.isEmpty && value.unicodeScalars.allSatisfy { $0.value > 0x20 && $0.value < 0x7F && $0 != "\"" && $0 != "=" && $0 != "\\" }
        if plain { return value }
        var quoted = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": quoted += "\\\""
            case "\\": quoted += "\\\\"
            case "\n": quoted += "\\n"
            case "\r": quoted += "\\r"
            case "\t": quoted += "\\t"
            default: quoted.unicodeScalars.append(scalar)
            }
        }
        return quoted + "\""
    }

    static func json(_ fields: [(String, Logger.MetadataValue)]) -> String {
        JSONValue.object(fields.map { key, value in (key, jsonValue(value)) }).serialized() + "\n"
    }

    /// Numbers logged as numbers (status, bytes, a duration) stay numbers in JSON.
    private static func jsonValue(_ value: Logger.MetadataValue) -> JSONValue {
        switch value {
        case .string(let string): return .string(string)
        case .stringConvertible(let convertible):
            switch convertible {
            case let number as Int: return .number(String(number))
            case let number as Double where number.isFinite: return .number(String(number))
            default: return .string(convertible.description)
            }
        case .array(let values): return .array(values.map(jsonValue))
        case .dictionary(let members): return .object(members.sorted { $0.key < $1.key }.map { ($0.key, jsonValue($0.value)) })
        }
    }

    private static func text(_ value: Logger.MetadataValue) -> String {
        switch value {
        case .string(let string): return string
        case .stringConvertible(let convertible): return convertible.description
        case .array, .dictionary: return jsonValue(value).serialized()
        }
    }
}
