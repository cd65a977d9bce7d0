import CSQLite
import Foundation
import ManagedStoreCore

/// The aggregate SQL functions that aggregate requests use where SQLite's own would be wrong:
///
/// - `ms_sum_integer(x, result)`: the exact sum of integers. SQLite's `sum()` fails as soon as a
///   partial sum overflows, so its answer would depend on the order of the rows; here partial
///   sums have 128 bits and only a total beyond Int64 is an error.
/// - `ms_avg_integer(x, result)`: their average, the exact sum divided by the count as doubles
///   (SQLite's `avg()` adds large integers as doubles, and loses what cancels out).
/// - `ms_sum_decimal(x, result)` and `ms_avg_decimal(x, result)`: the sum and the average of
///   stored decimals (`DecimalStorage` text, which SQL cannot add), exact (`ExactDecimalSum`),
///   as stored text again, so that comparing and ordering the results stays bytewise.
///
/// - `ms_sum_in_predicate(x)`: a predicate's `@sum` of integers [NSExpression's @sum, which
///   never overflows in Foundation]: the exact sum when it fits Int64, else the nearest double,
///   so that `items.@sum.size > 0` compares the true total instead of failing the fetch.
///   `PredicateEvaluator` sums the same way in memory.
///
/// `result` is the position of the result in its request: an overflow names it in its error
/// message (`overflowMessage`), so that the caller can say which result overflowed. Nulls, and
/// decimal text that is not what `DecimalStorage` writes (which reads as null), are skipped.
enum AggregateSQLFunctions {
    static func register(on db: OpaquePointer, flags: Int32) {
        sqlite3_create_function_v2(db, "ms_sum_integer", 2, flags, nil, nil, integerSumStep, integerSumFinal, nil)
        sqlite3_create_function_v2(db, "ms_avg_integer", 2, flags, nil, nil, integerSumStep, integerAverageFinal, nil)
        sqlite3_create_function_v2(db, "ms_sum_decimal", 2, flags, nil, nil, decimalStep, decimalSumFinal, nil)
        sqlite3_create_function_v2(db, "ms_avg_decimal", 2, flags, nil, nil, decimalStep, decimalAverageFinal, nil)
        sqlite3_create_function_v2(db, "ms_sum_in_predicate", 1, flags, nil, nil, integerSumStep, integerSumOrDoubleFinal, nil)
    }

    private static let overflowPrefix = "ManagedStore: aggregate result "
    private static let overflowSuffix = " overflows"

    /// The error message of an overflow of the result at `position`.
    static func overflowMessage(result position: Int64) -> String { overflowPrefix + String(position) + overflowSuffix }

    /// The position of the result whose overflow `message` reports; nil for any other message.
    static func overflowedResult(in message: String) -> Int? {
        guard let start = message.range(of: overflowPrefix)?.upperBound,
              let end = message[start...].range(of: overflowSuffix)?.lowerBound else { return nil }
        return Int(message[start..<end])
    }
}

private func resultOverflow(_ context: OpaquePointer?, position: Int64) {
    sqlite3_result_error(context, AggregateSQLFunctions.overflowMessage(result: position), -1)
}

// MARK: Integers

/// A 128-bit two's complement partial sum. SQLite hands out the aggregate's memory zeroed,
/// which is the empty sum.
private struct IntegerSum {
    var low: UInt64
    var high: Int64
    var count: UInt64
    var position: Int64

    /// The 128-bit sum. (Kept as two words: SQLite's aggregate memory is aligned for 8 bytes,
    /// not the 16 an Int128 asks for.)
    var total: Int128 { Int128(high) << 64 | Int128(low) }

    /// The sum as an Int64, when it is one.
    var exact: Int64? { Int64(exactly: total) }

    /// The sum as the nearest double, rounded once, as `PredicateEvaluator` rounds its own:
    /// a predicate's sum compares alike in SQL and in memory.
    var double: Double { Double(total) }
}

private func integerSumStep(_ context: OpaquePointer?, _ argc: Int32, _ argv: UnsafeMutablePointer<OpaquePointer?>?) {
    guard let value = argv?[0], sqlite3_value_type(value) != SQLITE_NULL else { return }
    guard let raw = sqlite3_aggregate_context(context, Int32(MemoryLayout<IntegerSum>.stride)) else {
        sqlite3_result_error_nomem(context)
        return
    }
    let state = raw.bindMemory(to: IntegerSum.self, capacity: 1)
    let v = sqlite3_value_int64(value)
    let (low, carry) = state.pointee.low.addingReportingOverflow(UInt64(bitPattern: v))
    state.pointee.low = low
    // Sign extension of v, plus the carry: at most 2^64 rows of |v| ≤ 2^63 stay within 128 bits.
    state.pointee.high = state.pointee.high &+ (v < 0 ? -1 : 0) &+ (carry ? 1 : 0)
    state.pointee.count &+= 1
    // The predicate's sum has no result position (and no second argument).
    if argc > 1 { state.pointee.position = sqlite3_value_int64(argv?[1]) }
}

/// The group's sum; nil when no value came.
private func integerSum(_ context: OpaquePointer?) -> IntegerSum? {
    sqlite3_aggregate_context(context, 0).map { $0.bindMemory(to: IntegerSum.self, capacity: 1).pointee }
}

private func integerSumFinal(_ context: OpaquePointer?) {
    guard let state = integerSum(context) else {
        sqlite3_result_int64(context, 0)  // no values: the sum is 0
        return
    }
    guard let total = state.exact else { return resultOverflow(context, position: state.position) }
    sqlite3_result_int64(context, total)
}

private func integerSumOrDoubleFinal(_ context: OpaquePointer?) {
    guard let state = integerSum(context) else {
        sqlite3_result_int64(context, 0)  // no values: the sum is 0
        return
    }
    if let total = state.exact { sqlite3_result_int64(context, total) } else { sqlite3_result_double(context, state.double) }
}

private func integerAverageFinal(_ context: OpaquePointer?) {
    guard let state = integerSum(context), state.count > 0 else {
        sqlite3_result_null(context)  // no values: no average
        return
    }
    sqlite3_result_double(context, state.double / Double(state.count))
}

// MARK: Decimals

/// The running sum of one group's decimals. Kept alive by the aggregate's memory (one retained
/// pointer) from the first value to `xFinal`, which SQLite calls once for every aggregate it
/// started, also when a statement stops early.
private final class DecimalAccumulator {
    var sum = ExactDecimalSum()
    var position: Int64 = 0
}

private typealias AccumulatorSlot = UnsafeMutablePointer<UnsafeMutableRawPointer?>

private func decimalStep(_ context: OpaquePointer?, _ argc: Int32, _ argv: UnsafeMutablePointer<OpaquePointer?>?) {
    guard let value = argv?[0], sqlite3_value_type(value) != SQLITE_NULL else { return }
    guard let raw = sqlite3_aggregate_context(context, Int32(MemoryLayout<UnsafeMutableRawPointer?>.stride)) else {
        sqlite3_result_error_nomem(context)
        return
    }
    let slot: AccumulatorSlot = raw.bindMemory(to: UnsafeMutableRawPointer?.self, capacity: 1)
    if slot.pointee == nil { slot.pointee = Unmanaged.passRetained(DecimalAccumulator()).toOpaque() }
    guard let opaque = slot.pointee else { return }
    let accumulator = Unmanaged<DecimalAccumulator>.fromOpaque(opaque).takeUnretainedValue()
    accumulator.position = sqlite3_value_int64(argv?[1])
    let text = UnsafeBufferPointer(start: sqlite3_value_text(value), count: Int(sqlite3_value_bytes(value)))
    _ = DecimalStorage.withComponents(text) { negative, count, exponent, digit -> Void? in
        accumulator.sum.add(negative: negative, count: count, exponent: exponent, digit: digit)
        return ()
    }
}

/// The group's accumulator, handed back by its slot (which is emptied); nil when no value came.
private func takeAccumulator(_ context: OpaquePointer?) -> DecimalAccumulator? {
    guard let raw = sqlite3_aggregate_context(context, 0) else { return nil }
    let slot: AccumulatorSlot = raw.bindMemory(to: UnsafeMutableRawPointer?.self, capacity: 1)
    guard let opaque = slot.pointee else { return nil }
    slot.pointee = nil
    return Unmanaged<DecimalAccumulator>.fromOpaque(opaque).takeRetainedValue()
}

private func resultDecimal(_ context: OpaquePointer?, _ value: Decimal?, position: Int64) {
    guard let value, let text = DecimalStorage.encode(value) else { return resultOverflow(context, position: position) }
    resultText(context, text)
}

private func decimalSumFinal(_ context: OpaquePointer?) {
    guard let accumulator = takeAccumulator(context) else {
        resultDecimal(context, Decimal(0), position: 0)  // no values: the sum is 0
        return
    }
    resultDecimal(context, accumulator.sum.sum, position: accumulator.position)
}

private func decimalAverageFinal(_ context: OpaquePointer?) {
    guard let accumulator = takeAccumulator(context), accumulator.sum.count > 0 else {
        sqlite3_result_null(context)  // no values: no average
        return
    }
    resultDecimal(context, accumulator.sum.average, position: accumulator.position)
}
