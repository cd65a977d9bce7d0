import CSQLite
import Foundation
import ManagedStoreCore

/// Collations and functions every connection registers before it touches the schema. They
/// serve queries only (and the format-1 migration): none may appear in a table or index
/// definition, so that the file stays readable by stock SQLite.
enum SQLFunctions {
    /// The collation that format-1 stores declared on their `decimal` columns (TEXT holding the
    /// plain number, compared numerically). Nothing uses it in a definition any more: a custom
    /// collation there makes the file unreadable to stock SQLite, and decimals are now stored
    /// as text that orders bytewise (`DecimalStorage`). It stays registered, which is harmless,
    /// so that a format-1 store's tables and indexes can be read while `StoreFormatMigration`
    /// rebuilds them.
    static let decimalCollation = "MS_DECIMAL"

    static func register(on db: OpaquePointer) {
        sqlite3_create_collation_v2(db, decimalCollation, SQLITE_UTF8, nil, compareDecimalText, nil)
        let flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS
        // ms_fold(text, options): `[c]`/`[d]` folding, exactly as the in-memory evaluator folds.
        sqlite3_create_function_v2(db, "ms_fold", 2, flags, nil, foldFunction, nil, nil, nil)
        // ms_strop(code, value, pattern, options): BEGINSWITH, ENDSWITH, CONTAINS, LIKE, MATCHES.
        sqlite3_create_function_v2(db, "ms_strop", 4, flags, nil, stringOperationFunction, nil, nil, nil)
        AggregateSQLFunctions.register(on: db, flags: flags)
    }
}

private let posix = Locale(identifier: "en_US_POSIX")

/// Compares two format-1 decimal texts numerically; texts that are not numbers sort after
/// numbers, bytewise.
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

/// The text of argument `i`, or nil for SQL NULL.
private func textArgument(_ argv: UnsafeMutablePointer<OpaquePointer?>?, _ i: Int) -> String? {
    guard let value = argv?[i], sqlite3_value_type(value) != SQLITE_NULL, let pointer = sqlite3_value_text(value) else { return nil }
    return String(decoding: UnsafeBufferPointer(start: pointer, count: Int(sqlite3_value_bytes(value))), as: UTF8.self)
}

/// Makes `text` the result of the SQL function called with `context`.
func resultText(_ context: OpaquePointer?, _ text: String) {
    var text = text
    text.withUTF8 { utf8 in
        sqlite3_result_text64(context, UnsafeRawPointer(utf8.baseAddress ?? UnsafePointer(bitPattern: 1)!).assumingMemoryBound(to: CChar.self),
                              UInt64(utf8.count), csqlite_transient(), UInt8(SQLITE_UTF8))
    }
}

private func foldFunction(_ context: OpaquePointer?, _ argc: Int32, _ argv: UnsafeMutablePointer<OpaquePointer?>?) {
    guard let text = textArgument(argv, 0) else { sqlite3_result_null(context); return }
    let options = ComparisonOptions(rawValue: Int(sqlite3_value_int(argv?[1])))
    resultText(context, StringOperations.fold(text, options))
}

private func stringOperationFunction(_ context: OpaquePointer?, _ argc: Int32, _ argv: UnsafeMutablePointer<OpaquePointer?>?) {
    guard let code = StringOperations.Code(rawValue: sqlite3_value_int(argv?[0])),
          let value = textArgument(argv, 1), let pattern = textArgument(argv, 2) else {
        sqlite3_result_int(context, 0)  // a null on either side never matches
        return
    }
    let options = ComparisonOptions(rawValue: Int(sqlite3_value_int(argv?[3])))
    sqlite3_result_int(context, StringOperations.evaluate(code, value, pattern, options) ? 1 : 0)
}
