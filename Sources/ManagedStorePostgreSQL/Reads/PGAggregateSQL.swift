import Foundation
import ManagedStoreCore

/// An aggregate PostgreSQL computes with the in-memory results (`InMemoryAggregate`, the SQLite
/// store's): the whole predicate compiled (`PGFetchSQL`), every result a group key or a function
/// of an attribute of the entity's own row, of a to-one whose key the row holds (the object, as
/// `author`), or of an attribute of that to-one's object (`author.name`, a LEFT JOIN: null where
/// the to-one is nil, as the evaluator reads it); one statement
/// `SELECT … FROM (the matching rows) AS t LEFT JOIN … GROUP BY …`. The server then reads the
/// groups, not the rows: its memory follows the number of groups.
///
/// Where PostgreSQL's own function would not give the same value, the parts it does compute
/// exactly are read and finished here: an integer average is the exact sum (numeric) over the
/// count, divided as the evaluator divides; a sum of reals is summed as doubles. Decimal sums
/// and averages (the evaluator's exact decimal arithmetic, with its overflow) and the extremes
/// of binary, UUID and URI values stay in memory.
///
/// With no having predicate and every sort on a single SQL value, PostgreSQL also orders and
/// windows the groups (the sorts, then every group key ascending, nulls first): a limited
/// group-by over a key with millions of values reads only its page.
struct PGAggregateSQL {
    let sql: String
    let parameters: [String?]
    /// Whether `sql` orders and windows the groups itself.
    let isWindowed: Bool
    private let readers: [Reader]

    /// How one result is read from the statement's row: the columns it needs, by position.
    private enum Reader {
        case value(Int, AttributeType)
        /// A to-one's destination, of an entity without sub-entities: its key.
        case object(Int, entityName: String)
        case count(Int)
        case extreme(Int, AttributeType)
        /// An exact integer sum, bigint (PostgreSQL raises out of range past Int64); 0, not
        /// NULL, over no values, also where PostgreSQL orders the groups.
        case integerSum(Int)
        case integerAverage(sum: Int, count: Int)
        case doubleSum(Int)
        case doubleAverage(sum: Int, count: Int)
    }

    /// nil when some part of `prepared` is not answered exactly by SQL here.
    init?(_ prepared: PreparedAggregate, schema: PGSchema, plan: PGFetchSQL, storeIdentifier: UUID) {
        guard plan.residual == nil else { return nil }
        let table = schema[prepared.fetch.entity]
        var sources = Sources(table: table, tables: schema.tables)
        var items: [String] = []
        var readers: [Reader] = []
        var groupKeys: [String] = []
        /// The SQL column of each result that is one SQL value (its order is the result's).
        var single: [Int: String] = [:]
        func add(_ sql: String) -> Int {
            items.append("\(sql) AS c\(items.count)")
            return items.count - 1
        }
        for (position, column) in prepared.columns.enumerated() {
            var value: Sources.Value?
            if let keyPath = column.keyPath {
                guard let found = sources.value(keyPath) else { return nil }
                value = found
            }
            switch (column.computation, value) {
            case (.countRows, _):
                readers.append(.count(add("count(*)")))
            case let (.value, .object(name, entityName)?):
                groupKeys.append(name)
                readers.append(.object(add(name), entityName: entityName))
            case (.value, .attribute(let name, let type)?):
                groupKeys.append(name)
                readers.append(.value(add(name), type))
            case let (.countValues, .attribute(name, _)?), let (.countValues, .object(name, _)?):
                readers.append(.count(add("count(\(name))")))
            case let (.minimum, .attribute(name, type)?), let (.maximum, .attribute(name, type)?):
                let isMinimum = column.computation == .minimum
                switch type {
                case .boolean: readers.append(.extreme(add(isMinimum ? "bool_and(\(name))" : "bool_or(\(name))"), type))
                case .binary, .uuid, .uri: return nil
                default: readers.append(.extreme(add(isMinimum ? "min(\(name))" : "max(\(name))"), type))
                }
            case (.integerSum, .attribute(let name, _)?):
                readers.append(.integerSum(add("COALESCE(sum(\(name)), 0)::bigint")))
            case (.integerAverage, .attribute(let name, _)?):
                readers.append(.integerAverage(sum: add("sum(\(name))"), count: add("count(\(name))")))
            case (.doubleSum, .attribute(let name, _)?):
                readers.append(.doubleSum(add("COALESCE(sum(\(name)::float8), 0)")))
            case (.doubleAverage, .attribute(let name, _)?):
                readers.append(.doubleAverage(sum: add("sum(\(name)::float8)"), count: add("count(\(name))")))
            default:
                return nil
            }
            switch readers[position] {
            case .value(let c, let type) where PGValues.ordersAsEvaluator(type): single[position] = "c\(c)"
            case .object(let c, _), .count(let c), .integerSum(let c), .doubleSum(let c): single[position] = "c\(c)"
            case .extreme(let c, let type) where PGValues.ordersAsEvaluator(type): single[position] = "c\(c)"
            default: break
            }
        }
        // The matching rows first, as `t`: the condition names the entity's columns unqualified,
        // which a joined table's columns of the same names would make ambiguous.
        var sql = "SELECT \(items.joined(separator: ", ")) FROM (SELECT * FROM \(table.table) WHERE \(plan.condition)) AS t\(sources.joins)"
        if !groupKeys.isEmpty { sql += " GROUP BY \(groupKeys.joined(separator: ", "))" }
        let order = Self.order(prepared, single)
        if let order {
            sql += " ORDER BY \(order)"
            if prepared.limit > 0 { sql += " LIMIT \(prepared.limit)" }
            if prepared.offset > 0 { sql += " OFFSET \(prepared.offset)" }
        }
        self.sql = sql
        self.parameters = plan.parameters
        self.readers = readers
        self.isWindowed = order != nil
        self.storeIdentifier = storeIdentifier
    }

    private let storeIdentifier: UUID

    /// Where the values of the results' key paths are read: the matching row `t`, and one LEFT
    /// JOIN a to-one followed (`j0`, `j1`, …).
    private struct Sources {
        let table: PGSchema.EntityTable
        let tables: [PGSchema.EntityTable]
        /// The alias of each to-one followed, by relationship.
        private var aliases: [Int: String] = [:]
        private(set) var joins = ""

        init(table: PGSchema.EntityTable, tables: [PGSchema.EntityTable]) {
            self.table = table
            self.tables = tables
        }

        enum Value {
            case attribute(String, AttributeType)
            case object(String, entityName: String)
        }

        /// The SQL of `keyPath`'s value; nil when it is not one of the forms above.
        mutating func value(_ keyPath: ResolvedKeyPath) -> Value? {
            guard case .object = keyPath.root else { return nil }
            switch (keyPath.steps.count, keyPath.terminal) {
            case let (0, .attribute(entity, index)) where entity == table.entity.index:
                return .attribute("t." + table.attributeColumns[index], table.entity.attributes[index].type)
            case let (0, .toOne(entity, relationship)) where entity == table.entity.index:
                guard let position = table.entity.foreignKeyRelationships.firstIndex(of: relationship) else { return nil }
                let destination = tables[table.entity.relationships[relationship].destinationIndex].entity
                // A parent's key alone does not say which of its kinds the object is.
                guard destination.isSingleKind else { return nil }
                return .object("t." + table.foreignKeyColumns[position], entityName: destination.name)
            case let (1, .attribute(entity, index)):
                let step = keyPath.steps[0]
                guard !step.isToMany, step.entity == table.entity.index, tables.indices.contains(entity),
                      let position = table.entity.foreignKeyRelationships.firstIndex(of: step.relationship) else { return nil }
                let destination = tables[entity]
                let alias: String
                if let known = aliases[step.relationship] {
                    alias = known
                } else {
                    alias = "j\(aliases.count)"
                    aliases[step.relationship] = alias
                    joins += " LEFT JOIN \(destination.kindsSource) AS \(alias) ON \(alias)._pk = t.\(table.foreignKeyColumns[position])"
                }
                return .attribute("\(alias).\(destination.attributeColumns[index])", destination.entity.attributes[index].type)
            default:
                return nil
            }
        }
    }

    /// The groups' ORDER BY, when PostgreSQL can order them as `InMemoryAggregate` does: no
    /// having predicate (it decides which groups the window counts), each sort on a result that
    /// is one SQL value with no [c] or [d], and every group key such a value (the tie-breakers).
    private static func order(_ prepared: PreparedAggregate, _ single: [Int: String]) -> String? {
        guard prepared.having == nil else { return nil }
        var terms: [String] = []
        for sort in prepared.sorts {
            guard sort.options.isEmpty, case .groupColumn(let index, _) = sort.keyPath.terminal, let column = single[index] else { return nil }
            terms.append(sort.ascending ? "\(column) ASC NULLS FIRST" : "\(column) DESC NULLS LAST")
        }
        for (index, column) in prepared.columns.enumerated() where column.isGroupKey {
            guard let sql = single[index] else { return nil }
            terms.append("\(sql) ASC NULLS FIRST")
        }
        // One group and no key: nothing to order.
        return terms.isEmpty ? "1" : terms.joined(separator: ", ")
    }

    /// Each group's results, read from the statement's rows.
    func groups(_ result: PGResult, columns: [PreparedAggregate.Column]) throws(AggregateError) -> [[PropertyValue]] {
        try (0..<result.rowCount).map { row throws(AggregateError) in
            try readers.enumerated().map { position, reader throws(AggregateError) -> PropertyValue in
                switch reader {
                case let .value(c, type), let .extreme(c, type):
                    return .attribute(PGValues.value(result.text(row, c), type: type))
                case let .object(c, entityName):
                    return .object(result.int64(row, c).map { ManagedObjectID(storeIdentifier: storeIdentifier, entityName: entityName, key: .permanent($0)) })
                case .count(let c):
                    return .attribute(.integer(result.int64(row, c) ?? 0))
                case .integerSum(let c):
                    return .attribute(.integer(result.int64(row, c) ?? 0))
                case let .integerAverage(sum, count):
                    let n = result.int64(row, count) ?? 0
                    guard n > 0 else { return .attribute(.null) }
                    guard let total = result.text(row, sum).flatMap({ Int128($0) }) else { throw .overflow(name: columns[position].name) }
                    return .attribute(.double(Double(total) / Double(n)))
                case .doubleSum(let c):
                    // Double's own parsing takes float8's "Infinity" and "NaN" as well.
                    return .attribute(.double(result.text(row, c).flatMap { Double($0) } ?? 0))
                case let .doubleAverage(sum, count):
                    let n = result.int64(row, count) ?? 0
                    guard n > 0 else { return .attribute(.null) }
                    return .attribute(.double((result.text(row, sum).flatMap { Double($0) } ?? 0) / Double(n)))
                }
            }
        }
    }

    /// The first result an out-of-range integer sum can be: PostgreSQL's error does not say which.
    func overflowingResult(_ columns: [PreparedAggregate.Column]) -> String? {
        readers.indices.first { if case .integerSum = readers[$0] { return true } else { return false } }.map { columns[$0].name }
    }
}
