import CSQLite
import Foundation

/// Collations and functions every connection registers before it touches the schema.
enum SQLFunctions {
    /// `decimal` columns are TEXT holding the exact number; this collation orders and compares
    /// them numerically, so `=`, `<`, ORDER BY and indexes on them behave like numbers.
    static let decimalCollation = "MS_DECIMAL"

    static func register(on db: OpaquePointer) {
        sqlite3_create_collation_v2(db, decimalCollation, SQLITE_UTF8, nil, compareDecimalText, nil)
    }
}

private let posix = Locale(identifier: "en_US_POSIX")

/// Compares two decimal texts numerically; texts that are not numbers sort after numbers, bytewise.
private func compareDecimalText(_: UnsafeMutableRawPointer?, _ lhsCount: Int32, _ lhs: UnsafeRawPointer?,
                                _ rhsCount: Int32, _ rhs: UnsafeRawPointer?) -> Int32 {
    func text(_ p: UnsafeRawPointer?, _ n: Int32) -> String {
        guard let p, n > 0 else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: p, count: Int(n)), as: UTF8.self)
    }
    let a = text(lhs, lhsCount), b = text(rhs, rhsCount)
    switch (Decimal(string: a, locale: posix), Decimal(string: b, locale: posix)) {
    case let (x?, y?): return x < y ? -1 : (x == y ? 0 : 1)
    case (nil, .some): return 1
    case (.some, nil): return -1
    case (nil, nil): return a < b ? -1 : (a == b ? 0 : 1)
    }
}
