/// Builds the SQL of a fetch: FROM with a LEFT JOIN per to-one step of a key path, WHERE from a
/// checked predicate, ORDER BY from sort descriptors with the primary key last.
///
/// Every constant becomes a bound parameter; only identifiers checked against the model and
/// fixed keywords are written into the SQL text.
struct SQLQueryBuilder {
    let model: ManagedObjectModel
    let root: Entity
    private(set) var bindings: [AttributeValue] = []
    private var joinAliases: [[ResolvedKeyPath.Step]: String] = [:]
    private var joinClauses: [String] = []

    init(model: ManagedObjectModel, root: Entity) {
        self.model = model
        self.root = root
    }

    var fromClause: String { "\(root.table) AS t0" + joinClauses.map { " " + $0 }.joined() }

    /// The alias of the entity reached after `steps`, adding the joins that reach it.
    private mutating func alias(after steps: [ResolvedKeyPath.Step]) -> String {
        guard !steps.isEmpty else { return "t0" }
        if let alias = joinAliases[steps] { return alias }
        let previous = alias(after: Array(steps.dropLast()))
        let step = steps.last!
        let relationship = model.schema[step.entity].relationships[step.relationship]
        let destination = model.schema[relationship.destinationIndex]
        let alias = "j\(joinAliases.count + 1)"
        switch relationship.storage {
        case .foreignKey(let column):
            joinClauses.append("LEFT JOIN \(destination.table) AS \(alias) ON \(alias).\"_pk\" = \(previous).\(column)")
        case .inverseForeignKey(let column):
            joinClauses.append("LEFT JOIN \(destination.table) AS \(alias) ON \(alias).\(column) = \(previous).\"_pk\"")
        case .joinTable:
            preconditionFailure("a to-one relationship is never stored in a join table")
        }
        joinAliases[steps] = alias
        return alias
    }

    /// The SQL expression for a key path's value (for a relationship: the destination's key).
    mutating func expression(_ keyPath: ResolvedKeyPath) -> String {
        let owner = alias(after: keyPath.steps)
        switch keyPath.terminal {
        case let .attribute(e, a):
            return "\(owner).\(quoteIdentifier(model.schema[e].attributes[a].name))"
        case let .relationship(e, r):
            let relationship = model.schema[e].relationships[r]
            switch relationship.storage {
            case .foreignKey(let column):
                return "\(owner).\(column)"
            case .inverseForeignKey(let column):
                let destination = model.schema[relationship.destinationIndex]
                return "(SELECT d.\"_pk\" FROM \(destination.table) AS d WHERE d.\(column) = \(owner).\"_pk\" ORDER BY d.\"_pk\" LIMIT 1)"
            case .joinTable:
                preconditionFailure("a to-one relationship is never stored in a join table")
            }
        }
    }

    private mutating func bind(_ value: AttributeValue) -> String {
        bindings.append(value)
        return "?"
    }

    /// The WHERE condition of a predicate. Each comparison is two-valued (never NULL), so that
    /// NOT inverts it exactly as the in-memory evaluator does.
    mutating func condition(_ predicate: CheckedPredicate) -> String {
        switch predicate {
        case .constant(let b): return b ? "1" : "0"
        case .and(let ps): return ps.isEmpty ? "1" : "(" + ps.map { condition($0) }.joined(separator: " AND ") + ")"
        case .or(let ps): return ps.isEmpty ? "0" : "(" + ps.map { condition($0) }.joined(separator: " OR ") + ")"
        case .not(let p): return "(NOT \(condition(p)))"
        case let .comparison(.keyPath(l), op, .keyPath(r)):
            let a = expression(l), b = expression(r)
            switch op {
            case .equal: return "(\(a) IS \(b))"
            case .notEqual: return "(\(a) IS NOT \(b))"
            default: return "(\(a) \(op.sql) \(b) AND \(a) IS NOT NULL AND \(b) IS NOT NULL)"
            }
        case let .comparison(.keyPath(k), op, .value(v)):
            return comparison(k, op, v)
        case let .comparison(.value(v), op, .keyPath(k)):
            return comparison(k, op.mirrored, v)
        case let .comparison(.value(a), op, .value(b)):
            return PredicateEvaluator.compareValues(a, op, b) ? "1" : "0"
        }
    }

    private mutating func comparison(_ keyPath: ResolvedKeyPath, _ op: ComparisonOperator, _ value: PredicateValue) -> String {
        let column = expression(keyPath)
        let bound: AttributeValue
        switch value {
        case .attribute(let v): bound = v
        case .object(let id):
            // An unsaved object is never the target of a stored row.
            guard let pk = id.primaryKey else { return op == .notEqual ? "1" : "0" }
            bound = .integer(pk)
        }
        if bound.isNull {
            switch op {
            case .equal: return "(\(column) IS NULL)"
            case .notEqual: return "(\(column) IS NOT NULL)"
            default: return "0"
            }
        }
        switch op {
        case .equal: return "(\(column) IS \(bind(bound)))"
        case .notEqual: return "(\(column) IS NOT \(bind(bound)))"
        default: return "(\(column) \(op.sql) \(bind(bound)) AND \(column) IS NOT NULL)"
        }
    }

    /// ORDER BY terms: each sort key, then the primary key. SQLite puts NULL first ascending
    /// and last descending, as the contract wants.
    mutating func orderBy(_ sorts: [(ResolvedKeyPath, Bool)]) -> String {
        (sorts.map { "\(expression($0.0)) \($0.1 ? "ASC" : "DESC")" } + ["t0.\"_pk\" ASC"]).joined(separator: ", ")
    }
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
        }
    }
}
