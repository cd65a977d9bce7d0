import CSQLite
import Foundation
import ManagedStoreCore

/// One SQLite connection with its prepared-statement cache.
///
/// Not thread-safe and not Sendable: each connection belongs to one owner at a time
/// (`SerializedConnection` for the writer, `ReaderPool` for readers), which is what lets
/// SQLite run in multi-thread mode (`SQLITE_OPEN_NOMUTEX`) without its own locks.
final class SQLiteConnection {
    let handle: OpaquePointer
    let path: String
    /// The model and store identifier of the store this connection belongs to: what its reads
    /// (`StoreReadSession`) compile requests against and name objects with. Set by the store
    /// once it knows them (a connection opened to inspect or migrate a file has none).
    private(set) var model: ManagedObjectModel!
    private(set) var storeIdentifier: UUID!
    /// The tables of the model's entities, and their statements.
    private(set) var schema: SQLiteSchema!
    /// The budgets of the store's fetch plans (the defaults for a connection of no store).
    private(set) var planOptions = SQLitePlanOptions()
    // A connection is used by one thread at a time, and each access to a cache is a single
    // lookup or insertion that calls nothing back: accesses cannot overlap, so exclusivity
    // goes unchecked (the runtime check was on every statement's path).
    @exclusivity(unchecked) private var statementCache: [String: SQLiteStatement] = [:]
    @exclusivity(unchecked) private var preparedCache: [ObjectIdentifier: (sql: PreparedSQL, statement: SQLiteStatement)] = [:]

    /// Makes the connection one of a store's: its reads compile against `model`.
    func belong(to model: ManagedObjectModel, schema: SQLiteSchema, storeIdentifier: UUID, planOptions: SQLitePlanOptions) {
        self.model = model
        self.schema = schema
        self.storeIdentifier = storeIdentifier
        self.planOptions = planOptions
    }

    init(path: String, flags: Int32 = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) throws(StoreError) {
        var db: OpaquePointer?
        let rc = sqlite3_open_v2(path, &db, flags | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(db)
            throw .cannotOpen(path: path, message: message)
        }
        self.handle = db
        self.path = path
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, Self.busyTimeoutMilliseconds)
        SQLFunctions.register(on: db)
    }

    /// How long a statement waits for a lock another connection holds.
    static let busyTimeoutMilliseconds: Int32 = 10_000

    deinit {
        statementCache.removeAll()
        preparedCache.removeAll()
        sqlite3_close_v2(handle)
    }

    func error(_ code: Int32, sql: String?) -> StoreError {
        .engine(code: code, message: String(cString: sqlite3_errmsg(handle)), sql: sql)
    }

    /// Runs one or more statements with no parameters and no results (DDL, pragmas).
    func execute(_ sql: String) throws(StoreError) {
        var message: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &message)
        if rc != SQLITE_OK {
            let text = message.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(handle))
            sqlite3_free(message)
            throw .engine(code: rc, message: text, sql: sql)
        }
    }

    /// Statements kept per connection by their text. Fetches make their SQL from the predicates
    /// and limits they are given, which may come from outside the program, so without a bound
    /// they could fill the process's memory with prepared statements; past it the cache starts over (a statement in use
    /// stays alive with its user and is finalized after).
    static let statementCacheLimit = 512

    /// The cached prepared statement for `sql`, reset and ready to bind.
    func cachedStatement(_ sql: String) throws(StoreError) -> SQLiteStatement {
        if let statement = statementCache[sql] { return statement }
        let statement = try SQLiteStatement(connection: self, sql: sql)
        if statementCache.count >= Self.statementCacheLimit { statementCache.removeAll() }
        statementCache[sql] = statement
        return statement
    }

    var cachedStatementCount: Int { statementCache.count }

    /// Runs `body` with the cached statement for `sql`, resetting it afterwards even on error.
    func withStatement<T>(_ sql: String, _ body: (SQLiteStatement) throws(StoreError) -> T) throws(StoreError) -> T {
        let statement = try cachedStatement(sql)
        defer { statement.reset() }
        return try body(statement)
    }

    /// The same for SQL a model made once, found by identity rather than by hashing its text.
    func withStatement<T>(_ sql: PreparedSQL, _ body: (SQLiteStatement) throws(StoreError) -> T) throws(StoreError) -> T {
        let statement = try cachedStatement(sql)
        defer { statement.reset() }
        return try body(statement)
    }

    /// The cached statement for `sql`; the caller resets it when done.
    func cachedStatement(_ sql: PreparedSQL) throws(StoreError) -> SQLiteStatement {
        if let cached = preparedCache[ObjectIdentifier(sql)] { return cached.statement }
        let statement = try SQLiteStatement(connection: self, sql: sql.text)
        preparedCache[ObjectIdentifier(sql)] = (sql, statement)
        return statement
    }

    /// The single integer a query returns, or nil when it returns no row.
    func scalarInt(_ sql: String, _ arguments: [AttributeValue] = []) throws(StoreError) -> Int64? {
        try withStatement(sql) { statement throws(StoreError) in
            for (i, argument) in arguments.enumerated() { statement.bind(argument, at: Int32(i + 1)) }
            return try statement.step() ? statement.optionalInt64(0) : nil
        }
    }

    private var sortsForOrderBy: [String: Bool] = [:]
    private var sortsRightPartOfOrderBy: [String: Bool] = [:]

    /// Whether SQLite's plan for `sql` sorts its rows for the ORDER BY (a temporary B-tree)
    /// instead of reading them in order from a table or an index. Plans do not depend on
    /// bound values, so the answer is kept per statement text.
    func sortsForOrderBy(_ sql: String) throws(StoreError) -> Bool {
        if let known = sortsForOrderBy[sql] { return known }
        let statement = try SQLiteStatement(connection: self, sql: "EXPLAIN QUERY PLAN " + sql)
        var sorts = false
        while try statement.step() { sorts = sorts || statement.text(3).contains("TEMP B-TREE FOR ORDER BY") }
        if sortsForOrderBy.count >= Self.statementCacheLimit { sortsForOrderBy.removeAll() }  // bounded like the statements
        sortsForOrderBy[sql] = sorts
        return sorts
    }

    /// Whether SQLite's plan for `sql` reads the rows in the order of its first ORDER BY term
    /// but sorts the rest itself ("USE TEMP B-TREE FOR RIGHT PART OF ORDER BY"): each group of
    /// equal first terms sorted whole (GroupedOrderFetch.swift). Cached per SQL, as above.
    func sortsRightPartOfOrderBy(_ sql: String) throws(StoreError) -> Bool {
        if let known = sortsRightPartOfOrderBy[sql] { return known }
        let statement = try SQLiteStatement(connection: self, sql: "EXPLAIN QUERY PLAN " + sql)
        var sorts = false
        while try statement.step() { sorts = sorts || statement.text(3).contains("TEMP B-TREE FOR RIGHT PART OF ORDER BY") }
        if sortsRightPartOfOrderBy.count >= Self.statementCacheLimit { sortsRightPartOfOrderBy.removeAll() }
        sortsRightPartOfOrderBy[sql] = sorts
        return sorts
    }

    var totalChanges: Int64 { Int64(sqlite3_total_changes64(handle)) }
    /// Rows the last INSERT, UPDATE or DELETE on this connection changed.
    var changes: Int64 { Int64(sqlite3_changes64(handle)) }
    /// The rowid of the row the last INSERT on this connection added.
    var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }
    var isInTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    /// Runs `body` in a write transaction (BEGIN IMMEDIATE, so the write lock is taken up front
    /// and a busy store is waited for at BEGIN, never half way), and commits; rolls back on any
    /// error. Not inside another transaction: a group commit's saves use `inSavepoint`.
    func inTransaction<T>(_ body: () throws -> T) throws -> T {
        // Cached statements, not sqlite3_exec: parsing these again each time cost more than a
        // one-object save's own INSERT.
        precondition(!isInTransaction, "inTransaction inside a transaction: join it with inSavepoint")
        try cachedStatement("BEGIN IMMEDIATE").execute()
        do {
            let result = try body()
            try cachedStatement("COMMIT").execute()
            return result
        } catch {
            if isInTransaction { try? cachedStatement("ROLLBACK").execute() }
            throw error
        }
    }

    /// Runs `body` in the savepoint `name` of the open transaction: an error rolls back
    /// `body`'s writes alone and the transaction goes on (unless SQLite ended it: check
    /// `isInTransaction`).
    func inSavepoint<T>(_ name: String, _ body: () throws -> T) throws -> T {
        precondition(isInTransaction, "inSavepoint outside a transaction")
        let statements = savepointSQL(name)
        try cachedStatement(statements.begin).execute()
        do {
            let result = try body()
            try cachedStatement(statements.release).execute()
            return result
        } catch {
            if isInTransaction {
                try? cachedStatement(statements.rollback).execute()
                try? cachedStatement(statements.release).execute()
            }
            throw error
        }
    }

    private var savepoints: [String: (begin: String, release: String, rollback: String)] = [:]

    /// The statements of savepoint `name`, made once.
    private func savepointSQL(_ name: String) -> (begin: String, release: String, rollback: String) {
        if let known = savepoints[name] { return known }
        let quoted = quoteIdentifier(name)
        let statements = ("SAVEPOINT \(quoted)", "RELEASE \(quoted)", "ROLLBACK TO \(quoted)")
        savepoints[name] = statements
        return statements
    }

    /// Runs `body` in a read transaction: every statement inside sees the same snapshot.
    /// BEGIN and COMMIT run as cached statements: reads are the hot path, and `sqlite3_exec`
    /// would parse them again each time.
    func readTransaction<T>(_ body: () throws -> T) throws -> T {
        if isInTransaction { return try body() }
        try cachedStatement("BEGIN DEFERRED").execute()
        defer { if isInTransaction { try? cachedStatement("COMMIT").execute() } }
        return try body()
    }
}
