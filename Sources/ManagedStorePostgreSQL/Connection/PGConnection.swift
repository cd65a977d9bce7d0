import CPostgreSQL
import Foundation
import ManagedStoreCore

/// One connection to a PostgreSQL server through libpq: statements with bound parameters, in
/// text form, and their results.
///
/// Not Sendable: a connection is used by one thread at a time (the store's writer lock, or a
/// reader lent from its pool).
final class PGConnection {
    private let handle: OpaquePointer

    /// Connects with a libpq connection string or URI (`postgres://user@host:port/db?...`).
    /// The password comes from the URI, `PGPASSWORD` or `~/.pgpass`, as libpq finds it; errors
    /// name the location without it (`PostgresLocation.redacted`).
    init(_ location: PostgresLocation) throws(StoreError) {
        guard let handle = PQconnectdb(location.connectionString) else {
            throw .cannotOpen(path: location.redacted, message: "libpq could not allocate a connection")
        }
        guard PQstatus(handle) == CONNECTION_OK else {
            let message = String(cString: PQerrorMessage(handle)).trimmingCharacters(in: .whitespacesAndNewlines)
            PQfinish(handle)
            throw .cannotOpen(path: location.redacted, message: message)
        }
        self.handle = handle
        // Keys and versions read as text are parsed by Swift: keep the server's number format
        // and time zone from changing what a row's text says.
        try execute("SET client_encoding TO 'UTF8'; SET extra_float_digits TO 3; SET TIME ZONE 'UTC'")
    }

    deinit { PQfinish(handle) }

    /// Runs one statement (or several, without parameters) and returns its rows.
    @discardableResult
    func execute(_ sql: String, _ parameters: [String?] = []) throws(StoreError) -> PGResult {
        let result: OpaquePointer? = withCStrings(parameters) { pointers in
            if parameters.isEmpty { return PQexec(handle, sql) }
            return PQexecParams(handle, sql, Int32(parameters.count), nil, pointers, nil, nil, 0)
        }
        guard let result else {
            throw .engine(code: -1, message: String(cString: PQerrorMessage(handle)), sql: sql)
        }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return PGResult(result)
        default:
            let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) } ?? ""
            let message = PQresultErrorMessage(result).map { String(cString: $0) } ?? "unknown error"
            PQclear(result)
            throw .engine(code: PGSQLState.code(state), message: "\(state): \(message.trimmingCharacters(in: .whitespacesAndNewlines))", sql: sql)
        }
    }

    /// Whether a transaction is open and not failed (a failed statement outside a savepoint
    /// leaves it failed: it can only roll back).
    var isInIntactTransaction: Bool { PQtransactionStatus(handle) == PQTRANS_INTRANS }

    /// Whether the connection is still usable (a server restart or a dropped socket ends it).
    var isHealthy: Bool { PQstatus(handle) == CONNECTION_OK }

    /// The process ID of the server backend, for tests that end a connection from outside.
    var backendPID: Int32 { PQbackendPID(handle) }
}

/// Parameters as C strings for the duration of `body` (nil: SQL NULL).
private func withCStrings<R>(_ strings: [String?], _ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> R) -> R {
    var owned: [UnsafeMutablePointer<CChar>?] = strings.map { $0.flatMap { strdup($0) } }
    defer { for p in owned { free(p) } }
    return owned.withUnsafeMutableBufferPointer { buffer in
        buffer.baseAddress!.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: max(1, buffer.count)) { body($0) }
    }
}

/// The rows a statement returned, read as text. Owns libpq's result and frees it.
final class PGResult {
    private let handle: OpaquePointer

    init(_ handle: OpaquePointer) { self.handle = handle }
    deinit { PQclear(handle) }

    var rowCount: Int { Int(PQntuples(handle)) }
    var columnCount: Int { Int(PQnfields(handle)) }
    /// Rows a command changed (`UPDATE`, `DELETE`, `INSERT`).
    var affectedRows: Int { Int(String(cString: PQcmdTuples(handle))) ?? 0 }
    /// The command's tag (`COMMIT`, or `ROLLBACK` for a COMMIT of a failed transaction).
    var commandStatus: String { String(cString: PQcmdStatus(handle)) }

    /// True for SQL NULL, and for a cell the result does not have (libpq would complain on stderr).
    func isNull(_ row: Int, _ column: Int) -> Bool {
        guard row < rowCount, column < columnCount else { return true }
        return PQgetisnull(handle, Int32(row), Int32(column)) != 0
    }

    func text(_ row: Int, _ column: Int) -> String? {
        if isNull(row, column) { return nil }
        return String(cString: PQgetvalue(handle, Int32(row), Int32(column)))
    }

    func int64(_ row: Int, _ column: Int) -> Int64? { text(row, column).flatMap { Int64($0) } }
}

/// The SQLSTATE codes the store tells apart.
enum PGSQLState {
    static let uniqueViolation = "23505"
    static let serializationFailure = "40001"
    static let deadlockDetected = "40P01"
    static let undefinedTable = "42P01"

    /// A number for `StoreError.engine`'s code: the five SQLSTATE characters in base 36.
    static func code(_ state: String) -> Int32 { Int32(state, radix: 36) ?? -1 }
}
