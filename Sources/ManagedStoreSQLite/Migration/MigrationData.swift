import ManagedStoreCore

/// What a migration plan depends on in the stored data, read from the store as it is (tables
/// and columns under the source model's names), in the transaction that opens it or in a
/// read-only look: how many objects an entity has, how many lack a value, whether a new
/// uniqueness constraint already holds.
struct MigrationData {
    let connection: SQLiteConnection

    /// How a value of a column is found for a uniqueness check: the stored column, the column
    /// with a default in place of NULL (an attribute that becomes required), or a constant
    /// (a new attribute, which every existing object gets as its default).
    enum Value {
        case column(String, AttributeType)
        case columnOrDefault(String, AttributeValue, AttributeType)
        case constant(AttributeValue, AttributeType)

        var type: AttributeType {
            switch self {
            case .column(_, let type), .columnOrDefault(_, _, let type), .constant(_, let type): return type
            }
        }
    }

    func objectCount(_ entity: Entity) throws(StoreError) -> Int {
        Int(try connection.scalarInt("SELECT count(*) FROM \(entity.table)") ?? 0)
    }

    /// The objects of `entity` whose column `column` is NULL.
    func nullCount(_ entity: Entity, column: String) throws(StoreError) -> Int {
        Int(try connection.scalarInt("SELECT count(*) FROM \(entity.table) WHERE \(quoteIdentifier(column)) IS NULL") ?? 0)
    }

    /// The objects of `entity` whose to-one `relationship` holds no object.
    func missingLinkCount(_ entity: Entity, _ relationship: Relationship, model: ManagedObjectModel) throws(StoreError) -> Int {
        switch relationship.sql {
        case .foreignKey(let column):
            return Int(try connection.scalarInt("SELECT count(*) FROM \(entity.table) WHERE \(column) IS NULL") ?? 0)
        case .inverseForeignKey(let column):
            let destination = model.schema[relationship.destinationIndex].table
            return Int(try connection.scalarInt("SELECT count(*) FROM \(entity.table) AS t WHERE NOT EXISTS "
                                                + "(SELECT 1 FROM \(destination) AS d WHERE d.\(column) = t.\"_pk\")") ?? 0)
        case .joinTable:
            return 0  // a to-many relationship is never required
        }
    }

    /// Values that more than one object of `entity` would share under a uniqueness constraint
    /// made of `values`, and how many objects share them; nil when none do. As in SQLite's
    /// unique index, objects with a NULL among the values never conflict.
    func firstDuplicate(_ entity: Entity, _ values: [Value]) throws(StoreError) -> (values: [AttributeValue], count: Int)? {
        var expressions: [String] = []
        var arguments: [AttributeValue] = []
        for value in values {
            switch value {
            case .column(let name, _):
                expressions.append(quoteIdentifier(name))
            case let .columnOrDefault(name, fallback, _):
                expressions.append("coalesce(\(quoteIdentifier(name)), ?)")
                arguments.append(fallback)
            case .constant(let constant, _):
                if constant.isNull { return nil }
                expressions.append("?")
                arguments.append(constant)
            }
        }
        // Each expression is repeated in the WHERE, the GROUP BY and the result: its `?`s too.
        let list = expressions.joined(separator: ", ")
        let notNull = expressions.map { "\($0) IS NOT NULL" }.joined(separator: " AND ")
        let sql = "SELECT \(list), count(*) FROM \(entity.table) WHERE \(notNull) GROUP BY \(list) HAVING count(*) > 1 LIMIT 1"
        return try connection.withStatement(sql) { s throws(StoreError) -> (values: [AttributeValue], count: Int)? in
            let all = arguments + arguments + arguments
            for (i, argument) in all.enumerated() { s.bind(argument, at: Int32(i + 1)) }
            guard try s.step() else { return nil }
            let found = values.enumerated().map { i, value in s.value(Int32(i), as: value.type) }
            return (found, Int(s.int64(Int32(values.count))))
        }
    }
}
