import Foundation
import ManagedStore

/// The line logged for every request (on by default, `--log-requests off` for those who log at
/// a proxy): the fields and order of the contract, in logfmt or JSON, as the other log lines
/// (`LineLogHandler`) write them:
///
///     time=2026-11-27T12:00:00.000001Z level=info msg=request request_id=1f2e3d4c-000000000001
///       method=GET route=/v1/objects/{entity}/{pk} status=200 bytes=123 duration_ms=0.12 token=-
///
/// A line is made on the thread that ends the request, into a buffer on its stack (no String,
/// dictionary or Foundation date formatter), and handed whole to a `LogSink`, which writes lines
/// in batches: a request's log costs an append, not a system call.
public struct RequestLog: Sendable {
    public let format: LineLogHandler.Format
    let sink: LogSink

    public init(format: LineLogHandler.Format, sink: LogSink = .standardError) {
        self.format = format
        self.sink = sink
    }

    /// Logs the ended `request`, which took `route`.
    func record(_ request: CompletedRequest, route: String) {
        let token = request.notes.tokenName ?? "-"
        // The variable parts, escaped, take at most six bytes a byte (`\u00XX`).
        let capacity = 192 + route.utf8.count + 6 * (request.id.utf8.count + request.method.utf8.count + token.utf8.count)
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: capacity) { storage in
            var line = LineBytes(storage)
            let json = format == .json
            line.start(json: json)
            RFC3339.withText(of: Date()) { line.string($0, key: "time", json: json) }
            line.field("level", "info", json: json)
            line.field("msg", "request", json: json)
            line.field("request_id", request.id, json: json)
            line.field("method", request.method, json: json)
            line.field("route", route, json: json)
            if let status = request.status { line.number("status", Int64(status), json: json) } else { line.field("status", "none", json: json) }
            line.number("bytes", Int64(request.bytes), json: json)
            line.milliseconds("duration_ms", microseconds: Int64(min(max(0, request.seconds * 1e6), 1e15).rounded()), json: json)
            line.field("token", token, json: json)
            line.end(json: json)
            sink.append(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: storage[0..<line.count])))
        }
    }
}

/// A log line being written into a buffer big enough for it (`RequestLog` sizes it).
struct LineBytes {
    private let storage: UnsafeMutableBufferPointer<UInt8>
    private(set) var count = 0
    private var first = true

    init(_ storage: UnsafeMutableBufferPointer<UInt8>) { self.storage = storage }

    private mutating func put(_ byte: UInt8) {
        storage[count] = byte
        count += 1
    }

    private mutating func put(_ text: StaticString) {
        text.withUTF8Buffer { for byte in $0 { put(byte) } }
    }

    mutating func start(json: Bool) { if json { put(UInt8(ascii: "{")) } }

    mutating func end(json: Bool) {
        if json { put(UInt8(ascii: "}")) }
        put(UInt8(ascii: "\n"))
    }

    /// The separator and the key: ` key=` or `,"key":`.
    private mutating func key(_ key: StaticString, json: Bool) {
        if json {
            if !first { put(UInt8(ascii: ",")) }
            put(UInt8(ascii: "\""))
            put(key)
            put("\":")
        } else {
            if !first { put(UInt8(ascii: " ")) }
            put(key)
            put(UInt8(ascii: "="))
        }
        first = false
    }

    mutating func field(_ key: StaticString, _ value: String, json: Bool) {
        var value = value
        value.withUTF8 { string($0, key: key, json: json) }
    }

    /// A string value: in logfmt bare when it is a plain word, else quoted and escaped; in
    /// JSON a JSON string.
    mutating func string(_ value: UnsafeBufferPointer<UInt8>, key: StaticString, json: Bool) {
        self.key(key, json: json)
        let plain = !value.isEmpty && value.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "=") && $0 != UInt8(ascii: "\\") }
        if plain && !json {
            for byte in value { put(byte) }
            return
        }
        put(UInt8(ascii: "\""))
        for byte in value {
            switch byte {
            case UInt8(ascii: "\""): put("\\\"")
            case UInt8(ascii: "\\"): put("\\\\")
            case UInt8(ascii: "\n"): put("\\n")
            case UInt8(ascii: "\r"): put("\\r")
            case UInt8(ascii: "\t"): put("\\t")
            case 0..<0x20, 0x7F:
                put("\\u00")
                put(Self.hex[Int(byte >> 4)])
                put(Self.hex[Int(byte & 0xF)])
            default: put(byte)
            }
        }
        put(UInt8(ascii: "\""))
    }

    private static let hex = Array("0123456789abcdef".utf8)

    mutating func number(_ key: StaticString, _ value: Int64, json: Bool) {
        self.key(key, json: json)
        digits(value)
    }

    /// Milliseconds with up to three decimals and at least one (`0.12`, `12.0`), as a Double's
    /// description writes a rounded duration.
    mutating func milliseconds(_ key: StaticString, microseconds: Int64, json: Bool) {
        self.key(key, json: json)
        let whole = microseconds / 1000
        var fraction = microseconds % 1000
        digits(whole)
        put(UInt8(ascii: "."))
        if fraction == 0 {
            put(UInt8(ascii: "0"))
            return
        }
        var width = 3
        while fraction % 10 == 0 { fraction /= 10; width -= 1 }
        var text: (UInt8, UInt8, UInt8) = (48, 48, 48)
        withUnsafeMutableBytes(of: &text) { bytes in
            var value = fraction
            for i in stride(from: width - 1, through: 0, by: -1) {
                bytes[i] = UInt8(48 + value % 10)
                value /= 10
            }
            for i in 0..<width { put(bytes[i]) }
        }
    }

    private mutating func digits(_ value: Int64) {
        if value < 0 { put(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var reversed: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                       UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &reversed) { bytes in
            var n = 0
            repeat {
                bytes[n] = UInt8(48 + magnitude % 10)
                magnitude /= 10
                n += 1
            } while magnitude > 0
            while n > 0 { n -= 1; put(bytes[n]) }
        }
    }
}
