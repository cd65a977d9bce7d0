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
        let digits = String(n, radix: 16)
        return prefix + String(repeating: "0", count: max(0, 12 - digits.count)) + digits
    }

    private static let counter = Atomic<UInt64>(0)
    private static let prefix: String = {
        let random = UInt32.random(in: .min ... .max)
        let digits = String(random, radix: 16)
        return String(repeating: "0", count: 8 - digits.count) + digits + "-"
    }()
}
