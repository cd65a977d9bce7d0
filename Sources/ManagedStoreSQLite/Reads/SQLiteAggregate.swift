// The SQLite store's aggregates: one statement that groups the matching rows (GROUP BY),
// computes each result, then keeps, orders and cuts the groups in a query over them.

import ManagedStoreCore

enum SQLiteAggregate {
    /// `SELECT <results> FROM (<the groups>) WHERE <having> ORDER BY … LIMIT …`, the groups being
    /// `SELECT <group keys and functions> AS c0, c1, … FROM <entity and joins> WHERE <predicate>
    /// GROUP BY <group keys>`. Without group keys SQLite answers one group, also over no rows.
    static func compile(_ prepared: PreparedAggregate, model: ManagedObjectModel, tables: SQLiteSchema) -> (sql: String, bindings: [AttributeValue]) {
        var query = SQLQueryBuilder(model: model, root: prepared.fetch.entity, tables: tables)
        var results: [String] = []
        var groupKeys: [String] = []
        for (position, column) in prepared.columns.enumerated() {
            let value = column.keyPath.map { query.expression($0) } ?? ""
            let sql = sql(of: column.computation, value, position: position)
            if column.isGroupKey { groupKeys.append(sql) }
            results.append("\(sql) AS \(SQLQueryBuilder.groupColumnName(position))")
        }
        let condition = SQLiteFetch.whereCondition(prepared.fetch, &query)
        var groups = "SELECT \(results.joined(separator: ", ")) FROM \(query.fromClause) WHERE \(condition)"
        if !groupKeys.isEmpty { groups += " GROUP BY \(groupKeys.joined(separator: ", "))" }
        let having = prepared.having.map { query.condition($0) } ?? "1"
        let columns = prepared.columns.indices.map { "t0.\(SQLQueryBuilder.groupColumnName($0))" }
        let tieBreakers = prepared.columns.indices.filter { prepared.columns[$0].isGroupKey }.map { "\(columns[$0]) ASC" }
        var sql = "SELECT \(columns.joined(separator: ", ")) FROM (\(groups)) AS t0 WHERE \(having)"
        let order = query.orderBy(prepared.sorts, tieBreakers: tieBreakers)
        if !order.isEmpty { sql += " ORDER BY \(order)" }
        if prepared.limit > 0 || prepared.offset > 0 { sql += " LIMIT \(prepared.limit > 0 ? prepared.limit : -1) OFFSET \(prepared.offset)" }
        return (sql, query.bindings)
    }
}

extension SQLiteAggregate {
    /// The SQL of the result at `position`, given the SQL of its key path's value. The exact
    /// sums and averages are ours (`AggregateSQLFunctions`), told the position for their
    /// overflow error; total() is sum() that is 0.0 over no values, and always a double.
    static func sql(of computation: PreparedAggregate.Computation, _ value: String, position: Int) -> String {
        switch computation {
        case .value: return value
        case .countRows: return "count(*)"
        case .countValues: return "count(\(value))"
        // Stored strings have SQLite's BINARY collation: min and max in code-point order.
        case .minimum: return "min(\(value))"
        case .maximum: return "max(\(value))"
        case .integerSum: return "ms_sum_integer(\(value), \(position))"
        case .decimalSum: return "ms_sum_decimal(\(value), \(position))"
        case .doubleSum: return "total(\(value))"
        case .integerAverage: return "ms_avg_integer(\(value), \(position))"
        case .doubleAverage: return "avg(\(value))"
        case .decimalAverage: return "ms_avg_decimal(\(value), \(position))"
        }
    }
}

extension SQLQueryBuilder {
    /// The name of the column of the result at `position` in the SQL over an aggregate's groups.
    /// Positions, not the results' names, which are any text; an attribute called "c0" does not
    /// clash with it, as the table's columns are read only inside the groups' query.
    static func groupColumnName(_ position: Int) -> String { "\"c\(position)\"" }
}
