import Foundation
import Synchronization

/// Request IDs: the client's own, when it sends a usable one (so one ID follows a call through
/// a proxy, the client's logs and ours), else a new one.
enum RequestID {
    /// The ID for a request with `headers`: its `Request-Id`, or `X-Request-Id`, when that is 1
    /// to 64 characters of `A-Z a-z 0-9 . _ -` (nothing that could break a log line or a
    /// header); otherwise a new one.
    static func pick(from headers: [(name: String, value: String)]) -> String {
        for name in ["Request-Id", "X-Request-Id"] {
            if let given = HTTPRequest.header(name, in: headers), isUsable(given) { return given }
        }
        return make()
    }

    static func isUsable(_ id: String) -> Bool {
        let bytes = id.utf8
        guard (1...64).contains(bytes.count) else { return false }
        return bytes.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
                return true
            default:
                return false
            }
        }
    }

    /// A new ID: this process's random prefix and a counter, 21 characters. Unique within a
    /// process without a random draw per request; the prefix keeps two runs (a restart, two
    /// replicas) from handing out the same IDs.
    static func make() -> String {
        let n = counter.add(1, ordering: .relaxed).newValue
        // Written into the string's own storage: formatting with `String(_:radix:)` and padding
        // cost more than the rest of a GET's bookkeeping.
        return String(unsafeUninitializedCapacity: 21) { text in
            hex(UInt64(prefix), digits: 8, into: text, at: 0)
            text[8] = UInt8(ascii: "-")
            hex(n, digits: 12, into: text, at: 9)
            return 21
        }
    }

    /// `value`'s last `digits` hexadecimal digits, zero-padded, at `offset`.
    private static func hex(_ value: UInt64, digits: Int, into text: UnsafeMutableBufferPointer<UInt8>, at offset: Int) {
        var value = value
        for i in stride(from: offset + digits - 1, through: offset, by: -1) {
            text[i] = hexDigits[Int(value & 0xF)]
            value >>= 4
        }
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)
    private static let counter = Atomic<UInt64>(0)
    /// This process's random prefix.
    private static let prefix = UInt32.random(in: .min ... .max)
}
