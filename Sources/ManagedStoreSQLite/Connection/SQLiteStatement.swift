import CSQLite
import Foundation
import ManagedStoreCore

/// One prepared statement of one connection; used only by that connection's owner.
final class SQLiteStatement {
    let handle: OpaquePointer
    let sql: String
    unowned let connection: SQLiteConnection

    init(connection: SQLiteConnection, sql: String) throws(StoreError) {
        var statement: OpaquePointer?
        let rc = sqlite3_prepare_v3(connection.handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard rc == SQLITE_OK, let statement else { throw connection.error(rc, sql: sql) }
        self.handle = statement
        self.sql = sql
        self.connection = connection
    }

    deinit { sqlite3_finalize(handle) }

    /// Rewinds, ready for the next use, and clears the bindings unless the caller binds every
    /// parameter again anyway.
    func reset(clearingBindings: Bool = true) {
        sqlite3_reset(handle)
        if clearingBindings { sqlite3_clear_bindings(handle) }
    }

    // MARK: Binding (1-based indexes, as SQLite counts)

    func bind(_ value: AttributeValue, at index: Int32) {
        switch value {
        case .null: sqlite3_bind_null(handle, index)
        case .integer(let v): sqlite3_bind_int64(handle, index, v)
        case .boolean(let v): sqlite3_bind_int64(handle, index, v ? 1 : 0)
        case .double(let v): sqlite3_bind_double(handle, index, v)
        case .float(let v): sqlite3_bind_double(handle, index, Double(v))
        case .date(let v): sqlite3_bind_double(handle, index, v.timeIntervalSinceReferenceDate)
        case .string(let v): bindText(v, at: index)
        case .decimal(let v):
            // The order-preserving text (DecimalStorage); NaN, which has no place in the order, as NULL.
            if let text = DecimalStorage.encode(v) { bindText(text, at: index) } else { sqlite3_bind_null(handle, index) }
        case .uuid(let v): bindText(v.uuidString, at: index)
        case .uri(let v): bindText(v.absoluteString, at: index)
        case .binary(let v):
            v.withUnsafeBytes { raw in
                // A zero-length blob must still be a blob, not NULL: pass a non-nil pointer.
                _ = sqlite3_bind_blob64(handle, index, raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1), UInt64(raw.count), csqlite_transient())
            }
        }
    }

    func bind(_ value: Int64, at index: Int32) { sqlite3_bind_int64(handle, index, value) }

    func bind(_ value: Int64?, at index: Int32) {
        if let value { sqlite3_bind_int64(handle, index, value) } else { sqlite3_bind_null(handle, index) }
    }

    /// Binds bytes as a blob (an empty one is a blob too, not NULL).
    func bindBlob(_ bytes: [UInt8], at index: Int32) {
        bytes.withUnsafeBytes { raw in
            _ = sqlite3_bind_blob64(handle, index, raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1), UInt64(raw.count), csqlite_transient())
        }
    }

    func bindText(_ text: String, at index: Int32) {
        var text = text
        text.withUTF8 { utf8 in
            _ = sqlite3_bind_text64(handle, index, UnsafeRawPointer(utf8.baseAddress ?? UnsafePointer(bitPattern: 1)!)
                                        .assumingMemoryBound(to: CChar.self),
                                    UInt64(utf8.count), csqlite_transient(), UInt8(SQLITE_UTF8))
        }
    }

    /// Binds UTF-8 text without copying it (SQLITE_STATIC), for a statement stepped and reset
    /// while `text` is still borrowed: the caller must `reset()` (which clears the binding)
    /// before the bytes go. Saves SQLite's copy of each value on the writer's hottest rows.
    func bindBorrowedText(_ text: UnsafeBufferPointer<UInt8>, at index: Int32) {
        guard let base = text.baseAddress, !text.isEmpty else {
            sqlite3_bind_text64(handle, index, "", 0, csqlite_transient(), UInt8(SQLITE_UTF8))
            return
        }
        sqlite3_bind_text64(handle, index, UnsafeRawPointer(base).assumingMemoryBound(to: CChar.self), UInt64(text.count),
                            nil, UInt8(SQLITE_UTF8))
    }

    // MARK: Stepping

    /// Advances to the next row; false when done.
    func step() throws(StoreError) -> Bool {
        let rc = sqlite3_step(handle)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw connection.error(rc, sql: sql)
        }
    }

    /// Runs a statement that returns no rows.
    func execute() throws(StoreError) {
        defer { reset() }
        while try step() {}
    }

    // MARK: Reading columns (0-based, as SQLite counts)

    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }
    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }
    func optionalInt64(_ column: Int32) -> Int64? { isNull(column) ? nil : int64(column) }
    func double(_ column: Int32) -> Double { sqlite3_column_double(handle, column) }

    func text(_ column: Int32) -> String {
        guard let pointer = sqlite3_column_text(handle, column) else { return "" }
        let count = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
    }

    /// The text of `column` in place, valid only inside `body`.
    func withText<T>(_ column: Int32, _ body: (UnsafeBufferPointer<UInt8>) -> T) -> T {
        let pointer = sqlite3_column_text(handle, column)
        return body(UnsafeBufferPointer(start: pointer, count: pointer == nil ? 0 : Int(sqlite3_column_bytes(handle, column))))
    }

    /// The bytes of a blob (or text) column.
    func bytes(_ column: Int32) -> [UInt8] {
        let count = Int(sqlite3_column_bytes(handle, column))
        guard count > 0, let pointer = sqlite3_column_blob(handle, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    func blob(_ column: Int32) -> Data {
        let count = Int(sqlite3_column_bytes(handle, column))
        guard count > 0, let pointer = sqlite3_column_blob(handle, column) else { return Data() }
        return Data(bytes: pointer, count: count)
    }

    /// Reads a column stored for an attribute of `type`.
    func value(_ column: Int32, as type: AttributeType) -> AttributeValue {
        let storage = sqlite3_column_type(handle, column)
        if storage == SQLITE_NULL { return .null }
        switch type {
        case .integer16, .integer32, .integer64: return .integer(int64(column))
        case .boolean: return .boolean(int64(column) != 0)
        case .double: return .double(double(column))
        case .float: return .float(Float(double(column)))
        case .date: return .date(Date(timeIntervalSinceReferenceDate: double(column)))
        case .string: return .string(text(column))
        // Text that is not what DecimalStorage writes reads as null, as a malformed UUID or URI does.
        case .decimal: return withText(column) { DecimalStorage.decode($0) }.map(AttributeValue.decimal) ?? .null
        case .uuid: return UUID(uuidString: text(column)).map(AttributeValue.uuid) ?? .null
        case .uri: return URL(string: text(column)).map(AttributeValue.uri) ?? .null
        case .binary: return .binary(blob(column))
        }
    }
}
