import ManagedStoreCore

/// SQL that reads rows and relationship keys; shared by fetches, faults and saves.
enum RowSQL {
    /// Reads the columns of `EntityTable.rowColumnsSQL` starting at column `start`; returns the primary key and the row.
    static func readRow(from statement: SQLiteStatement, entity: Entity, startingAt start: Int32 = 0) -> (Int64, StoredRow) {
        let pk = statement.int64(start)
        let version = statement.int64(start + 1)
        var column = start + 2
        var attributes: [AttributeValue] = []
        attributes.reserveCapacity(entity.attributes.count)
        for i in entity.attributes.indices {  // by index: a bound description would be copied per row
            attributes.append(statement.value(column, as: entity.attributes[i].type))
            column += 1
        }
        var keys: [Int64?] = []
        keys.reserveCapacity(entity.foreignKeyRelationships.count)
        for _ in entity.foreignKeyRelationships {
            keys.append(statement.optionalInt64(column))
            column += 1
        }
        return (pk, StoredRow(version: version, attributes: attributes, foreignKeys: keys))
    }

    /// The row with primary key `pk`, or nil when there is none.
    static func loadRow(_ connection: SQLiteConnection, entity: Entity, pk: Int64) throws(StoreError) -> StoredRow? {
        return try connection.withStatement(connection.schema[entity].loadRowSQL) { statement throws(StoreError) in
            statement.bind(pk, at: 1)
            return try statement.step() ? readRow(from: statement, entity: entity).1 : nil
        }
    }

    /// Most keys bound in one `IN (...)` list: SQLite allows 32766 parameters; stay well under it.
    static let keysPerQuery = 500

    /// The rows with these primary keys, by key (a key with no row is absent), in a few `IN` queries.
    static func loadRows(_ connection: SQLiteConnection, entity: Entity, pks: [Int64]) throws(StoreError) -> [Int64: StoredRow] {
        var rows: [Int64: StoredRow] = [:]
        for chunk in pks.chunked(keysPerQuery) {
            let list = Array(repeating: "?", count: chunk.count).joined(separator: ", ")
            let sql = "SELECT \(connection.schema[entity].rowColumnsSQL) FROM \(entity.table) AS t0 WHERE t0.\"_pk\" IN (\(list))"
            try connection.withStatement(sql) { statement throws(StoreError) in
                for (i, key) in chunk.enumerated() { statement.bind(key, at: Int32(i + 1)) }
                while try statement.step() {
                    let (pk, row) = readRow(from: statement, entity: entity)
                    rows[pk] = row
                }
            }
        }
        return rows
    }

    static func exists(_ connection: SQLiteConnection, entity: Entity, pk: Int64) throws(StoreError) -> Bool {
        try connection.scalarInt("SELECT 1 FROM \(entity.table) WHERE \"_pk\" = ?", [.integer(pk)]) != nil
    }
}
