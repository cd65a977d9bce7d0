import ManagedStoreCore

/// What a migration plan depends on in the stored data (`MigrationDataSource`), read from
/// the SQLite store as it is, in the transaction that opens it or in a read-only look.
struct SQLiteMigrationData: MigrationDataSource {
    let connection: SQLiteConnection

    func objectCount(_ entity: Entity) throws(StoreError) -> Int {
        Int(try connection.scalarInt("SELECT count(*) FROM \(entity.table)") ?? 0)
    }

    func nullCount(_ entity: Entity, column: String) throws(StoreError) -> Int {
        Int(try connection.scalarInt("SELECT count(*) FROM \(entity.table) WHERE \(quoteIdentifier(column)) IS NULL") ?? 0)
    }

    func sharedKeyCount(_ entities: [Entity]) throws(StoreError) -> Int {
        let keys = entities.map { "SELECT \"_pk\" FROM \($0.table)" }.joined(separator: " UNION ALL ")
        return Int(try connection.scalarInt("SELECT count(*) FROM (SELECT \"_pk\" FROM (\(keys)) GROUP BY \"_pk\" HAVING count(*) > 1)") ?? 0)
    }

    func missingLinkCount(_ entity: Entity, _ relationship: Relationship, model: ManagedObjectModel) throws(StoreError) -> Int {
        switch relationship.sql {
        case .foreignKey(let column):
            return Int(try connection.scalarInt("SELECT count(*) FROM \(entity.table) WHERE \(column) IS NULL") ?? 0)
        case .inverseForeignKey(let column):
            let destination = model.schema[relationship.destinationIndex].kindsSource(model)
            return Int(try connection.scalarInt("SELECT count(*) FROM \(entity.table) AS t WHERE NOT EXISTS "
                                                + "(SELECT 1 FROM \(destination) AS d WHERE d.\(column) = t.\"_pk\")") ?? 0)
        case .joinTable:
            return 0  // a to-many relationship is never required
        }
    }

    /// As in SQLite's unique index, objects with a NULL among the values never conflict.
    func firstDuplicate(across parts: [(entity: Entity, values: [MigrationValue])]) throws(StoreError) -> (values: [AttributeValue], count: Int)? {
        guard let types = parts.first?.values.map(\.type) else { return nil }
        var selects: [String] = []
        var arguments: [AttributeValue] = []
        for (entity, values) in parts {
            var expressions: [String] = []
            var partArguments: [AttributeValue] = []
            var neverConflicts = false
            for value in values {
                switch value {
                case .column(let name, _):
                    expressions.append(quoteIdentifier(name))
                case let .columnOrDefault(name, fallback, _):
                    expressions.append("coalesce(\(quoteIdentifier(name)), ?)")
                    partArguments.append(fallback)
                case .constant(let constant, _):
                    neverConflicts = neverConflicts || constant.isNull
                    expressions.append("?")
                    partArguments.append(constant)
                }
            }
            guard !neverConflicts else { continue }  // a NULL in every row: none of them conflicts
            selects.append("SELECT " + expressions.enumerated().map { "\($1) AS \"v\($0)\"" }.joined(separator: ", ") + " FROM \(entity.table)")
            arguments += partArguments
        }
        guard !selects.isEmpty else { return nil }
        let columns = types.indices.map { "\"v\($0)\"" }
        let list = columns.joined(separator: ", ")
        let notNull = columns.map { "\($0) IS NOT NULL" }.joined(separator: " AND ")
        let sql = "SELECT \(list), count(*) FROM (\(selects.joined(separator: " UNION ALL "))) WHERE \(notNull) GROUP BY \(list) HAVING count(*) > 1 LIMIT 1"
        return try connection.withStatement(sql) { s throws(StoreError) -> (values: [AttributeValue], count: Int)? in
            for (i, argument) in arguments.enumerated() { s.bind(argument, at: Int32(i + 1)) }
            guard try s.step() else { return nil }
            let found = types.enumerated().map { i, type in s.value(Int32(i), as: type) }
            return (found, Int(s.int64(Int32(types.count))))
        }
    }
}
