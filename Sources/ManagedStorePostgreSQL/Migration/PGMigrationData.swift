import ManagedStoreCore

/// What a migration plan depends on in the stored data (`MigrationDataSource`), read from the
/// PostgreSQL store as it is (tables and columns under the source model's names), inside the
/// transaction that migrates it or in a read-only look.
struct PGMigrationData: MigrationDataSource {
    let connection: PGConnection

    func objectCount(_ entity: Entity) throws(StoreError) -> Int {
        try count("SELECT count(*) FROM \(PGValues.quote(entity.name))")
    }

    func nullCount(_ entity: Entity, column: String) throws(StoreError) -> Int {
        try count("SELECT count(*) FROM \(PGValues.quote(entity.name)) WHERE \(PGValues.quote(column)) IS NULL")
    }

    func sharedKeyCount(_ entities: [Entity]) throws(StoreError) -> Int {
        let keys = entities.map { "SELECT _pk FROM \(PGValues.quote($0.name))" }.joined(separator: " UNION ALL ")
        return try count("SELECT count(*) FROM (SELECT _pk FROM (\(keys)) AS k GROUP BY _pk HAVING count(*) > 1) AS shared")
    }

    func missingLinkCount(_ entity: Entity, _ relationship: Relationship, model: ManagedObjectModel) throws(StoreError) -> Int {
        let table = PGValues.quote(entity.name)
        switch relationship.storage {
        case .foreignKey:
            return try count("SELECT count(*) FROM \(table) WHERE \(PGValues.quote(relationship.name)) IS NULL")
        case .inverseForeignKey:
            let destination = PGSchema(model: model).tables[relationship.destinationIndex].kindsSource
            return try count("SELECT count(*) FROM \(table) AS t WHERE NOT EXISTS "
                             + "(SELECT 1 FROM \(destination) AS d WHERE d.\(PGValues.quote(relationship.destinationKeyName)) = t._pk)")
        case .joinTable:
            return 0  // a to-many relationship is never required
        }
    }

    /// As in PostgreSQL's unique constraints, objects with a NULL among the values never conflict.
    func firstDuplicate(_ entity: Entity, _ values: [MigrationValue]) throws(StoreError) -> (values: [AttributeValue], count: Int)? {
        var expressions: [String] = []
        var parameters: [String?] = []
        // A parameter is numbered once and may be named in the WHERE, the GROUP BY and the result alike.
        func parameter(_ value: AttributeValue, _ type: AttributeType) throws(StoreError) -> String {
            parameters.append(try PGValues.text(value))
            return "$\(parameters.count)::\(PGValues.columnType(type))"
        }
        for value in values {
            switch value {
            case .column(let name, _):
                expressions.append(PGValues.quote(name))
            case let .columnOrDefault(name, fallback, type):
                expressions.append("coalesce(\(PGValues.quote(name)), \(try parameter(fallback, type)))")
            case let .constant(constant, type):
                if constant.isNull { return nil }
                expressions.append(try parameter(constant, type))
            }
        }
        let list = expressions.joined(separator: ", ")
        let notNull = expressions.map { "\($0) IS NOT NULL" }.joined(separator: " AND ")
        let result = try connection.execute(
            "SELECT \(list), count(*) FROM \(PGValues.quote(entity.name)) WHERE \(notNull) GROUP BY \(list) HAVING count(*) > 1 LIMIT 1",
            parameters)
        guard result.rowCount > 0 else { return nil }
        let found = values.enumerated().map { i, value in PGValues.value(result.text(0, i), type: value.type) }
        return (found, Int(result.int64(0, values.count) ?? 0))
    }

    private func count(_ sql: String) throws(StoreError) -> Int {
        Int(try connection.execute(sql).int64(0, 0) ?? 0)
    }
}
