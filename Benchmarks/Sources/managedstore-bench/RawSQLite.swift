import CSQLiteBench

/// The thinnest useful wrapper over the SQLite C API: the baseline ManagedStore is compared with.
/// Opened like the library's connections (no SQLite mutex: one thread uses it).
final class RawDatabase {
    let handle: OpaquePointer

    init(path: String, readOnly: Bool = false) throws {
        var db: OpaquePointer?
        let flags = (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE) | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            sqlite3_close_v2(db)
            throw BenchmarkError("cannot open \(path): SQLite error \(rc)")
        }
        handle = db
    }

    deinit { sqlite3_close_v2(handle) }

    func execute(_ sql: String) throws {
        let rc = sqlite3_exec(handle, sql, nil, nil, nil)
        guard rc == SQLITE_OK else { throw error(rc, sql) }
    }

    func prepare(_ sql: String) throws -> RawStatement {
        var statement: OpaquePointer?
        let rc = sqlite3_prepare_v2(handle, sql, -1, &statement, nil)
        guard rc == SQLITE_OK, let statement else { throw error(rc, sql) }
        return RawStatement(handle: statement, database: self)
    }

    /// The first column of the first row of `sql`, as text ("" when there is none).
    func scalarText(_ sql: String) throws -> String {
        let statement = try prepare(sql)
        return try statement.step() ? statement.text(0) : ""
    }

    /// Every row of `sql`, its columns as text joined by "|".
    func rows(_ sql: String) throws -> [String] {
        let statement = try prepare(sql)
        var result: [String] = []
        while try statement.step() {
            result.append((0..<sqlite3_column_count(statement.handle)).map { statement.text($0) }.joined(separator: "|"))
        }
        return result
    }

    func error(_ rc: Int32, _ sql: String) -> BenchmarkError {
        BenchmarkError("SQLite error \(rc): \(String(cString: sqlite3_errmsg(handle))) in \(sql)")
    }

    static var version: String { String(cString: sqlite3_libversion()) }
}

final class RawStatement {
    let handle: OpaquePointer
    private let database: RawDatabase

    fileprivate init(handle: OpaquePointer, database: RawDatabase) {
        self.handle = handle
        self.database = database
    }

    deinit { sqlite3_finalize(handle) }

    func bind(_ value: Int64, at index: Int32) { sqlite3_bind_int64(handle, index, value) }
    func bind(_ value: Double, at index: Int32) { sqlite3_bind_double(handle, index, value) }
    func bind(_ value: String, at index: Int32) { sqlite3_bind_text(handle, index, value, -1, bench_sqlite_transient()) }
    func bindNull(at index: Int32) { sqlite3_bind_null(handle, index) }

    /// Advances to the next row; false when the statement is done.
    func step() throws -> Bool {
        let rc = sqlite3_step(handle)
        if rc == SQLITE_ROW { return true }
        if rc == SQLITE_DONE { return false }
        throw database.error(rc, String(cString: sqlite3_sql(handle)))
    }

    func reset() { sqlite3_reset(handle) }

    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }
    func double(_ column: Int32) -> Double { sqlite3_column_double(handle, column) }
    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }

    func text(_ column: Int32) -> String {
        guard let pointer = sqlite3_column_text(handle, column) else { return "" }
        return String(decoding: UnsafeBufferPointer(start: pointer, count: Int(sqlite3_column_bytes(handle, column))), as: UTF8.self)
    }
}

/// A Task row as hand-written code would read it: every column of the table.
struct RawTask {
    var pk: Int64
    var version: Int64
    var title: String
    var priority: Int64
    var done: Bool
    var estimate: Double?
    var due: Double?
    var project: Int64?

    /// The columns, in `RawTask.columns` order.
    static let columns = #""_pk", "_version", "title", "priority", "done", "estimate", "due", "project""#

    init(_ s: RawStatement) {
        pk = s.int64(0)
        version = s.int64(1)
        title = s.text(2)
        priority = s.int64(3)
        done = s.int64(4) != 0
        estimate = s.isNull(5) ? nil : s.double(5)
        due = s.isNull(6) ? nil : s.double(6)
        project = s.isNull(7) ? nil : s.int64(7)
    }
}
