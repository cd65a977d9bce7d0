// An unsigned integer of any size, in base 10^9, for exact decimal sums and averages: only the
// few operations they need (scale by a power of ten, add, subtract, compare, divide by a
// count, write out the digits). Nothing here traps on any input.

/// A nonnegative integer as limbs of nine decimal digits, least significant first, with no
/// most significant zero limb (zero has no limbs).
struct DecimalMagnitude: Sendable, Equatable, Comparable {
    private static let base: UInt64 = 1_000_000_000
    private static let limbDigits = 9
    private static let powersOfTen: [UInt64] = (0...9).map { power in (0..<power).reduce(UInt64(1)) { value, _ in value * 10 } }

    private(set) var limbs: [UInt32] = []

    init() {}

    /// The integer the ASCII digits `digit(0)`…`digit(count - 1)` write, most significant first.
    init(count: Int, digit: (Int) -> UInt8) {
        var end = count
        while end > 0 {
            let start = max(0, end - Self.limbDigits)
            var limb: UInt32 = 0
            for i in start..<end { limb = limb * 10 + UInt32(digit(i) &- 48) }
            limbs.append(limb)
            end = start
        }
        trim()
    }

    init(_ value: UInt64) {
        var rest = value
        while rest > 0 {
            limbs.append(UInt32(rest % Self.base))
            rest /= Self.base
        }
    }

    var isZero: Bool { limbs.isEmpty }

    /// How many decimal digits the integer has (0 for zero).
    var digitCount: Int {
        guard let top = limbs.last else { return 0 }
        var digits = 1
        while digits < Self.limbDigits, UInt64(top) >= Self.powersOfTen[digits] { digits += 1 }
        return (limbs.count - 1) * Self.limbDigits + digits
    }

    /// The decimal digits, most significant first ("0" for zero).
    var digits: String {
        guard let top = limbs.last else { return "0" }
        var text = String(top)
        for limb in limbs.dropLast().reversed() {
            let part = String(limb)
            text += String(repeating: "0", count: Self.limbDigits - part.count) + part
        }
        return text
    }

    private mutating func trim() {
        while limbs.last == 0 { limbs.removeLast() }
    }

    /// Multiplies by 10^`power` (power ≥ 0).
    mutating func scale(byPowerOfTen power: Int) {
        guard !isZero, power > 0 else { return }
        limbs.insert(contentsOf: repeatElement(0, count: power / Self.limbDigits), at: 0)
        multiply(by: Self.powersOfTen[power % Self.limbDigits])
    }

    /// Multiplies by `factor` ≤ 10^9.
    private mutating func multiply(by factor: UInt64) {
        guard factor != 1 else { return }
        var carry: UInt64 = 0
        for i in limbs.indices {
            let product = UInt64(limbs[i]) * factor + carry
            limbs[i] = UInt32(product % Self.base)
            carry = product / Self.base
        }
        while carry > 0 {
            limbs.append(UInt32(carry % Self.base))
            carry /= Self.base
        }
        trim()
    }

    static func + (lhs: DecimalMagnitude, rhs: DecimalMagnitude) -> DecimalMagnitude {
        var sum = lhs
        sum.add(rhs)
        return sum
    }

    mutating func add(_ other: DecimalMagnitude) {
        if other.limbs.count > limbs.count { limbs.append(contentsOf: repeatElement(0, count: other.limbs.count - limbs.count)) }
        var carry: UInt32 = 0
        for i in limbs.indices {
            let sum = limbs[i] + (i < other.limbs.count ? other.limbs[i] : 0) + carry  // < 2 × 10^9 + 1, no overflow
            limbs[i] = sum % UInt32(Self.base)
            carry = sum / UInt32(Self.base)
        }
        if carry > 0 { limbs.append(carry) }
    }

    /// `lhs - rhs`, for `lhs >= rhs`.
    static func - (lhs: DecimalMagnitude, rhs: DecimalMagnitude) -> DecimalMagnitude {
        precondition(lhs >= rhs, "DecimalMagnitude subtracts only a smaller or equal magnitude")
        var difference = lhs
        var borrow: Int64 = 0
        for i in difference.limbs.indices {
            var value = Int64(difference.limbs[i]) - (i < rhs.limbs.count ? Int64(rhs.limbs[i]) : 0) - borrow
            borrow = value < 0 ? 1 : 0
            if value < 0 { value += Int64(base) }
            difference.limbs[i] = UInt32(value)
        }
        difference.trim()
        return difference
    }

    static func < (lhs: DecimalMagnitude, rhs: DecimalMagnitude) -> Bool {
        if lhs.limbs.count != rhs.limbs.count { return lhs.limbs.count < rhs.limbs.count }
        for (a, b) in zip(lhs.limbs.reversed(), rhs.limbs.reversed()) where a != b { return a < b }
        return false
    }

    /// The quotient and remainder of dividing by `divisor` (> 0).
    func divided(by divisor: UInt64) -> (quotient: DecimalMagnitude, remainder: UInt64) {
        precondition(divisor > 0, "DecimalMagnitude divides by a positive count")
        var quotient = DecimalMagnitude()
        quotient.limbs = [UInt32](repeating: 0, count: limbs.count)
        var remainder: UInt64 = 0
        for i in limbs.indices.reversed() {
            // remainder × 10^9 + limb, in 128 bits: remainder < divisor, so the quotient digit < 10^9.
            let (high, low) = remainder.multipliedFullWidth(by: Self.base)
            let (sum, carry) = low.addingReportingOverflow(UInt64(limbs[i]))
            let (digit, rest) = divisor.dividingFullWidth((high + (carry ? 1 : 0), sum))
            quotient.limbs[i] = UInt32(digit)
            remainder = rest
        }
        quotient.trim()
        return (quotient, remainder)
    }

    /// The magnitude with its last `count` digits dropped, rounded half up on what was dropped.
    func roundingOff(digits count: Int) -> DecimalMagnitude {
        guard count > 0 else { return self }
        guard count <= digitCount else { return DecimalMagnitude() }
        let text = Array(digits.utf8)
        let keptCount = text.count - count
        var kept = DecimalMagnitude(count: keptCount) { text[$0] }
        // Half up: the first dropped digit decides (10^count is even, so what lies beyond it
        // never turns a tie into more than one).
        if text[keptCount] >= UInt8(ascii: "5") { kept.add(DecimalMagnitude(1)) }
        return kept
    }
}
