import Foundation
import ManagedStoreCore

/// How a `decimal` attribute is stored (store format 2): as TEXT that SQLite's own BINARY
/// comparison orders exactly like the numbers, so `=`, `<`, BETWEEN, IN, ORDER BY and (unique)
/// indexes on a decimal column are right with no custom collation, and the file stays readable
/// by stock SQLite.
///
/// A nonzero decimal is normalized to a sign, its significant digits D1…Dn (D1 ≠ 0, Dn ≠ 0,
/// n ≤ 39: `Decimal` holds 128 bits) and its adjusted exponent e, the value being
/// ±0.D1…Dn × 10^e (12.5 is 0.125 × 10^2: digits 125, e = 2). `Decimal`'s range keeps e
/// within -127…166. Then:
///
///     positive:  "3"  500 + e (3 digits)  D1…Dn                 " "  readable
///     zero:      "2"                                            " "  "0"
///     negative:  "1"  499 - e (3 digits)  (9-D1)…(9-Dn)  "~"    " "  readable
///
/// `readable` is the exact decimal as people write it, made from the same sign, digits and
/// exponent: plain (`12.5`, `-0.001`) for 10^-20 ≤ |value| < 10^40, scientific (`1.5e-100`)
/// beyond. It is there so that `sqlite3` users can read the value; the decoder checks it.
///
///     12.5  → "3502125 12.5"        1.2   → "350112 1.2"        0.001 → "34981 0.001"
///     0     → "2 0"                 -0.5  → "14994~ -0.5"       -100  → "14968~ -100"
///     -1.25 → "1498874~ -1.25"      -1.2  → "149887~ -1.2"      1e-100 → "34011 1e-100"
///
/// Why bytewise order is numeric order, for texts a and b of values x and y:
/// - The first byte orders the signs: "1" < "2" < "3".
/// - Two positives: a larger e is a larger number (0.1 ≤ 0.D1…Dn < 1), and the fixed-width
///   exponent 500 + e orders e. With equal e the digit strings compare as the fractions 0.D1…Dn
///   do: at the first differing digit; when one digit string is a proper prefix of the other,
///   the longer is the larger number (its extra digits are not all zero, as Dn ≠ 0), and the
///   shorter is followed by the separator " ", lower than every digit.
/// - Two negatives: the same, reversed, as it must be: 499 - e and the nines' complement reverse
///   the order of exponents and of differing digits, and when one digit string is a proper
///   prefix of the other, the shorter (the smaller magnitude, so the larger number) is followed
///   by "~", greater than every digit.
/// - So the comparison is decided at or before the separator, unless everything before it is
///   equal; then sign, digits and exponent are equal, so x = y, and the readable part, made from
///   them alone, is identical too. Equal numbers therefore have identical texts (whatever
///   digits they were written with: 12.5 and 12.50 are one text), which `=`, IN and unique
///   indexes need.
///
/// Every byte is ASCII and none is an uppercase letter, so folding for `[c]`/`[d]` (`ms_fold`)
/// leaves the text as it is.
enum DecimalStorage {
    private static let negativeClass = UInt8(ascii: "1")
    private static let zeroClass = UInt8(ascii: "2")
    private static let positiveClass = UInt8(ascii: "3")
    /// Follows a negative's digits: greater than every digit, so shorter digit strings sort after.
    private static let negativeTerminator = UInt8(ascii: "~")
    /// Starts the readable part: lower than every digit, so shorter positive digit strings sort first.
    private static let separator = UInt8(ascii: " ")
    private static let exponentBias = 500
    /// `Decimal`'s significand is 128 bits: at most 39 digits.
    private static let maxDigits = 39
    /// The largest 39-digit significand, 2^128 - 1.
    private static let largestSignificand = Array("340282366920938463463374607431768211455".utf8)
    /// The text of zero.
    private static let zeroText: [UInt8] = [zeroClass, separator, UInt8(ascii: "0")]

    // MARK: Encoding

    /// The stored text of `value`; nil for NaN, which has no place in the order (the store
    /// keeps it as NULL, and validation refuses it before it gets here).
    static func encode(_ value: Decimal) -> String? {
        guard !value.isNaN else { return nil }
        if value.isZero { return String(decoding: zeroText, as: UTF8.self) }
        // The significand is the integer of every digit (12.5: 125, exponent -1).
        guard var digits = digits(ofIntegral: value.significand) else { return nil }
        var exponent = value.exponent + digits.count
        let leading = digits.prefix { $0 == UInt8(ascii: "0") }.count
        digits.removeFirst(leading)
        exponent -= leading
        while digits.last == UInt8(ascii: "0") { digits.removeLast() }
        // Always so for a `Decimal` (|e| ≤ 166); checked because the field has three digits.
        guard !digits.isEmpty, digits.count <= maxDigits, abs(exponent) < exponentBias else { return nil }
        return String(decoding: encode(negative: value.sign == .minus, digits: digits, exponent: exponent), as: UTF8.self)
    }

    /// The ASCII digits of a nonnegative integral decimal (a significand). Through UInt64 when
    /// it fits, checked exactly; `Decimal.description` is far slower and is left to the longest.
    private static func digits(ofIntegral significand: Decimal) -> [UInt8]? {
        let small = NSDecimalNumber(decimal: significand).uint64Value
        if Decimal(small) == significand {
            var digits: [UInt8] = []
            digits.reserveCapacity(20)
            var rest = small
            repeat {
                digits.append(UInt8(48 + rest % 10))
                rest /= 10
            } while rest > 0
            digits.reverse()
            return digits
        }
        let digits = Array(significand.description.utf8)
        return !digits.isEmpty && digits.allSatisfy(isDigit) ? digits : nil
    }

    /// The bytes of ±0.`digits` × 10^`exponent` (ASCII digits, no leading or trailing zero).
    private static func encode(negative: Bool, digits: [UInt8], exponent: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(2 * digits.count + 16)
        bytes.append(negative ? negativeClass : positiveClass)
        let field = negative ? 999 - (exponentBias + exponent) : exponentBias + exponent
        bytes.append(contentsOf: [UInt8(48 + field / 100), UInt8(48 + field / 10 % 10), UInt8(48 + field % 10)])
        for d in digits { bytes.append(negative ? UInt8(ascii: "9") - d + 48 : d) }
        if negative { bytes.append(negativeTerminator) }
        bytes.append(separator)
        writeReadable(negative: negative, count: digits.count, exponent: exponent, digit: { digits[$0] }) { bytes.append($0) }
        return bytes
    }

    /// Calls `emit` with each byte of the readable form of ±0.D1…Dn × 10^e, where `digit(i)` is
    /// the ASCII digit D(i+1). One function for the encoder and the decoder's check, so the two
    /// cannot drift apart.
    private static func writeReadable(negative: Bool, count n: Int, exponent e: Int,
                                      digit: (Int) -> UInt8, emit: (UInt8) -> Void) {
        let zero = UInt8(ascii: "0")
        if negative { emit(UInt8(ascii: "-")) }
        if e <= -20 || e > 40 {
            // Scientific: D1.D2…Dn e(e-1).
            emit(digit(0))
            if n > 1 {
                emit(UInt8(ascii: "."))
                for i in 1..<n { emit(digit(i)) }
            }
            emit(UInt8(ascii: "e"))
            var power = e - 1
            if power < 0 { emit(UInt8(ascii: "-")); power = -power }
            if power >= 100 { emit(zero + UInt8(power / 100)) }
            if power >= 10 { emit(zero + UInt8(power / 10 % 10)) }
            emit(zero + UInt8(power % 10))
        } else if e <= 0 {
            // 0.00D1…Dn
            emit(zero)
            emit(UInt8(ascii: "."))
            for _ in 0 ..< -e { emit(zero) }
            for i in 0..<n { emit(digit(i)) }
        } else if e < n {
            // D1…De.De+1…Dn
            for i in 0..<e { emit(digit(i)) }
            emit(UInt8(ascii: "."))
            for i in e..<n { emit(digit(i)) }
        } else {
            // D1…Dn00…0
            for i in 0..<n { emit(digit(i)) }
            for _ in n..<e { emit(zero) }
        }
    }

    // MARK: Decoding

    /// The decimal of a stored text; nil when the text is not exactly what `encode` makes
    /// (nothing here traps on what a file holds). Reads in place, without allocating.
    static func decode(_ text: UnsafeBufferPointer<UInt8>) -> Decimal? {
        withComponents(text) { negative, count, exponent, digit in
            count == 0 ? Decimal(0) : makeDecimal(negative: negative, count: count, exponent: exponent, digit: digit)
        }
    }

    /// Calls `body` with the parts of a stored text, ±0.D1…Dn × 10^e: the sign, n (0 for zero),
    /// e, and `digit(i)`, the ASCII digit D(i+1); nil when the text is not exactly what `encode`
    /// makes, or holds what no `Decimal` holds. For `decode`, and for sums that add the digits
    /// without making a `Decimal` first (and so skip exactly the texts that read as null).
    static func withComponents<T>(_ text: UnsafeBufferPointer<UInt8>,
                                  _ body: (_ negative: Bool, _ count: Int, _ exponent: Int, _ digit: (Int) -> UInt8) -> T?) -> T? {
        guard let first = text.first else { return nil }
        if first == zeroClass { return text.elementsEqual(zeroText) ? body(false, 0, 0, { _ in UInt8(ascii: "0") }) : nil }
        guard first == positiveClass || first == negativeClass, text.count >= 6 else { return nil }
        let negative = first == negativeClass
        guard isDigit(text[1]), isDigit(text[2]), isDigit(text[3]) else { return nil }
        let field = Int(text[1] - 48) * 100 + Int(text[2] - 48) * 10 + Int(text[3] - 48)
        let exponent = negative ? 999 - field - exponentBias : field - exponentBias
        var end = 4
        while end < text.count, isDigit(text[end]) { end += 1 }
        let count = end - 4
        guard count >= 1, count <= maxDigits else { return nil }
        // The ASCII digit D(i+1), complement undone.
        func digit(_ i: Int) -> UInt8 { negative ? UInt8(ascii: "9") - text[4 + i] + 48 : text[4 + i] }
        guard digit(0) != UInt8(ascii: "0"), digit(count - 1) != UInt8(ascii: "0") else { return nil }
        if negative {
            guard end < text.count, text[end] == negativeTerminator else { return nil }
            end += 1
        }
        guard end < text.count, text[end] == separator else { return nil }
        // The readable part must be the one `encode` writes: a hand-edited value is refused,
        // never read as something other than what `sqlite3` shows.
        var position = end + 1
        var matches = true
        writeReadable(negative: negative, count: count, exponent: exponent, digit: digit) { byte in
            if position < text.count, text[position] == byte { position += 1 } else { matches = false }
        }
        guard matches, position == text.count else { return nil }
        // Within `Decimal`: an exponent of the last digit from -128 to 127, a significand below 2^128.
        guard exponent - count >= -128, exponent - count <= 127 else { return nil }
        if count == maxDigits {
            for i in 0..<count where digit(i) != largestSignificand[i] {
                if digit(i) > largestSignificand[i] { return nil }
                break
            }
        }
        return body(negative, count, exponent, digit)
    }

    /// The same for a whole string.
    static func decode(_ text: String) -> Decimal? {
        var text = text
        return text.withUTF8 { decode($0) }
    }

    /// 10^19, the scale of one chunk of digits: the most a UInt64 always holds.
    private static let chunkScale = Decimal(sign: .plus, exponent: 19, significand: 1)

    /// ±D1…Dn × 10^(e-n) as a `Decimal` (within its range, as `withComponents` checked).
    private static func makeDecimal(negative: Bool, count n: Int, exponent e: Int, digit: (Int) -> UInt8) -> Decimal? {
        let power = e - n
        // Chunks of 19 digits from the right, so the first (leftmost) is the short one:
        // significand = ((c0 × 10^19) + c1) × 10^19 + c2.
        var significand = Decimal(0)
        var i = 0
        var chunkLength = n % 19 == 0 ? 19 : n % 19
        while i < n {
            var chunk: UInt64 = 0
            for j in i ..< i + chunkLength { chunk = chunk * 10 + UInt64(digit(j) - 48) }
            significand = i == 0 ? Decimal(chunk) : significand * chunkScale + Decimal(chunk)
            i += chunkLength
            chunkLength = 19
        }
        let value = Decimal(sign: negative ? .minus : .plus, exponent: power, significand: significand)
        return value.isNaN ? nil : value
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= 48 && byte <= 57 }
}
