import Foundation

/// A period as the command line gives it (`--history-retention`, `--idempotency-ttl`): a whole
/// number with a unit, `s`, `m`, `h` or `d` (`90m`, `7d`; a bare number is seconds), at least
/// one second and at most 100 years.
public enum DurationText {
    public static func parse(_ text: String) -> Duration? {
        let text = text.trimmingCharacters(in: .whitespaces).lowercased()
        let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3_600, "d": 86_400]
        var digits = Substring(text)
        var unit: Int64 = 1
        if let last = text.last, let scale = units[last] {
            unit = scale
            digits = digits.dropLast()
        }
        guard !digits.isEmpty, digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber), digits.count <= 12,
              let count = Int64(digits) else { return nil }
        let (seconds, overflow) = count.multipliedReportingOverflow(by: unit)
        guard !overflow, seconds >= 1, seconds <= 36_500 * 86_400 else { return nil }
        return .seconds(seconds)
    }
}
