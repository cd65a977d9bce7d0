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
    /// Statements prepared on this connection, by their SQL: parsed and planned once.
    private var prepared: [String: String] = [:]
    /// The most statements kept prepared; past it, a statement runs unprepared (SQL made for
    /// one request, such as an IN list of its length, would otherwise pile up).
    private static let maxPrepared = 512

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

    /// A command sent without waiting for its answer (`sendWithoutWaiting`), read before the next.
    private var pending: String?

    /// Sends `sql` (no parameters) and returns at once; its answer is read, and a failure
    /// thrown, by the next `execute`. A read-only transaction's COMMIT: the connection goes
    /// back to its pool while the server ends the transaction, off the request's path.
    func sendWithoutWaiting(_ sql: String) throws(StoreError) {
        try finishPending()
        guard PQsendQuery(handle, sql) == 1 else {
            throw .engine(code: -1, message: String(cString: PQerrorMessage(handle)), sql: sql)
        }
        pending = sql
    }

    private func finishPending() throws(StoreError) {
        guard let sql = pending else { return }
        pending = nil
        var failure: StoreError?
        while let result = PQgetResult(handle) {
            do { _ = try checked(result, sql) } catch { failure = failure ?? error }
        }
        if let failure { throw failure }
    }

    /// A BEGIN to send with the next statement (`beginWithNextStatement`).
    private var deferredBegin: String?

    /// A statement waiting to be sent with the next one that is waited for.
    private struct Waiting {
        let sql: String
        let parameters: [String?]
        /// Whether it may fail (`queue`), which `flushQueued` must find out; a SAVEPOINT or a
        /// RELEASE cannot, and waits for whatever statement comes next.
        let mayFail: Bool
        /// The unit of work that sent it (`currentUnit`).
        let unit: Int
    }

    /// The unit of work (a save's savepoint) the statements sent now belong to; 0 outside one.
    /// A failure is told apart by it: the current unit's own, or one of a unit before it whose
    /// statements waited (`failedEarlierUnit`).
    var currentUnit = 0
    /// Whether a statement of a unit before the current one failed, sent with the current
    /// unit's: what the units before were told (that they wrote) no longer holds, and the
    /// transaction can only be rolled back. Cleared by the next BEGIN.
    private(set) var failedEarlierUnit = false
    /// Statements to send with the next statement, after the BEGIN if one waits.
    private var waiting: [Waiting] = []

    /// Sends `begin` (a BEGIN without parameters) together with the next statement, in one
    /// round trip (libpq's pipeline mode): a read transaction costs no round trip of its own.
    /// Forgotten if no statement follows (`clearDeferredBegin`).
    func beginWithNextStatement(_ begin: String) throws(StoreError) {
        try finishPending()
        deferredBegin = begin
        waiting = []
        failedEarlierUnit = false
    }

    /// Sends `sql` (no parameters, one statement that cannot fail in an intact transaction: a
    /// SAVEPOINT, a RELEASE) together with the next statement, after what already waits.
    func sendWithNextStatement(_ sql: String) {
        waiting.append(Waiting(sql: sql, parameters: [], mayFail: false, unit: currentUnit))
    }

    /// Sends `sql` with the next statement that is waited for (`execute`), or with
    /// `flushQueued`, in one round trip with everything else that waits: a statement whose
    /// answer is only whether it failed (an INSERT of rows with keys known already). Its
    /// failure is thrown by that `execute` or `flushQueued`.
    func queue(_ sql: String, _ parameters: [String?]) {
        waiting.append(Waiting(sql: sql, parameters: parameters, mayFail: true, unit: currentUnit))
    }

    /// Sends what waits and reads every answer, throwing the first failure; nothing is sent
    /// when only statements that cannot fail wait (they go with the next statement still).
    func flushQueued() throws(StoreError) {
        guard waiting.contains(where: \.mayFail) else { return }
        try finishPending()
        _ = try pipelined(takeEverythingWaiting())
    }

    /// Forgets `sql` when it is the last statement waiting (a SAVEPOINT no statement followed);
    /// false when it was sent.
    func forgetIfWaiting(_ sql: String) -> Bool {
        guard let last = waiting.last, last.sql == sql, !last.mayFail else { return false }
        waiting.removeLast()
        return true
    }

    /// Whether a BEGIN waits for the next statement (`beginWithNextStatement`).
    var hasDeferredBegin: Bool { deferredBegin != nil }

    /// Forgets a deferred BEGIN that no statement followed, and whatever waits after it; true
    /// when the BEGIN was sent (a transaction is open, which the caller ends).
    func clearDeferredBegin() -> Bool {
        defer { deferredBegin = nil; waiting = [] }
        return deferredBegin == nil
    }

    /// The deferred BEGIN and the statements waiting, in order, no longer waiting.
    private func takeEverythingWaiting() -> [Waiting] {
        let all = (deferredBegin.map { [Waiting(sql: $0, parameters: [], mayFail: true, unit: currentUnit)] } ?? []) + waiting
        deferredBegin = nil
        waiting = []
        return all
    }

    /// Statements run (`execute`) so far: what a read lent for one statement checks.
    private(set) var statementCount = 0

    /// Runs one statement (or several, without parameters), after what waits, and returns its
    /// rows. A statement with parameters is prepared on its first run and run prepared after.
    @discardableResult
    func execute(_ sql: String, _ parameters: [String?] = []) throws(StoreError) -> PGResult {
        statementCount &+= 1
        try finishPending()
        if deferredBegin != nil || !waiting.isEmpty {
            return try pipelined(takeEverythingWaiting() + [Waiting(sql: sql, parameters: parameters, mayFail: true, unit: currentUnit)])
        }
        if parameters.isEmpty { return try checked(PQexec(handle, sql), sql) }
        let name = preparedName(sql)
        if let name, prepared[sql] == nil {
            _ = try checked(PQprepare(handle, name, sql, Int32(parameters.count), nil), sql)
            prepared[sql] = name
        }
        let result: OpaquePointer? = withCStrings(parameters) { pointers in
            if let name { return PQexecPrepared(handle, name, Int32(parameters.count), pointers, nil, nil, 0) }
            return PQexecParams(handle, sql, Int32(parameters.count), nil, pointers, nil, nil, 0)
        }
        return try checked(result, sql)
    }

    /// The name `sql` is (or is to be) prepared under; nil when it runs unprepared (no
    /// parameters, or as many statements prepared as are kept).
    private func preparedName(_ sql: String) -> String? {
        if let name = prepared[sql] { return name }
        return prepared.count < Self.maxPrepared ? "ms\(prepared.count)" : nil
    }

    /// `statements` in one round trip (libpq's pipeline mode), each new one with parameters
    /// prepared first; the last one's result. The first failure is thrown, after every answer
    /// was read; PostgreSQL skips what follows a failure up to the sync point.
    private func pipelined(_ statements: [Waiting]) throws(StoreError) -> PGResult {
        guard PQenterPipelineMode(handle) == 1 else {
            throw .engine(code: -1, message: String(cString: PQerrorMessage(handle)), sql: statements.first?.sql)
        }
        defer { PQexitPipelineMode(handle) }
        // Per answer to read, in order: the statement it answers, and the name a PREPARE gave.
        var answers: [(sql: String, preparing: String?, unit: Int)] = []
        var preparing: [String: String] = [:]
        var sent = true
        for statement in statements where sent {
            let parameters = statement.parameters
            var name: String?
            if !parameters.isEmpty {
                name = prepared[statement.sql] ?? preparing[statement.sql]
                if name == nil, prepared.count + preparing.count < Self.maxPrepared {
                    let fresh = "ms\(prepared.count + preparing.count)"
                    sent = PQsendPrepare(handle, fresh, statement.sql, Int32(parameters.count), nil) == 1
                    preparing[statement.sql] = fresh
                    answers.append((statement.sql, fresh, statement.unit))
                    name = fresh
                }
            }
            sent = sent && withCStrings(parameters) { pointers in
                if let name { return PQsendQueryPrepared(handle, name, Int32(parameters.count), pointers, nil, nil, 0) == 1 }
                return PQsendQueryParams(handle, statement.sql, Int32(parameters.count), nil, pointers, nil, nil, 0) == 1
            }
            answers.append((statement.sql, nil, statement.unit))
        }
        sent = sent && PQpipelineSync(handle) == 1
        guard sent else { throw .engine(code: -1, message: String(cString: PQerrorMessage(handle)), sql: statements.last?.sql) }
        // Each answer is its results followed by a NULL; then the sync point.
        var failure: StoreError?
        var lastResult: PGResult?
        for answer in answers {
            var succeeded = false
            while let result = PQgetResult(handle) {
                do {
                    lastResult = try checked(result, answer.sql)
                    succeeded = true
                } catch {
                    if failure == nil, answer.unit != currentUnit { failedEarlierUnit = true }
                    failure = failure ?? error
                }
            }
            if succeeded, let name = answer.preparing { prepared[answer.sql] = name }
        }
        while let result = PQgetResult(handle) {
            let status = PQresultStatus(result)
            PQclear(result)
            if status == PGRES_PIPELINE_SYNC { break }
        }
        if let failure { throw failure }
        guard let lastResult else { throw .engine(code: -1, message: "no answer to the statement", sql: statements.last?.sql) }
        return lastResult
    }

    /// `result` when it is a success; its error, typed, otherwise.
    private func checked(_ result: OpaquePointer?, _ sql: String) throws(StoreError) -> PGResult {
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
            let text = "\(state): \(message.trimmingCharacters(in: .whitespacesAndNewlines))"
            // Another server's transaction held what this one needed (a lock cycle PostgreSQL
            // broke by ending this statement, or a snapshot that could not be serialized):
            // nothing of the statement stands, and running it again later may well succeed.
            if state == PGSQLState.deadlockDetected || state == PGSQLState.serializationFailure { throw .busy(text) }
            throw .engine(code: PGSQLState.code(state), message: text, sql: sql)
        }
    }

    /// Whether a transaction is open and not failed (a failed statement outside a savepoint
    /// leaves it failed: it can only roll back).
    var isInIntactTransaction: Bool { PQtransactionStatus(handle) == PQTRANS_INTRANS }

    /// Whether the connection is still usable (a server restart or a dropped socket ends it).
    var isHealthy: Bool { PQstatus(handle) == CONNECTION_OK }

    deinit {
        _ = try? finishPending()
        PQfinish(handle)
    }

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
    static let numericValueOutOfRange = "22003"
    static let queryCanceled = "57014"

    /// A number for `StoreError.engine`'s code: the five SQLSTATE characters in base 36.
    static func code(_ state: String) -> Int32 { Int32(state, radix: 36) ?? -1 }
}
