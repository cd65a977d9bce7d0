import Foundation
import ManagedStoreCore

/// The part of a checked fetch that PostgreSQL answers with exactly the in-memory evaluator's
/// results, as SQL: the conjuncts of its predicate that compare the fetched entity's own
/// columns, or an attribute of the object a to-one it keeps the key of points at
/// (`project.name`), or ANY, ALL or NONE of an attribute of a to-many's destinations
/// (`ANY tags.label`), with constants (`==`, `!=`, `<`, `<=`, `>`, `>=`, `IN`, `BETWEEN`, and
/// BEGINSWITH, ENDSWITH, CONTAINS and LIKE without `[c]` or `[d]`; AND, OR and NOT of them),
/// and its sorts when all are on those columns (a to-one's attribute by a subquery); for a [c]
/// or [d] comparison of its own string with an ASCII constant, a necessary condition (ILIKE)
/// that lets SQL leave out most rows the evaluator would refuse (`prefilter`). The rest (`[cd]`,
/// MATCHES, longer key paths, aggregates of a to-many, SUBQUERY) stays with the evaluator, over
/// the rows the SQL part let through.
///
/// A comparison under a NOT is two-valued (a null column makes it false, never NULL, so that NOT
/// keeps the evaluator's meaning); elsewhere in the WHERE clause, where NULL and false both leave
/// a row out, it is the plain comparison an index answers. Every value is a bound parameter.
struct PGFetchSQL {
    /// The WHERE condition of the compiled conjuncts ("true" when none compiled).
    let condition: String
    let parameters: [String?]
    /// The conjuncts left to the evaluator; nil when the whole predicate compiled.
    let residual: CheckedPredicate?
    /// ORDER BY terms for the sorts then the key, when every sort compiled; nil otherwise.
    let orderBy: String?
    /// Whether the fetch's cursor (keyset pagination) is in `condition`.
    let cursorCompiled: Bool

    /// The order by key alone: `orderBy` of a fetch without sorts.
    static let keyOrder = "_pk ASC"

    /// With `compiling` false, nothing compiles: the evaluator answers all (the plain path).
    init(_ prepared: PreparedFetch, schema: PGSchema, compiling: Bool = true) {
        var compiler = Compiler(table: schema[prepared.entity], schema: schema)
        var compiled: [String] = []
        var left: [CheckedPredicate] = []
        if let predicate = prepared.predicate, !compiling {
            left = [predicate]
        } else if let predicate = prepared.predicate {
            let conjuncts: [CheckedPredicate]
            if case .and(let terms) = predicate.simplified { conjuncts = terms } else { conjuncts = [predicate] }
            for conjunct in conjuncts {
                if let sql = compiler.condition(conjunct) {
                    compiled.append(sql)
                } else {
                    left.append(conjunct)
                    if let necessary = compiler.prefilter(conjunct) { compiled.append(necessary) }
                }
            }
        }
        var terms: [String] = []
        for sort in prepared.sorts where compiling {
            guard sort.options.isEmpty, let column = compiler.orderableColumn(sort.keyPath) else { terms = []; break }
            // The evaluator's order: nulls first ascending, last descending.
            terms.append(sort.ascending ? "\(column) ASC NULLS FIRST" : "\(column) DESC NULLS LAST")
        }
        orderBy = compiling && terms.count == prepared.sorts.count ? (terms + [Self.keyOrder]).joined(separator: ", ") : nil
        // The cursor only with the order in SQL: "after" is a position in that order.
        if let cursor = prepared.after, orderBy != nil, let after = compiler.after(cursor, sorts: prepared.sorts) {
            compiled.append(after)
            cursorCompiled = true
        } else {
            cursorCompiled = false
        }
        condition = compiled.isEmpty ? "true" : compiled.joined(separator: " AND ")
        residual = left.isEmpty ? nil : (left.count == 1 ? left[0] : .and(left))
        parameters = compiler.parameters
    }

    private struct Compiler {
        let table: PGSchema.EntityTable
        /// Every entity's table (where a relationship's destinations are), and where a to-many's
        /// are read from.
        let schema: PGSchema
        var parameters: [String?] = []
        private var tables: [PGSchema.EntityTable] { schema.tables }

        init(table: PGSchema.EntityTable, schema: PGSchema) {
            self.table = table
            self.schema = schema
        }

        mutating func bind(_ text: String) -> String {
            parameters.append(text)
            return "$\(parameters.count)"
        }

        /// The SQL of `predicate` as a conjunct of a WHERE clause; nil when some part of it does
        /// not compile.
        mutating func condition(_ predicate: CheckedPredicate) -> String? {
            let saved = parameters
            let sql = compile(predicate, positive: true)
            if sql == nil { parameters = saved }
            return sql
        }

        /// `positive`: the SQL's value decides a WHERE clause, where NULL and false both leave a
        /// row out, so it may be NULL where the evaluator says false: plain comparisons, which
        /// PostgreSQL matches with an index. Under a NOT it must be two-valued (never NULL),
        /// else NOT NULL would leave out what NOT false keeps.
        private mutating func compile(_ predicate: CheckedPredicate, positive: Bool) -> String? {
            switch predicate {
            case .constant(let value): return value ? "true" : "false"
            case .and(let terms), .or(let terms):
                guard !terms.isEmpty else { if case .and = predicate { return "true" } else { return "false" } }
                var parts: [String] = []
                for term in terms {
                    guard let sql = compile(term, positive: positive) else { return nil }
                    parts.append(sql)
                }
                if case .and = predicate { return "(" + parts.joined(separator: " AND ") + ")" }
                return "(" + parts.joined(separator: " OR ") + ")"
            case .not(let inner):
                return compile(inner, positive: false).map { "(NOT \($0))" }
            case .comparison(let comparison):
                return compile(comparison, positive: positive)
            }
        }

        /// A column of the fetched entity's own row, and the kind of constant it meets exactly:
        /// attributes whose PostgreSQL order and equality are the evaluator's, and stored to-one keys.
        private enum Column {
            case attribute(String, AttributeType)
            case foreignKey(String)
        }

        private func column(_ keyPath: ResolvedKeyPath) -> Column? {
            guard case .object = keyPath.root, keyPath.steps.isEmpty else { return nil }
            switch keyPath.terminal {
            case let .attribute(entity, index) where entity == table.entity.index:
                return .attribute(table.attributeColumns[index], table.entity.attributes[index].type)
            case let .toOne(entity, relationship) where entity == table.entity.index:
                guard let position = table.entity.foreignKeyRelationships.firstIndex(of: relationship) else { return nil }
                return .foreignKey(table.foreignKeyColumns[position])
            default:
                return nil
            }
        }

        /// A to-one the SQL follows to its destination's row: the destination's table, and the
        /// fetched row's column holding its key (qualified by the table: it is read from inside
        /// a subquery).
        private struct Hop {
            let table: String
            let foreignKey: String
        }

        /// An attribute of the object a to-one of the fetched entity points at, when the
        /// entity keeps that to-one's key: the attribute's column in the destination's row
        /// (named `d`), and the hop there.
        private func hopColumn(_ keyPath: ResolvedKeyPath) -> (Column, Hop)? {
            guard case .object = keyPath.root, keyPath.steps.count == 1, let step = keyPath.steps.first, !step.isToMany,
                  step.entity == table.entity.index,
                  let position = table.entity.foreignKeyRelationships.firstIndex(of: step.relationship),
                  case let .attribute(entity, index) = keyPath.terminal, tables.indices.contains(entity) else { return nil }
            let destination = tables[entity]
            return (.attribute("d." + destination.attributeColumns[index], destination.entity.attributes[index].type),
                    Hop(table: destination.kindsSource, foreignKey: table.table + "." + table.foreignKeyColumns[position]))
        }

        /// Keyset pagination: rows strictly after `cursor` in the order of `sorts`, then the key.
        /// For each sort in turn: every earlier one equal and this one after; or all equal and a
        /// greater key. Nulls sort first ascending and last descending. nil when a cursor value
        /// is not of its column's kind.
        mutating func after(_ cursor: FetchCursor, sorts: [ResolvedSort]) -> String? {
            guard cursor.values.count == sorts.count else { return nil }
            let saved = parameters
            var terms: [String] = []
            var equalSoFar: [String] = []
            for (sort, value) in zip(sorts, cursor.values) {
                guard let column = column(sort.keyPath), case .attribute(let name, _) = column,
                      let text = constant(.attribute(value), for: column) else { parameters = saved; return nil }
                let later: String, equal: String
                if let text {
                    let parameter = bind(text)
                    later = sort.ascending ? "COALESCE(\(name) > \(parameter), false)" : "COALESCE(\(name) < \(parameter), true)"
                    equal = "COALESCE(\(name) = \(parameter), false)"
                } else {
                    later = sort.ascending ? "(\(name) IS NOT NULL)" : "false"
                    equal = "(\(name) IS NULL)"
                }
                terms.append("(" + (equalSoFar + [later]).joined(separator: " AND ") + ")")
                equalSoFar.append(equal)
            }
            terms.append("(" + (equalSoFar + ["_pk > \(bind(String(cursor.primaryKey)))"]).joined(separator: " AND ") + ")")
            return "(" + terms.joined(separator: " OR ") + ")"
        }

        /// A column whose ORDER BY is the evaluator's sort order: the entity's own, or an
        /// attribute of the object a to-one it keeps the key of (`project.name`), read by a
        /// subquery: null where the to-one is nil, as the evaluator reads it.
        func orderableColumn(_ keyPath: ResolvedKeyPath) -> String? {
            if case .attribute(let name, let type)? = column(keyPath) { return PGValues.ordersAsEvaluator(type) ? name : nil }
            guard let (column, hop) = hopColumn(keyPath), case .attribute(let name, let type) = column, PGValues.ordersAsEvaluator(type) else { return nil }
            return "(SELECT \(name) FROM \(hop.table) AS d WHERE d._pk = \(hop.foreignKey))"
        }

        /// A constant's text when it is of the kind `column` holds (nil: null; .none: not compiled).
        private func constant(_ value: PredicateValue, for column: Column) -> String?? {
            switch (column, value) {
            case (_, .attribute(.null)): return .some(nil)
            case (.foreignKey, .object(let id)): return id.primaryKey.map { .some(String($0)) } ?? .none
            case let (.attribute(_, type), .attribute(attribute)):
                switch (type, attribute) {
                case (.integer16, .integer), (.integer32, .integer), (.integer64, .integer), (.decimal, .decimal), (.double, .double),
                     (.float, .float), (.string, .string), (.boolean, .boolean), (.date, .date):
                    guard let text = try? PGValues.text(attribute) else { return .none }
                    return .some(text)
                default:
                    return .none
                }
            default:
                return .none
            }
        }

        /// For a conjunct left to the evaluator that compares a string of the entity's own row
        /// with [c] or [d] (==, BEGINSWITH, ENDSWITH, CONTAINS, LIKE) and a constant of ASCII
        /// characters: a condition every row it matches meets, so that SQL can leave out most
        /// rows that do not. Folding (case, diacritics) maps ASCII text to ASCII text by its
        /// letters' case alone, as ILIKE does on a `COLLATE "C"` column; a value with any other
        /// character may fold in ways ILIKE does not know (K and the Kelvin sign, ß and ss), and
        /// passes to the evaluator whatever ILIKE says. The evaluator still decides each row.
        mutating func prefilter(_ predicate: CheckedPredicate) -> String? {
            guard case .comparison(let c) = predicate, c.quantifier == .scalar, !c.options.isEmpty, case .keyPath(let keyPath) = c.lhs,
                  case .attribute(let name, .string)? = column(keyPath), case .value(.attribute(.string(let constant))) = c.rhs,
                  constant.utf8.allSatisfy({ $0 > 0 && $0 < 0x80 }) else { return nil }
            let literal = Self.likePattern(constant, wildcards: false)
            let pattern: String
            switch c.op {
            case .equal: pattern = literal
            case .beginsWith: pattern = literal + "%"
            case .endsWith: pattern = "%" + literal
            case .contains: pattern = "%" + literal + "%"
            case .like: pattern = Self.likePattern(constant)
            default: return nil
            }
            // A character beyond ASCII, by a regular expression (in any server encoding). Comparing
            // the value's bytes and characters costs less a row, but PostgreSQL cannot estimate
            // how few rows it keeps, and walks the key index where a parallel scan is faster.
            return "(\(name) ILIKE \(bind(pattern))::text OR \(name) ~ '[^\\x01-\\x7f]')"
        }

        /// A LIKE pattern of the predicate language (`*` any run, `?` one code point, all else
        /// itself) in PostgreSQL's (`%`, `_`, backslash escapes); without `wildcards`, `text`
        /// matching itself alone (`*` and `?` are themselves too).
        static func likePattern(_ pattern: String, wildcards: Bool = true) -> String {
            var result = ""
            for scalar in pattern.unicodeScalars {
                switch scalar {
                case "*" where wildcards: result += "%"
                case "?" where wildcards: result += "_"
                case "%", "_", "\\": result += "\\" + String(scalar)
                default: result.unicodeScalars.append(scalar)
                }
            }
            return result
        }

        private mutating func compile(_ c: CheckedComparison, positive: Bool) -> String? {
            guard c.quantifier == .scalar else { return quantified(c) }
            guard c.options.isEmpty, case .keyPath(let keyPath) = c.lhs else { return nil }
            if let column = column(keyPath) { return compare(c, column, positive: positive) }
            // The destination's condition decides the subquery's WHERE: positive.
            guard let (column, hop) = hopColumn(keyPath), case .attribute(_, let type) = column,
                  let matched = compare(c, column, positive: true) else { return nil }
            // The evaluator reads the value of a nil to-one's attribute as nil: such a row
            // matches when the comparison holds for nil (`project.name == nil`, `!= "x"`).
            guard let onNil = compare(c, .attribute("(NULL::\(PGValues.columnType(type)))", type)) else { return nil }
            return "(EXISTS (SELECT 1 FROM \(hop.table) AS d WHERE d._pk = \(hop.foreignKey) AND \(matched))"
                + " OR (\(hop.foreignKey) IS NULL AND \(onNil)))"
        }

        /// ANY, ALL or NONE of an attribute of the destinations of one of the entity's to-many
        /// relationships (`ANY tags.label == "x"`), as EXISTS over the rows that link them:
        /// two-valued, wherever it stands. ANY: some destination's value compares true; NONE:
        /// none does; ALL: none compares false (the comparison two-valued, a null value being
        /// compared as the evaluator compares it). No destinations: ANY false, ALL and NONE true.
        private mutating func quantified(_ c: CheckedComparison) -> String? {
            guard c.options.isEmpty, case .keyPath(let keyPath) = c.lhs, case .object = keyPath.root,
                  keyPath.steps.count == 1, let step = keyPath.steps.first, step.isToMany, step.entity == table.entity.index,
                  case let .attribute(entity, index) = keyPath.terminal, tables.indices.contains(entity),
                  let links = schema.destinationSource(table.entity, step.relationship) else { return nil }
            let destination = tables[entity]
            // The destinations' rows as `d` where the rows read are theirs, else joined as `e`.
            let (alias, join) = links.readsDestinationRows ? ("d", "") : ("e", " JOIN \(destination.kindsSource) AS e ON e._pk = \(links.destination)")
            let source = "SELECT 1 FROM \(links.from)\(join) WHERE \(links.owner) = \(table.table)._pk"
            let column = Column.attribute("\(alias).\(destination.attributeColumns[index])", destination.entity.attributes[index].type)
            switch c.quantifier {
            case .any:
                guard let matched = compare(c, column, positive: true) else { return nil }
                return "(EXISTS (\(source) AND \(matched)))"
            case .none:
                guard let matched = compare(c, column, positive: true) else { return nil }
                return "(NOT EXISTS (\(source) AND \(matched)))"
            case .all:
                guard let matched = compare(c, column) else { return nil }
                return "(NOT EXISTS (\(source) AND NOT \(matched)))"
            case .scalar:
                return nil
            }
        }

        /// The comparison `c` of the value in `column` (an SQL expression) with its constants:
        /// two-valued, never NULL, unless `positive` (see `compile`). nil when it does not compile.
        private mutating func compare(_ c: CheckedComparison, _ column: Column, positive: Bool = false) -> String? {
            /// `condition`, NULL read as false where that matters.
            func twoValued(_ condition: String) -> String { positive ? "(\(condition))" : "COALESCE(\(condition), false)" }
            let name: String
            switch column {
            case .attribute(let n, let type):
                guard PGValues.ordersAsEvaluator(type) else { return nil }
                name = n
            case .foreignKey(let n):
                guard c.op == .equal || c.op == .notEqual || c.op == .in else { return nil }
                name = n
            }
            switch c.op {
            case .equal, .notEqual, .lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual:
                guard case .value(let value) = c.rhs, let text = constant(value, for: column) else { return nil }
                guard let text else {
                    switch c.op {
                    case .equal: return "(\(name) IS NULL)"
                    case .notEqual: return "(\(name) IS NOT NULL)"
                    default: return "false"
                    }
                }
                let parameter = bind(text)
                switch c.op {
                case .equal: return positive ? "(\(name) = \(parameter))" : "(\(name) IS NOT DISTINCT FROM \(parameter))"
                // A null value is not equal to the constant: it matches (not a comparison to NULL).
                case .notEqual: return "(\(name) IS DISTINCT FROM \(parameter))"
                case .lessThan: return twoValued("\(name) < \(parameter)")
                case .lessThanOrEqual: return twoValued("\(name) <= \(parameter)")
                case .greaterThan: return twoValued("\(name) > \(parameter)")
                default: return twoValued("\(name) >= \(parameter)")
                }
            case .between:
                guard case .list(let items) = c.rhs, items.count == 2,
                      let low = constant(items[0], for: column), let high = constant(items[1], for: column) else { return nil }
                guard let low, let high else { return "false" }
                return twoValued("\(name) >= \(bind(low)) AND \(name) <= \(bind(high))")
            case .beginsWith, .endsWith, .contains, .like:
                // Without [c] or [d] the evaluator compares code points (bytes of UTF-8), as
                // these do on a `COLLATE "C"` column; a NULL value matches nothing. MATCHES
                // stays in memory: PostgreSQL's regular expressions are not ICU's.
                guard case .attribute(_, .string) = column, case .value(.attribute(.string(let pattern))) = c.rhs else { return nil }
                switch c.op {
                case .beginsWith: return twoValued("starts_with(\(name), \(bind(pattern))::text)")
                case .endsWith:
                    let parameter = bind(pattern)
                    return twoValued("right(\(name), char_length(\(parameter)::text)) = \(parameter)::text")
                case .contains: return twoValued("strpos(\(name), \(bind(pattern))::text) > 0")
                default: return twoValued("\(name) LIKE \(bind(Self.likePattern(pattern)))::text")
                }
            case .in:
                guard case .list(let items) = c.rhs else { return nil }
                var texts: [String] = []
                var matchesNull = false
                for item in items {
                    guard let text = constant(item, for: column) else { return nil }
                    if let text { texts.append(text) } else { matchesNull = true }
                }
                guard !texts.isEmpty else { return matchesNull ? "(\(name) IS NULL)" : "false" }
                let list = texts.map { bind($0) }.joined(separator: ", ")
                if matchesNull { return "COALESCE(\(name) IN (\(list)), \(name) IS NULL)" }
                return twoValued("\(name) IN (\(list))")
            default:
                return nil
            }
        }
    }
}
