import Foundation

extension Decimal {
    /// Exponents beyond this are refused before any arithmetic: whatever the mantissa, no
    /// number of a bounded text comes back into `Decimal`'s range from
    /// there, and the bound keeps every sum below far from overflowing.
    private static let exponentTextLimit = 1_000_000

    /// The decimal that `text` (JSON number syntax, optional exponent) writes, only when
    /// `Decimal` holds it exactly: at most 38 significant digits and an exponent in range.
    /// `Decimal(string:)` alone would round a longer number without a word.
    ///
    /// The text comes from clients (JSON bodies, predicates, cursors), so nothing here may
    /// trap: the exponent is read with a bound instead of `Int(_:)` and `abs` (`abs(Int.min)`
    /// traps on `1e-9223372036854775808`), and digits are counted on bytes.
    package static func exactly(_ text: String) -> Decimal? {
        guard AttributeValue.isDecimalText(text) else { return nil }
        let bytes = Array(text.utf8)
        var end = bytes.count
        var exponent = 0
        if let e = bytes.firstIndex(where: { $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }) {
            var i = e + 1
            var negative = false
            if bytes[i] == UInt8(ascii: "-") || bytes[i] == UInt8(ascii: "+") {
                negative = bytes[i] == UInt8(ascii: "-")
                i += 1
            }
            var magnitude = 0
            while i < bytes.count {
                magnitude = magnitude * 10 + Int(bytes[i] - UInt8(ascii: "0"))
                guard magnitude <= exponentTextLimit else { return nil }
                i += 1
            }
            exponent = negative ? -magnitude : magnitude
            end = e
        }
        var start = 0
        let negative = bytes[0] == UInt8(ascii: "-")
        if negative || bytes[0] == UInt8(ascii: "+") { start = 1 }
        // The significant digits, without the point: leading zeros dropped, then trailing
        // zeros moved into the exponent.
        var digits: [UInt8] = []
        var seenPoint = false
        for i in start..<end {
            if bytes[i] == UInt8(ascii: ".") { seenPoint = true; continue }
            if seenPoint { exponent -= 1 }
            if digits.isEmpty && bytes[i] == UInt8(ascii: "0") { continue }
            digits.append(bytes[i])
        }
        while digits.last == UInt8(ascii: "0") {
            digits.removeLast()
            exponent += 1
        }
        if digits.isEmpty { return Decimal(0) }
        guard digits.count <= 38, exponent >= -128, exponent <= 127 else { return nil }
        let normalized = (negative ? "-" : "") + String(decoding: digits, as: UTF8.self) + "e\(exponent)"
        return Decimal(string: normalized, locale: Locale(identifier: "en_US_POSIX"))
    }
}
