import Foundation
import ManagedStoreCore
import ManagedStoreHTTP

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
            var now = timespec()
            clock_gettime(CLOCK_REALTIME, &now)
            line.time("time", secondsSince1970: Int64(now.tv_sec), microseconds: Int64(now.tv_nsec / 1000), json: json)
            line.plain("level", "info", json: json)
            line.plain("msg", "request", json: json)
            // An ID is letters, digits, `.`, `_` and `-` (RequestID): nothing to escape.
            line.plain("request_id", request.id, json: json)
            line.field("method", request.method, json: json)
            line.plain("route", route, json: json)
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

    /// Copies `bytes` whole (the line's buffer was sized for the escaped worst case).
    private mutating func put(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
        precondition(count + bytes.count <= storage.count, "a log line longer than its buffer")
        (storage.baseAddress! + count).update(from: source, count: bytes.count)
        count += bytes.count
    }

    private mutating func put(_ text: StaticString) {
        put(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
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

    /// A value known to need no quoting or escaping (a template, an ID, a word): bare in
    /// logfmt, between quotes in JSON, copied without a look at its bytes.
    mutating func plain(_ key: StaticString, _ value: String, json: Bool) {
        self.key(key, json: json)
        var value = value
        if json { put(UInt8(ascii: "\"")) }
        value.withUTF8 { put($0) }
        if json { put(UInt8(ascii: "\"")) }
    }

    /// An RFC 3339 time in UTC with microseconds, its digits put here (`RFC3339` makes the
    /// calendar fields); a year outside four digits through `RFC3339`'s own text.
    mutating func time(_ key: StaticString, secondsSince1970 seconds: Int64, microseconds: Int64, json: Bool) {
        let f = RFC3339.fields(secondsSince1970: seconds)
        guard (0...9999).contains(f.year) else {
            RFC3339.withText(secondsSince1970: seconds, microseconds: microseconds) { string($0, key: key, json: json) }
            return
        }
        self.key(key, json: json)
        if json { put(UInt8(ascii: "\"")) }
        twoDigits(f.year / 100); twoDigits(f.year % 100); put(UInt8(ascii: "-"))
        twoDigits(f.month); put(UInt8(ascii: "-")); twoDigits(f.day); put(UInt8(ascii: "T"))
        twoDigits(f.hour); put(UInt8(ascii: ":")); twoDigits(f.minute); put(UInt8(ascii: ":")); twoDigits(f.second)
        put(UInt8(ascii: "."))
        twoDigits(microseconds / 10_000); twoDigits(microseconds / 100 % 100); twoDigits(microseconds % 100)
        put(UInt8(ascii: "Z"))
        if json { put(UInt8(ascii: "\"")) }
    }

    private mutating func twoDigits(_ value: Int64) {
        put(UInt8(truncatingIfNeeded: 48 + value / 10))
        put(UInt8(truncatingIfNeeded: 48 + value % 10))
    }

    mutating func field(_ key: StaticString, _ value: String, json: Bool) {
        var value = value
        value.withUTF8 { string($0, key: key, json: json) }
    }

    /// A string value: in logfmt bare when it is a plain word, else quoted and escaped; in
    /// JSON a JSON string.
    mutating func string(_ value: UnsafeBufferPointer<UInt8>, key: StaticString, json: Bool) {
        self.key(key, json: json)
        // One pass to tell whether the value goes as it is: printable ASCII without `"` or `\`
        // (and, bare in logfmt, without spaces or `=`).
        var printable = true, bare = !value.isEmpty
        for byte in value {
            if byte < 0x20 || byte >= 0x7F || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { printable = false; bare = false; break }
            if byte == UInt8(ascii: " ") || byte == UInt8(ascii: "=") { bare = false }
        }
        if bare && !json {
            put(value)
            return
        }
        put(UInt8(ascii: "\""))
        if printable {
            put(value)
            put(UInt8(ascii: "\""))
            return
        }
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
