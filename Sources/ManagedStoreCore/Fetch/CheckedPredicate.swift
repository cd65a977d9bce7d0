import Foundation

/// A predicate checked against the model: key paths resolved, every to-many side moved to
/// the left with its quantifier, constants converted to the representation of what they meet.
/// Both the SQL builder and the in-memory evaluator work from this one form, which is what
/// keeps their answers equal.
package indirect enum CheckedPredicate: Sendable {
    case constant(Bool)
    case comparison(CheckedComparison)
    case and([CheckedPredicate])
    case or([CheckedPredicate])
    case not(CheckedPredicate)

    /// Entities whose values the predicate reads.
    var entitiesRead: Set<Int> {
        switch self {
        case .constant: return []
        case .comparison(let c): return c.lhs.entitiesRead.union(c.rhs.entitiesRead)
        case .and(let ps), .or(let ps): return ps.reduce(into: Set<Int>()) { $0.formUnion($1.entitiesRead) }
        case .not(let p): return p.entitiesRead
        }
    }

    /// The same predicate with double negations removed and nested ANDs (ORs) merged.
    package var simplified: CheckedPredicate {
        switch self {
        case .constant, .comparison: return self
        case .not(let inner):
            if case .not(let twice) = inner { return twice.simplified }
            return .not(inner.simplified)
        case .and(let ps):
            return .and(ps.flatMap { p -> [CheckedPredicate] in
                let s = p.simplified
                if case .and(let inner) = s { return inner }
                return [s]
            })
        case .or(let ps):
            return .or(ps.flatMap { p -> [CheckedPredicate] in
                let s = p.simplified
                if case .or(let inner) = s { return inner }
                return [s]
            })
        }
    }

    /// How many SUBQUERYs and aggregates nest in one another.
    var subqueryNesting: Int {
        switch self {
        case .constant: return 0
        case .comparison(let c): return max(c.lhs.subqueryNesting, c.rhs.subqueryNesting)
        case .and(let ps), .or(let ps): return ps.map(\.subqueryNesting).max() ?? 0
        case .not(let p): return p.subqueryNesting
        }
    }

    /// How deeply the SQL of this predicate nests (balanced AND/OR count as one level).
    var depth: Int {
        switch self {
        case .constant: return 0
        case .comparison(let c): return 1 + max(c.lhs.depth, c.rhs.depth) + (c.quantifier == .scalar ? 0 : 1)
        case .and(let ps), .or(let ps): return 1 + (ps.map(\.depth).max() ?? 0)
        case .not(let p): return 1 + p.depth
        }
    }

    /// Whether the answer for an object depends on objects other than itself.
    package var followsRelationships: Bool { entitiesRead.count > 1 || readsRelated }

    private var readsRelated: Bool {
        switch self {
        case .constant: return false
        case .comparison(let c): return c.lhs.readsRelated || c.rhs.readsRelated
        case .and(let ps), .or(let ps): return ps.contains(where: \.readsRelated)
        case .not(let p): return p.readsRelated
        }
    }
}

/// How a comparison treats its (left) operand.
package enum Quantifier: Sendable {
    /// A single value.
    case scalar
    /// The left side is a collection: some element / every element / no element satisfies.
    case any, all, none
}

package struct CheckedComparison: Sendable {
    package let quantifier: Quantifier
    package let lhs: CheckedOperand
    package let op: ComparisonOperator
    package let rhs: CheckedOperand
    package let options: ComparisonOptions
}

package indirect enum CheckedOperand: Sendable {
    case keyPath(ResolvedKeyPath)
    case value(PredicateValue)
    /// Constants of IN and BETWEEN.
    case list([PredicateValue])
    /// An aggregate over the objects of `collection` (a path ending in one to-many step), of
    /// `attribute` (a scalar path from the destination) unless counting.
    case aggregate(AggregateFunction, collection: ResolvedKeyPath, attribute: ResolvedKeyPath?)
    case subqueryCount(collection: ResolvedKeyPath, variable: String, predicate: CheckedPredicate)

    var entitiesRead: Set<Int> {
        switch self {
        case .keyPath(let k): return k.entitiesRead
        case .value, .list: return []
        case let .aggregate(_, collection, attribute): return collection.entitiesRead.union(attribute?.entitiesRead ?? [])
        case let .subqueryCount(collection, _, predicate): return collection.entitiesRead.union(predicate.entitiesRead)
        }
    }

    var subqueryNesting: Int {
        switch self {
        case .keyPath, .value, .list: return 0
        case .aggregate: return 1
        case .subqueryCount(_, _, let predicate): return 1 + predicate.subqueryNesting
        }
    }

    /// SQL nesting this operand adds: a to-many step or a subquery is a level each.
    var depth: Int {
        switch self {
        case .keyPath(let k): return k.steps.filter(\.isToMany).count
        case .value, .list: return 0
        case .aggregate: return 1
        case .subqueryCount(_, _, let predicate): return 1 + predicate.depth
        }
    }

    var readsRelated: Bool {
        switch self {
        case .keyPath(let k): return !k.steps.isEmpty || { if case .toOne = k.terminal { return true } else { return false } }()
        case .value, .list: return false
        case .aggregate, .subqueryCount: return true
        }
    }
}

/// Checks a predicate against a model and converts its constants.
struct PredicateChecker {
    let model: ManagedObjectModel
    let root: Entity
    let storeIdentifier: UUID
    /// SUBQUERY variables in scope, with the entity each stands for.
    var variables: [String: Int] = [:]
    /// For a predicate over an aggregate's groups [havingPredicate]: the names it may use, each
    /// a result of the groups; nil for a predicate over objects.
    var groupColumns: [String: (index: Int, type: OperandType)]?

    init(model: ManagedObjectModel, root: Entity, storeIdentifier: UUID) {
        self.model = model
        self.root = root
        self.storeIdentifier = storeIdentifier
    }

    /// The deepest nesting a checked predicate may have: SQLite's parser overflows its stack
    /// not far beyond this, and no sensible query comes near it.
    static let maxDepth = 24
    /// SQLite's parser overflows at 8 SUBQUERYs (or aggregates) nested in one another
    /// (measured with 3.40.1); one level of margin below that.
    static let maxSubqueryNesting = 6

    /// Checks `predicate` and simplifies it (no double negations, no AND inside AND), then
    /// refuses what would nest deeper than SQLite can parse.
    func checkTopLevel(_ predicate: ObjectPredicate) throws(FetchError) -> CheckedPredicate {
        let checked = try check(predicate).simplified
        let nesting = checked.subqueryNesting
        guard nesting <= Self.maxSubqueryNesting else {
            throw .invalidPredicate("the predicate nests \(nesting) SUBQUERYs or aggregates in one another; at most \(Self.maxSubqueryNesting)")
        }
        let depth = checked.depth
        guard depth <= Self.maxDepth else {
            throw .invalidPredicate("the predicate nests \(depth) levels deep (NOT, AND/OR, SUBQUERY, to-many key paths); at most \(Self.maxDepth)")
        }
        return checked
    }

    func check(_ predicate: ObjectPredicate) throws(FetchError) -> CheckedPredicate {
        switch predicate {
        case .constant(let b): return .constant(b)
        case .and(let ps): return .and(try ps.map { p throws(FetchError) in try check(p) })
        case .or(let ps): return .or(try ps.map { p throws(FetchError) in try check(p) })
        case .not(let p): return .not(try check(p))
        case .comparison(let c): return try check(c)
        }
    }

    // MARK: Operands

    private func keyPath(_ text: String) throws(FetchError) -> ResolvedKeyPath {
        if let groupColumns {
            guard let column = groupColumns[text] else { throw .unknownKeyPath(text, entity: root.name) }
            return ResolvedKeyPath(groupColumn: column.index, named: text, type: column.type, rootEntity: root)
        }
        return try ResolvedKeyPath(text, rootEntity: root, variables: variables, model: model)
    }

    private func operand(_ expression: PredicateExpression) throws(FetchError) -> CheckedOperand {
        switch expression {
        case .keyPath(let text): return .keyPath(try keyPath(text))
        case .constant(let value): return .value(value)
        case .variable(let name):
            guard variables[name] != nil else {
                throw .invalidPredicate("no value for $\(name): call withSubstitutionVariables first")
            }
            return .keyPath(try keyPath("$" + name))
        case .list(let items):
            var values: [PredicateValue] = []
            for item in items {
                guard case .constant(let value) = item else { throw .invalidPredicate("a {list} holds constants only") }
                values.append(value)
            }
            return .list(values)
        case let .aggregate(function, collectionText, attributeText):
            let collection = try keyPath(collectionText)
            guard collection.steps.filter(\.isToMany).count == 1, collection.steps.last?.isToMany == true,
                  case .object(let destination) = collection.terminal else {
                throw .invalidPredicate("@\(function.rawValue) needs a key path ending in a to-many relationship: '\(collectionText)' "
                    + (collection.isCollection ? "crosses more than one" : "is not to-many"))
            }
            guard let attributeText else { return .aggregate(function, collection: collection, attribute: nil) }
            let attribute = try ResolvedKeyPath(attributeText, rootEntity: model.schema[destination], model: model)
            guard !attribute.isCollection, case .attribute(let type) = attribute.valueType(model) else {
                throw .invalidPredicate("@\(function.rawValue).\(attributeText) must end in an attribute reached through to-one relationships")
            }
            switch function {
            case .sum, .avg:
                guard [.integer16, .integer32, .integer64, .double, .float].contains(type) else {
                    throw .incompatibleTypes(keyPath: "\(collectionText).@\(function.rawValue).\(attributeText)", detail: "@\(function.rawValue) needs an integer, float or double attribute, not \(type.rawValue)")
                }
            case .min, .max:
                guard type.isOrdered || type == .string else {
                    throw .incompatibleTypes(keyPath: "\(collectionText).@\(function.rawValue).\(attributeText)", detail: "@\(function.rawValue) needs an ordered attribute, not \(type.rawValue)")
                }
            case .count: break
            }
            return .aggregate(function, collection: collection, attribute: attribute)
        case let .subqueryCount(collectionText, variable, predicate):
            let collection = try keyPath(collectionText)
            guard collection.steps.last?.isToMany == true, collection.steps.filter(\.isToMany).count == 1,
                  case .object(let destination) = collection.terminal else {
                throw .invalidPredicate("SUBQUERY needs a key path ending in a to-many relationship: '\(collectionText)'")
            }
            guard variables[variable] == nil else { throw .invalidPredicate("SUBQUERY variable $\(variable) is already in use") }
            var inner = self
            inner.variables[variable] = destination
            return .subqueryCount(collection: collection, variable: variable, predicate: try inner.check(predicate))
        }
    }

    private func type(of operand: CheckedOperand) -> OperandType? {
        switch operand {
        case .keyPath(let k): return k.valueType(model)
        case .value, .list: return nil
        case let .aggregate(function, _, attribute):
            switch function {
            case .count: return .attribute(.integer64)
            case .avg: return .attribute(.double)
            case .sum:
                if case .attribute(let t)? = attribute?.valueType(model) { return .attribute(t.isInteger ? .integer64 : .double) }
                return .attribute(.double)
            case .min, .max: return attribute?.valueType(model)
            }
        case .subqueryCount: return .attribute(.integer64)
        }
    }

    private func isCollection(_ operand: CheckedOperand) -> Bool {
        if case .keyPath(let k) = operand { return k.isCollection }
        return false
    }

    private func text(_ operand: CheckedOperand) -> String {
        switch operand {
        case .keyPath(let k): return k.text
        case let .aggregate(f, c, a): return "\(c.text).@\(f.rawValue)" + (a.map { ".\($0.text)" } ?? "")
        case .subqueryCount(let c, let v, _): return "SUBQUERY(\(c.text), $\(v), ...).@count"
        case .value, .list: return "a constant"
        }
    }

    // MARK: Comparisons

    private func check(_ comparison: ComparisonPredicate) throws(FetchError) -> CheckedPredicate {
        var lhs = try operand(comparison.lhs)
        var rhs = try operand(comparison.rhs)
        var op = comparison.op
        var modifier = comparison.modifier

        // `x IN tags.label` asks whether some label equals x: ANY tags.label == x.
        if op == .in, isCollection(rhs) {
            guard !isCollection(lhs), modifier == .direct else {
                throw .invalidPredicate("IN with to-many key paths on both sides ('\(text(lhs))', '\(text(rhs))'): use SUBQUERY")
            }
            (lhs, rhs, op, modifier) = (rhs, lhs, .equal, .any)
        }
        if isCollection(rhs) {
            guard !isCollection(lhs) else {
                throw .invalidPredicate("both sides are to-many key paths ('\(text(lhs))', '\(text(rhs))'): use SUBQUERY")
            }
            guard op == .equal || op == .notEqual || op.isOrdering else {
                throw .invalidPredicate("put the to-many key path '\(text(rhs))' on the left of \(op.rawValue)")
            }
            (lhs, rhs, op) = (rhs, lhs, op.mirrored)
        }
        let quantifier: Quantifier
        if isCollection(lhs) {
            switch modifier {
            case .direct, .any: quantifier = .any
            case .all: quantifier = .all
            case .none: quantifier = .none
            }
        } else {
            guard modifier == .direct else {
                throw .invalidPredicate("\(modifier.rawValue) needs a to-many key path, and '\(text(lhs))' is not one")
            }
            quantifier = .scalar
        }

        // Constant against constant: decided now.
        if case .value(let a) = lhs, case .value(let b) = rhs {
            return .constant(PredicateSemantics.compare(a, op, b, options: comparison.options))
        }
        // A constant on the left of a plain comparison: mirror it, so constants sit on the right.
        if case .value = lhs, !(op.isStringOperator || op == .in || op == .between) {
            (lhs, rhs, op) = (rhs, lhs, op.mirrored)
        }
        let converted = try convertOperands(lhs, op, rhs)
        return .comparison(CheckedComparison(quantifier: quantifier, lhs: converted.0, op: op, rhs: converted.1, options: comparison.options))
    }

    /// Type-checks the two sides and converts constants to the type of the side they meet.
    private func convertOperands(_ lhs: CheckedOperand, _ op: ComparisonOperator, _ rhs: CheckedOperand) throws(FetchError) -> (CheckedOperand, CheckedOperand) {
        let left = type(of: lhs), right = type(of: rhs)
        let name = text(lhs)
        if op.isStringOperator {
            for side in [lhs, rhs] {
                if case .list = side { throw .invalidPredicate("\(op.rawValue) compares single strings, not a {list} (use IN for a list)") }
            }
            for (side, t) in [(lhs, left), (rhs, right)] {
                if let t, t != .attribute(.string) {
                    throw .incompatibleTypes(keyPath: text(side), detail: "\(op.rawValue) works on strings")
                }
            }
            var sides = [lhs, rhs]
            for i in 0..<2 {
                if case .value(let v) = sides[i] {
                    guard case .attribute(let a) = v, a.isNull || { if case .string = a { return true } else { return false } }() else {
                        throw .incompatibleTypes(keyPath: name, detail: "\(op.rawValue) needs a string")
                    }
                    sides[i] = .value(v)
                }
            }
            if op == .matches, case .value(.attribute(.string(let pattern))) = rhs, let error = StringOperations.regexError(pattern) {
                throw .invalidPredicate("MATCHES: '\(pattern)' is not a supported regular expression: \(error)")
            }
            return (sides[0], sides[1])
        }
        switch (lhs, rhs) {
        case (.value(let v), _):
            // Only IN and BETWEEN keep a constant on the left (`5 IN {…}`): compare it with the list.
            guard case .list(let items) = rhs else { throw .invalidPredicate("\(op.rawValue) needs a list on the right") }
            _ = v
            return (lhs, .list(items))
        default:
            break
        }
        guard let leftType = left else { throw .invalidPredicate("cannot compare \(name)") }
        switch op {
        case .in:
            guard case .list(let items) = rhs else {
                throw .invalidPredicate("IN needs a {list} or a to-many key path on the right of '\(name)'")
            }
            return (lhs, .list(try items.map { item throws(FetchError) in try convert(item, to: leftType, keyPath: name, op: .equal) }))
        case .between:
            guard case .list(let bounds) = rhs, bounds.count == 2 else {
                throw .invalidPredicate("BETWEEN needs {low, high} on the right of '\(name)'")
            }
            guard case .attribute(let t) = leftType, t.isOrdered || t == .string else {
                throw .incompatibleTypes(keyPath: name, detail: "BETWEEN needs an ordered value")
            }
            return (lhs, .list(try bounds.map { item throws(FetchError) in try convert(item, to: leftType, keyPath: name, op: .lessThan) }))
        default:
            break
        }
        switch rhs {
        case .value(let v):
            return (lhs, .value(try convert(v, to: leftType, keyPath: name, op: op)))
        case .list:
            throw .invalidPredicate("a {list} goes with IN or BETWEEN, not \(op.rawValue)")
        default:
            guard let rightType = right else { throw .invalidPredicate("cannot compare \(name)") }
            try checkComparable(leftType, rightType, op, name, text(rhs))
            return (lhs, rhs)
        }
    }

    private func checkComparable(_ a: OperandType, _ b: OperandType, _ op: ComparisonOperator, _ left: String, _ right: String) throws(FetchError) {
        switch (a, b) {
        case let (.object(x), .object(y)):
            guard x == y, !op.isOrdering else {
                throw .incompatibleTypes(keyPath: left, detail: "objects compare only for equality, with the same entity (\(right))")
            }
        case let (.attribute(x), .attribute(y)):
            let numeric: Set<AttributeType> = [.integer16, .integer32, .integer64, .double, .float]
            guard x == y || (numeric.contains(x) && numeric.contains(y)) else {
                throw .incompatibleTypes(keyPath: left, detail: "\(x.rawValue) compared with \(right) (\(y.rawValue))")
            }
        default:
            throw .incompatibleTypes(keyPath: left, detail: "a relationship compared with an attribute (\(right))")
        }
    }

    /// "a Task", or for a parent entity "a Note or Link" (its concrete kinds).
    private static func objectOf(_ destination: Entity, _ model: ManagedObjectModel) -> String {
        guard !destination.isSingleKind else { return "a \(destination.name)" }
        return "a " + destination.kinds.map { model.schema[$0].name }.joined(separator: " or ")
    }

    /// Whether `id` names an object a relationship to `destination` can hold: one of that
    /// entity or of an entity below it.
    private func isKind(_ id: ManagedObjectID, of destination: Entity) -> Bool {
        guard let index = model.entityIndexByName[id.entityName] else { return false }
        return model.isKind(index, of: destination.index)
    }

    /// Converts a constant to the representation of the attribute or relationship it meets.
    private func convert(_ value: PredicateValue, to type: OperandType, keyPath: String, op: ComparisonOperator) throws(FetchError) -> PredicateValue {
        func incompatible(_ what: String) -> FetchError { .incompatibleTypes(keyPath: keyPath, detail: what) }
        switch type {
        case .object(let entityIndex):
            let destination = model.schema[entityIndex]
            guard !op.isOrdering else { throw incompatible("relationships compare only with ==, != and IN") }
            switch value {
            case .attribute(.null): return value
            case .object(let id):
                guard isKind(id, of: destination), id.storeIdentifier == storeIdentifier else {
                    throw incompatible("\(id) is not \(Self.objectOf(destination, model)) of this store")
                }
                return value
            case .attribute(.string(let text)):
                // The API's form of an object ID: "Project/7".
                guard let id = ManagedObjectID(description: text, storeIdentifier: storeIdentifier), isKind(id, of: destination) else {
                    let example = model.schema[destination.kinds.first ?? destination.index].name
                    throw incompatible("\"\(text)\" is not the ID of \(Self.objectOf(destination, model)), such as \"\(example)/7\"")
                }
                return .object(id)
            case .attribute(let v):
                throw incompatible("a relationship to \(destination.name) compared with a \(v.kindName)")
            }
        case .attribute(let attributeType):
            guard case .attribute(let v) = value else { throw incompatible("a \(attributeType.rawValue) compared with an object ID") }
            return .attribute(try convert(v, to: attributeType, incompatible))
        }
    }

    private func convert(_ v: AttributeValue, to type: AttributeType, _ incompatible: (String) -> FetchError) throws(FetchError) -> AttributeValue {
        if v.isNull { return v }
        let mismatch = incompatible("a \(type.rawValue) compared with a \(v.kindName)")
        switch type {
        case .integer16, .integer32, .integer64, .double, .float:
            switch v {
            case .integer, .double, .float: return v
            case .decimal(let d): return .double(NSDecimalNumber(decimal: d).doubleValue)
            case .boolean(let b): return .integer(b ? 1 : 0)
            default: throw mismatch
            }
        case .decimal:
            switch v {
            case .decimal: return v
            case .integer(let i): return .decimal(Decimal(i))
            case .double(let d): return .decimal(Decimal(d))
            case .float(let f): return .decimal(Decimal(Double(f)))
            case .string(let s):
                guard let d = Decimal.exactly(s) else { throw mismatch }
                return .decimal(d)
            default: throw mismatch
            }
        case .boolean:
            switch v {
            case .boolean: return v
            case .integer(let i) where i == 0 || i == 1: return .boolean(i == 1)
            default: throw mismatch
            }
        case .date:
            switch v {
            case .date: return v
            case .string(let s):
                guard let d = RFC3339.date(from: s) else { throw incompatible("\"\(s)\" is not an RFC 3339 date") }
                return .date(d)
            default: throw mismatch
            }
        case .uuid:
            switch v {
            case .uuid: return v
            case .string(let s):
                guard let u = UUID(uuidString: s) else { throw incompatible("\"\(s)\" is not a UUID") }
                return .uuid(u)
            default: throw mismatch
            }
        case .uri:
            switch v {
            case .uri: return v
            case .string(let s):
                guard let u = URL(string: s) else { throw incompatible("\"\(s)\" is not a URI") }
                return .uri(u)
            default: throw mismatch
            }
        case .string:
            guard case .string = v else { throw mismatch }
            return v
        case .binary:
            guard case .binary = v else { throw mismatch }
            return v
        }
    }
}

extension ComparisonOperator {
    /// The operator with its operands swapped: `5 < x` is `x > 5`.
    var mirrored: ComparisonOperator {
        switch self {
        case .lessThan: return .greaterThan
        case .lessThanOrEqual: return .greaterThanOrEqual
        case .greaterThan: return .lessThan
        case .greaterThanOrEqual: return .lessThanOrEqual
        default: return self
        }
    }
}
