import Foundation

/// RFC 3339 timestamps, the JSON form of `date` attributes.
///
/// Foundation's ISO8601DateFormatter stops at milliseconds; dates here keep microseconds,
/// and parsing accepts any number of fractional digits and any UTC offset.
public enum RFC3339 {
    /// `2026-01-01T12:00:00.123456Z`: UTC, always six fractional digits.
    public static func string(from date: Date) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(27)
        append(date, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends the timestamp's text to `bytes` (what a JSON writer calls, without a String).
    public static func append(_ date: Date, to bytes: inout [UInt8]) {
        withText(of: date) { bytes.append(contentsOf: $0) }
    }

    /// Calls `body` with the timestamp's text, made on the stack (a log line's time, without a
    /// String or an array).
    public static func withText<R>(of date: Date, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        let total = date.timeIntervalSince1970
        var seconds = total.rounded(.down)
        var micros = ((total - seconds) * 1_000_000).rounded()
        if micros >= 1_000_000 { seconds += 1; micros -= 1_000_000 }
        return withText(secondsSince1970: Int64(seconds), microseconds: Int64(micros), body)
    }

    /// The calendar fields of a time given as whole seconds since 1970, in UTC: what a writer
    /// that puts the digits itself (a log line) needs.
    public static func fields(secondsSince1970 wholeSeconds: Int64) -> (year: Int64, month: Int64, day: Int64, hour: Int64, minute: Int64, second: Int64) {
        let days = floorDiv(wholeSeconds, 86_400)
        let secondOfDay = wholeSeconds - days * 86_400
        let (year, month, day) = civilDate(fromDays: days)
        return (year, month, day, secondOfDay / 3600, secondOfDay % 3600 / 60, secondOfDay % 60)
    }

    /// The same for a time given as whole seconds since 1970 and microseconds (0 to 999,999):
    /// what `clock_gettime` gives, without a `Date`.
    public static func withText<R>(secondsSince1970 wholeSeconds: Int64, microseconds micros: Int64,
                                   _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        let days = floorDiv(wholeSeconds, 86_400)
        let secondOfDay = wholeSeconds - days * 86_400
        let (year, month, day) = civilDate(fromDays: days)
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 64) { text in
            writeFields(year: year, month: month, day: day, secondOfDay: secondOfDay, micros: micros, into: text)
            if !(0...9999).contains(year) {
                // Outside RFC 3339's years: the year as it is, then the rest of the fields.
                let digits = Array(String(year).utf8)
                for i in 0..<23 { text[32 + i] = text[4 + i] }
                for (i, byte) in digits.enumerated() { text[i] = byte }
                for i in 0..<23 { text[digits.count + i] = text[32 + i] }
                return body(UnsafeBufferPointer(rebasing: text[0..<(digits.count + 23)]))
            }
            return body(UnsafeBufferPointer(rebasing: text[0..<27]))
        }
    }

    /// Writes `YYYY-MM-DDTHH:MM:SS.ffffffZ` into the first 27 bytes of `text`.
    private static func writeFields(year: Int64, month: Int64, day: Int64, secondOfDay: Int64, micros: Int64,
                                    into text: UnsafeMutableBufferPointer<UInt8>) {
        func put(_ value: Int64, at offset: Int, width: Int) {
            var value = value
            for i in stride(from: offset + width - 1, through: offset, by: -1) {
                text[i] = UInt8(truncatingIfNeeded: 48 + value % 10)
                value /= 10
            }
        }
        put(year, at: 0, width: 4)
        text[4] = UInt8(ascii: "-"); put(month, at: 5, width: 2)
        text[7] = UInt8(ascii: "-"); put(day, at: 8, width: 2)
        text[10] = UInt8(ascii: "T"); put(secondOfDay / 3600, at: 11, width: 2)
        text[13] = UInt8(ascii: ":"); put(secondOfDay % 3600 / 60, at: 14, width: 2)
        text[16] = UInt8(ascii: ":"); put(secondOfDay % 60, at: 17, width: 2)
        text[19] = UInt8(ascii: "."); put(micros, at: 20, width: 6)
        text[26] = UInt8(ascii: "Z")
    }

    /// Parses `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`; nil when the text is not such a timestamp.
    public static func date(from text: String) -> Date? {
        let b = Array(text.utf8)
        guard b.count >= 20 else { return nil }
        func digits(_ start: Int, _ count: Int) -> Int64? {
            guard start + count <= b.count else { return nil }
            var v: Int64 = 0
            for i in start..<(start + count) {
                guard b[i] >= 48 && b[i] <= 57 else { return nil }
                v = v * 10 + Int64(b[i] - 48)
            }
            return v
        }
        guard let year = digits(0, 4), b[4] == UInt8(ascii: "-"), let month = digits(5, 2), b[7] == UInt8(ascii: "-"),
              let day = digits(8, 2), b[10] == UInt8(ascii: "T") || b[10] == UInt8(ascii: "t") || b[10] == UInt8(ascii: " "),
              let hour = digits(11, 2), b[13] == UInt8(ascii: ":"), let minute = digits(14, 2),
              b[16] == UInt8(ascii: ":"), let second = digits(17, 2) else { return nil }
        guard (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year),
              hour < 24, minute < 60, second < 61 else { return nil }
        var i = 19
        var fraction = 0.0
        if i < b.count, b[i] == UInt8(ascii: ".") {
            i += 1
            var scale = 0.1
            let start = i
            while i < b.count, b[i] >= 48, b[i] <= 57 {
                fraction += Double(b[i] - 48) * scale
                scale /= 10
                i += 1
            }
            guard i > start else { return nil }
        }
        guard i < b.count else { return nil }
        var offsetSeconds: Int64 = 0
        switch b[i] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            i += 1
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            guard let oh = digits(i + 1, 2), i + 3 < b.count, b[i + 3] == UInt8(ascii: ":"), let om = digits(i + 4, 2),
                  oh < 24, om < 60 else { return nil }
            offsetSeconds = (oh * 3600 + om * 60) * (b[i] == UInt8(ascii: "+") ? 1 : -1)
            i += 6
        default:
            return nil
        }
        guard i == b.count else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        let whole = days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds
        return Date(timeIntervalSince1970: Double(whole) + fraction)
    }

    private static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 {
        let q = a / b
        return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q
    }

    private static func isLeap(_ y: Int64) -> Bool { (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 }

    private static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: return isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    // Howard Hinnant's days-from-civil algorithm (proleptic Gregorian calendar).
    private static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = floorDiv(y, 400)
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    private static func civilDate(fromDays days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = floorDiv(z, 146_097)
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
