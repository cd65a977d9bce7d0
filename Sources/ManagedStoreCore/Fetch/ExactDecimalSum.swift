import Foundation

/// The exact sum of decimals, and their average, as every store computes them (the SQLite
/// store's SQL functions, `InMemoryAggregate`).
///
/// Adding `Decimal`s would round as soon as a partial sum needs more than 38 digits (1e30 +
/// 1e-30), and whether that happens would depend on the order SQLite hands the rows over. So
/// the positive and the negative values are each summed exactly, as integers scaled to the
/// smallest power of ten seen, and only the final result must fit a `Decimal`.
package struct ExactDecimalSum {
    /// The sum of the positive values and that of the magnitudes of the negative ones, each
    /// × 10^`scale`.
    private var positive = DecimalMagnitude()
    private var negative = DecimalMagnitude()
    private var scale = 0
    private var hasScale = false
    /// How many values were added.
    package private(set) var count: UInt64 = 0

    /// The most significant digits a result keeps (`Decimal` holds 38 in every case).
    static let maxDigits = 38

    /// Adds ±D1…Dn × 10^(`exponent` - n), the digits given by `digit(i)` (ASCII), as
    /// `DecimalStorage.withComponents` hands them over; n = 0 is zero.
    package init() {}

    package mutating func add(negative isNegative: Bool, count n: Int, exponent: Int, digit: (Int) -> UInt8) {
        count &+= 1
        guard n > 0 else { return }
        var value = DecimalMagnitude(count: n, digit: digit)
        let power = exponent - n
        if !hasScale {
            scale = power
            hasScale = true
        } else if power < scale {
            positive.scale(byPowerOfTen: scale - power)
            negative.scale(byPowerOfTen: scale - power)
            scale = power
        } else {
            value.scale(byPowerOfTen: power - scale)
        }
        if isNegative { negative.add(value) } else { positive.add(value) }
    }

    /// The exact sum (0 when nothing was added), or nil when it needs more than 38 significant
    /// digits or lies beyond `Decimal`'s exponents.
    package var sum: Decimal? {
        let (isNegative, magnitude) = signedTotal
        return Self.decimal(negative: isNegative, magnitude: magnitude, power: scale)
    }

    /// The average, rounded half up to 38 significant digits (and to `Decimal`'s smallest
    /// exponent); nil when nothing was added.
    package var average: Decimal? {
        guard count > 0 else { return nil }
        let (isNegative, total) = signedTotal
        guard !total.isZero else { return Decimal(0) }
        // Scale the total so that the quotient has at least 40 digits: 38 kept, and more to round on.
        let extra = max(0, Self.maxDigits + 2 + DecimalMagnitude(count).digitCount - total.digitCount)
        var numerator = total
        numerator.scale(byPowerOfTen: extra)
        let quotient = numerator.divided(by: count).quotient
        let power = scale - extra
        // Drop digits beyond 38, and below 10^-128, the smallest exponent a `Decimal` has.
        let dropped = max(quotient.digitCount - Self.maxDigits, -128 - power, 0)
        let rounded = quotient.roundingOff(digits: dropped)
        return Self.decimal(negative: isNegative, magnitude: rounded, power: power + dropped)
    }

    /// The sign and magnitude of positive - negative, both at `scale`.
    private var signedTotal: (negative: Bool, magnitude: DecimalMagnitude) {
        positive >= negative ? (false, positive - negative) : (true, negative - positive)
    }

    /// ±`magnitude` × 10^`power` as a `Decimal`, only when it is exactly one.
    private static func decimal(negative: Bool, magnitude: DecimalMagnitude, power: Int) -> Decimal? {
        guard !magnitude.isZero else { return Decimal(0) }
        return Decimal.exactly((negative ? "-" : "") + magnitude.digits + "e\(power)")
    }
}
