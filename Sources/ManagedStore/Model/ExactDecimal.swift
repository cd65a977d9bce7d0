import Foundation

extension Decimal {
    /// The decimal that `text` (JSON number syntax, optional exponent) writes, only when
    /// `Decimal` holds it exactly: at most 38 significant digits and an exponent in range.
    /// `Decimal(string:)` alone would round a longer number without a word.
    static func exactly(_ text: String) -> Decimal? {
        guard AttributeValue.isDecimalText(text) else { return nil }
        var mantissa = Substring(text)
        var exponent = 0
        if let e = mantissa.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            guard let value = Int(mantissa[mantissa.index(after: e)...]), abs(value) < 10_000 else { return nil }
            exponent = value
            mantissa = mantissa[..<e]
        }
        let negative = mantissa.first == "-"
        if negative || mantissa.first == "+" { mantissa = mantissa.dropFirst() }
        var digits = ""
        if let dot = mantissa.firstIndex(of: ".") {
            let fraction = mantissa[mantissa.index(after: dot)...]
            digits = String(mantissa[..<dot]) + fraction
            exponent -= fraction.count
        } else {
            digits = String(mantissa)
        }
        digits = String(digits.drop { $0 == "0" })
        while digits.hasSuffix("0") {
            digits.removeLast()
            exponent += 1
        }
        if digits.isEmpty { return Decimal(0) }
        guard digits.count <= 38, exponent >= -128, exponent <= 127 else { return nil }
        return Decimal(string: (negative ? "-" : "") + digits + "e\(exponent)", locale: Locale(identifier: "en_US_POSIX"))
    }
}
