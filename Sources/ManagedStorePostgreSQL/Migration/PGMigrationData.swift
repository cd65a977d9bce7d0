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
    func firstDuplicate(across parts: [(entity: Entity, values: [MigrationValue])]) throws(StoreError) -> (values: [AttributeValue], count: Int)? {
        guard let types = parts.first?.values.map(\.type) else { return nil }
        var selects: [String] = []
        var parameters: [String?] = []
        // A parameter is numbered once, cast to its column's type so that the parts line up.
        func parameter(_ value: AttributeValue, _ type: AttributeType) throws(StoreError) -> String {
            parameters.append(try PGValues.text(value))
            return "$\(parameters.count)::\(PGValues.columnType(type))"
        }
        for (entity, values) in parts {
            if values.contains(where: { if case .constant(let constant, _) = $0 { constant.isNull } else { false } }) { continue }
            var expressions: [String] = []
            for value in values {
                switch value {
                case .column(let name, _):
                    expressions.append(PGValues.quote(name))
                case let .columnOrDefault(name, fallback, type):
                    expressions.append("coalesce(\(PGValues.quote(name)), \(try parameter(fallback, type)))")
                case let .constant(constant, type):
                    expressions.append(try parameter(constant, type))
                }
            }
            selects.append("SELECT " + expressions.enumerated().map { "\($1) AS v\($0)" }.joined(separator: ", ") + " FROM \(PGValues.quote(entity.name))")
        }
        guard !selects.isEmpty else { return nil }
        let list = types.indices.map { "v\($0)" }.joined(separator: ", ")
        let notNull = types.indices.map { "v\($0) IS NOT NULL" }.joined(separator: " AND ")
        let result = try connection.execute(
            "SELECT \(list), count(*) FROM (\(selects.joined(separator: " UNION ALL "))) AS parts WHERE \(notNull) GROUP BY \(list) HAVING count(*) > 1 LIMIT 1",
            parameters)
        guard result.rowCount > 0 else { return nil }
        let found = types.enumerated().map { i, type in PGValues.value(result.text(0, i), type: type) }
        return (found, Int(result.int64(0, types.count) ?? 0))
    }

    private func count(_ sql: String) throws(StoreError) -> Int {
        Int(try connection.execute(sql).int64(0, 0) ?? 0)
    }
}
