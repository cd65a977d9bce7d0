import ManagedStoreCore

/// Builds the SQL of a fetch from a checked predicate and sort keys.
///
/// - to-one steps of a key path become LEFT JOINs (in the scope where the path is used);
/// - a to-many step becomes a correlated `EXISTS (SELECT 1 …)`: ANY is EXISTS, ALL is NOT
///   EXISTS of the negation, NONE is NOT EXISTS; aggregates and SUBQUERY are correlated
///   scalar subqueries;
/// - every comparison is two-valued (never NULL), so NOT inverts it exactly as the in-memory
///   evaluator does;
/// - every constant is a numbered parameter (`?3`); only identifiers checked against the
///   model, fixed keywords and integers the builder made itself are written into the SQL.
struct SQLQueryBuilder {
    let model: ManagedObjectModel
    let root: Entity
    /// The entities' tables, with their quoted names.
    let tables: SQLiteSchema
    private(set) var bindings: [AttributeValue] = []
    /// An attribute of the root whose terms in the predicate must not steer SQLite's choice of
    /// index (GroupedOrderFetch.swift: its own equality on that attribute must).
    var unindexedAttribute: (entity: Int, attribute: Int)?

    private struct Scope {
        var joins: [String] = []
        var joinAliases: [String: String] = [:]
    }

    /// The main query's scope first, then one per subquery being built.
    private var scopes = [Scope()]
    private var aliasCount = 0
    /// SUBQUERY variables and the alias of the row each stands for.
    private var variableAliases: [String: String] = [:]

    init(model: ManagedObjectModel, root: Entity, tables: SQLiteSchema) {
        self.model = model
        self.root = root
        self.tables = tables
    }

    var fromClause: String { "\(tables[root].name) AS t0" + scopes[0].joins.map { " " + $0 }.joined() }

    /// The FROM clause with the root table read in key order, never through an index.
    var fromClauseScanningInKeyOrder: String { "\(tables[root].name) AS t0 NOT INDEXED" + scopes[0].joins.map { " " + $0 }.joined() }

    private mutating func newAlias(_ prefix: String) -> String {
        aliasCount += 1
        return "\(prefix)\(aliasCount)"
    }

    mutating func bind(_ value: AttributeValue) -> String {
        bindings.append(value)
        return "?\(bindings.count)"
    }

    // MARK: Key paths

    private func rootAlias(_ keyPath: ResolvedKeyPath) -> String {
        switch keyPath.root {
        case .object: return "t0"
        case .variable(let name): return variableAliases[name] ?? "t0"
        }
    }

    /// The alias of the destination of to-one `step` from `base`, joined in the current scope.
    private mutating func join(_ step: ResolvedKeyPath.Step, from base: String) -> String {
        let key = "\(base).\(step.relationship).\(step.entity)"
        if let alias = scopes[scopes.count - 1].joinAliases[key] { return alias }
        let relationship = model.schema[step.entity].relationships[step.relationship]
        let destination = model.schema[relationship.destinationIndex]
        let alias = newAlias("j")
        switch relationship.sql {
        case .foreignKey(let column):
            scopes[scopes.count - 1].joins.append("LEFT JOIN \(tables[destination].kindsSource) AS \(alias) ON \(alias).\"_pk\" = \(base).\(column)")
        case .inverseForeignKey(let column):
            scopes[scopes.count - 1].joins.append("LEFT JOIN \(tables[destination].kindsSource) AS \(alias) ON \(alias).\(column) = \(base).\"_pk\"")
        case .joinTable:
            preconditionFailure("a to-one relationship is never stored in a join table")
        }
        scopes[scopes.count - 1].joinAliases[key] = alias
        return alias
    }

    /// The SQL value at the end of a path, once `alias` is the row that owns it.
    private func terminalExpression(_ terminal: ResolvedKeyPath.Terminal, at alias: String) -> String {
        switch terminal {
        case let .attribute(e, a):
            let column = "\(alias).\(quoteIdentifier(model.schema[e].attributes[a].name))"
            // Unary plus: the same value, which SQLite's planner does not use to choose an index.
            if alias == "t0", let unindexed = unindexedAttribute, unindexed == (e, a) { return "+" + column }
            return column
        case let .toOne(e, r):
            let relationship = model.schema[e].relationships[r]
            switch relationship.sql {
            case .foreignKey(let column):
                return "\(alias).\(column)"
            case .inverseForeignKey(let column):
                let destination = model.schema[relationship.destinationIndex]
                return "(SELECT d.\"_pk\" FROM \(tables[destination].kindsSource) AS d WHERE d.\(column) = \(alias).\"_pk\" ORDER BY d.\"_pk\" LIMIT 1)"
            case .joinTable:
                preconditionFailure("a to-one relationship is never stored in a join table")
            }
        case .object:
            return "\(alias).\"_pk\""
        case .groupColumn(let index, _):
            return "\(alias).\(Self.groupColumnName(index))"
        }
    }

    /// The SQL expression of a scalar key path (no to-many step).
    mutating func expression(_ keyPath: ResolvedKeyPath) -> String {
        var alias = rootAlias(keyPath)
        for step in keyPath.steps { alias = join(step, from: alias) }
        return terminalExpression(keyPath.terminal, at: alias)
    }

    /// FROM and correlation of the rows of to-many `step` from the row `base`, the rows aliased `alias`.
    private mutating func toManySource(_ step: ResolvedKeyPath.Step, from base: String, alias: String) -> (from: String, correlation: String) {
        let relationship = model.schema[step.entity].relationships[step.relationship]
        let destination = model.schema[relationship.destinationIndex]
        switch relationship.sql {
        case .inverseForeignKey(let column):
            return ("\(tables[destination].kindsSource) AS \(alias)", "\(alias).\(column) = \(base).\"_pk\"")
        case let .joinTable(table, ownColumn, otherColumn):
            let link = newAlias("l")
            return ("\(table) AS \(link) JOIN \(tables[destination].kindsSource) AS \(alias) ON \(alias).\"_pk\" = \(link).\(otherColumn)",
                    "\(link).\(ownColumn) = \(base).\"_pk\"")
        case .foreignKey:
            preconditionFailure("a to-many relationship never stores a foreign key in its own row")
        }
    }

    /// `EXISTS` over the elements a collection path reaches, `leaf` deciding each element (given
    /// the SQL of its value). Further to-many steps nest further EXISTS.
    private mutating func exists(_ keyPath: ResolvedKeyPath, from index: Int, base: String,
                                 leaf: (inout SQLQueryBuilder, String) -> String) -> String {
        var alias = base
        var i = index
        while i < keyPath.steps.count {
            let step = keyPath.steps[i]
            if !step.isToMany {
                alias = join(step, from: alias)
                i += 1
                continue
            }
            let element = newAlias("s")
            let source = toManySource(step, from: alias, alias: element)
            scopes.append(Scope())
            let inner = exists(keyPath, from: i + 1, base: element, leaf: leaf)
            let scope = scopes.removeLast()
            let joins = scope.joins.map { " " + $0 }.joined()
            return "EXISTS (SELECT 1 FROM \(source.from)\(joins) WHERE \(source.correlation) AND \(inner))"
        }
        return leaf(&self, terminalExpression(keyPath.terminal, at: alias))
    }

    /// A correlated scalar subquery over the rows of a one-to-many-step collection path:
    /// `body` gets the element alias and returns (SELECT expression, extra WHERE condition).
    private mutating func overCollection(_ collection: ResolvedKeyPath,
                                         _ body: (inout SQLQueryBuilder, String) -> (select: String, condition: String?)) -> String {
        var alias = rootAlias(collection)
        for step in collection.steps where !step.isToMany { alias = join(step, from: alias) }
        let toMany = collection.steps.last!
        let element = newAlias("s")
        let source = toManySource(toMany, from: alias, alias: element)
        scopes.append(Scope())
        let (select, condition) = body(&self, element)
        let scope = scopes.removeLast()
        let joins = scope.joins.map { " " + $0 }.joined()
        return "(SELECT \(select) FROM \(source.from)\(joins) WHERE \(source.correlation)" + (condition.map { " AND \($0)" } ?? "") + ")"
    }

    // MARK: Operands

    /// The SQL of a scalar operand (constants become parameters).
    private mutating func operand(_ operand: CheckedOperand, options: ComparisonOptions) -> String {
        let sql: String
        switch operand {
        case .value(let v):
            return bindValue(v, options: options)
        case .list:
            preconditionFailure("a list is not a scalar operand")
        case .keyPath(let keyPath):
            sql = expression(keyPath)
        case let .aggregate(function, collection, attribute):
            sql = overCollection(collection) { builder, element in
                guard let attribute else { return ("count(*)", nil) }
                var base = element
                for step in attribute.steps { base = builder.join(step, from: base) }
                let value = builder.terminalExpression(attribute.terminal, at: base)
                switch function {
                case .count: return ("count(*)", nil)
                case .sum:
                    // SQLite's sum() fails the statement when integers overflow (and when depends
                    // on the order of the rows); a predicate compares the true total instead.
                    guard case .attribute(let type) = attribute.valueType(builder.model), type.isInteger else {
                        return ("coalesce(sum(\(value)), 0)", nil)
                    }
                    return ("ms_sum_in_predicate(\(value))", nil)
                case .avg: return ("coalesce(avg(\(value)), 0.0)", nil)
                case .min: return ("min(\(value))", nil)
                case .max: return ("max(\(value))", nil)
                }
            }
        case let .subqueryCount(collection, variable, predicate):
            sql = overCollection(collection) { builder, element in
                let saved = builder.variableAliases[variable]
                builder.variableAliases[variable] = element
                let condition = builder.condition(predicate)
                builder.variableAliases[variable] = saved
                return ("count(*)", condition)
            }
        }
        return options.isEmpty ? sql : "ms_fold(\(sql), \(options.rawValue))"
    }

    private mutating func bindValue(_ value: PredicateValue, options: ComparisonOptions) -> String {
        switch value {
        case .attribute(.string(let s)) where !options.isEmpty: return bind(.string(StringOperations.fold(s, options)))
        case .attribute(let v): return v.isNull ? "NULL" : bind(v)
        // An unsaved object is never the target of a stored row; -1 is never a key.
        case .object(let id): return bind(.integer(id.primaryKey ?? -1))
        }
    }

    // MARK: Conditions

    /// The WHERE condition of a predicate.
    mutating func condition(_ predicate: CheckedPredicate) -> String {
        switch predicate {
        case .constant(let b): return b ? "1" : "0"
        case .and(let ps): return ps.isEmpty ? "1" : balanced(ps[...], "AND")
        case .or(let ps): return ps.isEmpty ? "0" : balanced(ps[...], "OR")
        case .not(let p): return "(NOT \(condition(p)))"
        case .comparison(let c): return comparison(c)
        }
    }

    /// `a AND b AND c …` as a balanced tree: SQLite parses a flat chain into a tree as deep as
    /// it is long, and refuses trees deeper than 1000.
    private mutating func balanced(_ terms: ArraySlice<CheckedPredicate>, _ op: String) -> String {
        if terms.count <= 8 { return "(" + terms.map { condition($0) }.joined(separator: " \(op) ") + ")" }
        let middle = terms.startIndex + terms.count / 2
        return "(" + balanced(terms[..<middle], op) + " \(op) " + balanced(terms[middle...], op) + ")"
    }

    private mutating func comparison(_ c: CheckedComparison) -> String {
        guard c.quantifier != .scalar, case .keyPath(let keyPath) = c.lhs else {
            let left = operand(c.lhs, options: c.options.forOperator(c.op))
            return leaf(left, c, repeatable: isColumn(c.lhs) && c.options.forOperator(c.op).isEmpty)
        }
        let exists = self.exists(keyPath, from: 0, base: rootAlias(keyPath)) { builder, element in
            let plain = c.options.forOperator(c.op).isEmpty
            let value = plain ? element : "ms_fold(\(element), \(c.options.rawValue))"
            let test = builder.leaf(value, c, repeatable: plain && builder.isColumnTerminal(keyPath.terminal))
            return c.quantifier == .all ? "(NOT \(test))" : test
        }
        switch c.quantifier {
        case .any: return exists
        default: return "(NOT \(exists))"  // ALL: no element fails; NONE: no element passes
        }
    }

    /// Whether an operand's SQL is a plain column, cheap to write twice (and then usable with an
    /// index); anything else (a subquery, a folded value) is written once.
    private func isColumn(_ operand: CheckedOperand) -> Bool {
        guard case .keyPath(let keyPath) = operand else { return false }
        return isColumnTerminal(keyPath.terminal)
    }

    func isColumnTerminal(_ terminal: ResolvedKeyPath.Terminal) -> Bool {
        if case let .toOne(e, r) = terminal, case .inverseForeignKey = model.schema[e].relationships[r].sql { return false }
        return true
    }

    /// One element (or scalar) `left` against the right side of `c`, two-valued. `left` is
    /// written more than once only when `repeatable`; otherwise `coalesce(…, 0)` makes the
    /// comparison two-valued with a single copy (nested subqueries would double at each level).
    private mutating func leaf(_ left: String, _ c: CheckedComparison, repeatable: Bool) -> String {
        let options = c.options.forOperator(c.op)
        switch c.op {
        case .in, .between:
            guard case .list(let items) = c.rhs else { return "0" }
            if c.op == .between {
                guard items.count == 2 else { return "0" }
                let low = bindValue(items[0], options: options), high = bindValue(items[1], options: options)
                if low == "NULL" || high == "NULL" { return "0" }
                if !repeatable { return "coalesce(\(left) BETWEEN \(low) AND \(high), 0)" }
                return "(\(left) >= \(low) AND \(left) <= \(high) AND \(left) IS NOT NULL)"
            }
            let nonNull = items.filter { if case .attribute(.null) = $0 { return false } else { return true } }
            let matchesNull = nonNull.count < items.count
            guard !nonNull.isEmpty else { return matchesNull ? "(\(left) IS NULL)" : "0" }
            // With nulls taken out of the list, `x IN (…)` is NULL exactly when x is NULL: one
            // copy of x, and a null x matches only if the list held a null.
            let list = nonNull.map { bindValue($0, options: options) }.joined(separator: ", ")
            return "coalesce(\(left) IN (\(list)), \(matchesNull ? 1 : 0))"
        case .beginsWith, .endsWith, .contains, .like, .matches:
            let right = operand(c.rhs, options: [])
            return "ms_strop(\(c.op.stringCode!.rawValue), \(left), \(right), \(c.options.rawValue))"
        case .equal, .notEqual, .lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual:
            let right = operand(c.rhs, options: options)
            if right == "NULL" {
                switch c.op {
                case .equal: return "(\(left) IS NULL)"
                case .notEqual: return "(\(left) IS NOT NULL)"
                default: return "0"
                }
            }
            switch c.op {
            case .equal: return "(\(left) IS \(right))"
            case .notEqual: return "(\(left) IS NOT \(right))"
            default:
                if repeatable, case .value = c.rhs { return "(\(left) \(c.op.sql) \(right) AND \(left) IS NOT NULL)" }
                return "coalesce(\(left) \(c.op.sql) \(right), 0)"
            }
        }
    }

    // MARK: Order

    /// ORDER BY terms: each sort key, then `tieBreakers` (the primary key, unless told
    /// otherwise). SQLite puts NULL first ascending and last descending, as the contract wants.
    mutating func orderBy(_ sorts: [ResolvedSort], tieBreakers: [String] = ["t0.\"_pk\" ASC"]) -> String {
        (sorts.map { sort in
            let value = expression(sort.keyPath)
            let key = sort.options.isEmpty ? value : "ms_fold(\(value), \(sort.options.rawValue))"
            return "\(key) \(sort.ascending ? "ASC" : "DESC")"
        } + tieBreakers).joined(separator: ", ")
    }
}

extension ComparisonOptions {
    /// The options that fold operands before the operator compares them: string operators
    /// fold by themselves (inside `ms_strop`), so they get none here.
    func forOperator(_ op: ComparisonOperator) -> ComparisonOptions { op.isStringOperator ? [] : self }
}

extension ComparisonOperator {
    var sql: String {
        switch self {
        case .equal: return "="
        case .notEqual: return "<>"
        case .lessThan: return "<"
        case .lessThanOrEqual: return "<="
        case .greaterThan: return ">"
        case .greaterThanOrEqual: return ">="
        default: return "="
        }
    }
}

extension SQLQueryBuilder {
    /// Keyset pagination: rows strictly after `cursor` in the order of `sorts` then the primary
    /// key. For each sort key in turn: all earlier keys equal and this one after; or all equal
    /// and a greater key. "After" respects where nulls sort (first ascending, last descending).
    mutating func after(_ cursor: FetchCursor, sorts: [ResolvedSort]) -> String {
        var terms: [String] = []
        var equalSoFar: [String] = []
        for (sort, value) in zip(sorts, cursor.values) {
            var expression = expression(sort.keyPath)
            var bound = value
            if !sort.options.isEmpty {
                expression = "ms_fold(\(expression), \(sort.options.rawValue))"
                if case .string(let s) = value { bound = .string(StringOperations.fold(s, sort.options)) }
            }
            let parameter = bound.isNull ? "NULL" : bind(bound)
            let later: String
            switch (sort.ascending, bound.isNull) {
            case (true, true): later = "\(expression) IS NOT NULL"
            case (true, false): later = "(\(expression) > \(parameter) AND \(expression) IS NOT NULL)"
            case (false, true): later = "0"
            case (false, false): later = "(\(expression) < \(parameter) OR \(expression) IS NULL)"
            }
            terms.append("(" + (equalSoFar + [later]).joined(separator: " AND ") + ")")
            equalSoFar.append("\(expression) IS \(parameter)")
        }
        terms.append("(" + (equalSoFar + ["t0.\"_pk\" > \(bind(.integer(cursor.primaryKey)))"]).joined(separator: " AND ") + ")")
        return "(" + terms.joined(separator: " OR ") + ")"
    }
}
