import Foundation

/// A predicate checked against the model: key paths resolved, constants converted to the
/// representation of what they are compared with. Both the SQL compiler and the in-memory
/// evaluator work from this one form, which is what keeps their answers equal.
indirect enum CheckedPredicate: Sendable {
    case constant(Bool)
    case comparison(CheckedOperand, ComparisonOperator, CheckedOperand)
    case and([CheckedPredicate])
    case or([CheckedPredicate])
    case not(CheckedPredicate)

    /// Entities whose values the predicate reads.
    var entitiesRead: Set<Int> {
        switch self {
        case .constant: return []
        case let .comparison(l, _, r): return l.entitiesRead.union(r.entitiesRead)
        case .and(let ps), .or(let ps): return ps.reduce(into: Set<Int>()) { $0.formUnion($1.entitiesRead) }
        case .not(let p): return p.entitiesRead
        }
    }

    var followsRelationships: Bool {
        switch self {
        case .constant: return false
        case let .comparison(l, _, r): return l.followsRelationships || r.followsRelationships
        case .and(let ps), .or(let ps): return ps.contains(where: \.followsRelationships)
        case .not(let p): return p.followsRelationships
        }
    }
}

enum CheckedOperand: Sendable {
    case keyPath(ResolvedKeyPath)
    /// A constant: an attribute value (possibly null) or, for a relationship, an object ID.
    case value(PredicateValue)

    var entitiesRead: Set<Int> { if case .keyPath(let k) = self { return k.entitiesRead } else { return [] } }
    var followsRelationships: Bool {
        guard case .keyPath(let k) = self else { return false }
        if case .relationship = k.terminal { return true }
        return !k.steps.isEmpty
    }
}

/// Checks a predicate against a model and converts its constants.
struct PredicateChecker {
    let model: ManagedObjectModel
    let root: Entity
    let storeIdentifier: UUID

    func check(_ predicate: ObjectPredicate) throws(FetchError) -> CheckedPredicate {
        switch predicate {
        case .constant(let b): return .constant(b)
        case .and(let ps): return .and(try ps.map { p throws(FetchError) in try check(p) })
        case .or(let ps): return .or(try ps.map { p throws(FetchError) in try check(p) })
        case .not(let p): return .not(try check(p))
        case let .comparison(lhs, op, rhs):
            switch (lhs, rhs) {
            case let (.keyPath(l), .keyPath(r)):
                let left = try ResolvedKeyPath(l, root: root, model: model)
                let right = try ResolvedKeyPath(r, root: root, model: model)
                try checkComparable(left, right, op)
                return .comparison(.keyPath(left), op, .keyPath(right))
            case let (.keyPath(path), .constant(value)):
                let keyPath = try ResolvedKeyPath(path, root: root, model: model)
                return .comparison(.keyPath(keyPath), op, .value(try convert(value, for: keyPath, op)))
            case let (.constant(value), .keyPath(path)):
                let keyPath = try ResolvedKeyPath(path, root: root, model: model)
                return .comparison(.keyPath(keyPath), op.mirrored, .value(try convert(value, for: keyPath, op.mirrored)))
            case let (.constant(l), .constant(r)):
                return .constant(PredicateEvaluator.compareValues(l, op, r))
            }
        }
    }

    private func attributeType(_ keyPath: ResolvedKeyPath) -> AttributeType? {
        if case let .attribute(e, a) = keyPath.terminal { return model.schema[e].attributes[a].type }
        return nil
    }

    private func destination(_ keyPath: ResolvedKeyPath) -> Entity? {
        if case let .relationship(e, r) = keyPath.terminal { return model.schema[model.schema[e].relationships[r].destinationIndex] }
        return nil
    }

    private func checkComparable(_ l: ResolvedKeyPath, _ r: ResolvedKeyPath, _ op: ComparisonOperator) throws(FetchError) {
        if let a = destination(l), let b = destination(r) {
            guard a.index == b.index, !op.isOrdering else {
                throw .incompatibleTypes(keyPath: l.text, detail: "relationships compare only for equality, with the same destination")
            }
            return
        }
        guard let a = attributeType(l), let b = attributeType(r) else {
            throw .incompatibleTypes(keyPath: l.text, detail: "a relationship compared with an attribute (\(r.text))")
        }
        let numeric: Set<AttributeType> = [.integer16, .integer32, .integer64, .double, .float]
        guard a == b || (numeric.contains(a) && numeric.contains(b)) else {
            throw .incompatibleTypes(keyPath: l.text, detail: "\(a.rawValue) compared with \(r.text) (\(b.rawValue))")
        }
    }

    /// Converts a constant to the representation of the attribute or relationship it meets.
    private func convert(_ value: PredicateValue, for keyPath: ResolvedKeyPath, _ op: ComparisonOperator) throws(FetchError) -> PredicateValue {
        func incompatible(_ what: String) -> FetchError {
            .incompatibleTypes(keyPath: keyPath.text, detail: what)
        }
        if let destination = destination(keyPath) {
            switch value {
            case .attribute(.null): return value
            case .object(let id):
                guard id.entityName == destination.name, id.storeIdentifier == storeIdentifier else {
                    throw incompatible("\(id) is not a \(destination.name)")
                }
                guard !op.isOrdering else { throw incompatible("relationships compare only with == and !=") }
                return value
            case .attribute(let v):
                throw incompatible("a relationship to \(destination.name) compared with a \(v.kindName)")
            }
        }
        guard let type = attributeType(keyPath) else { throw incompatible("not comparable") }
        guard case .attribute(let v) = value else { throw incompatible("a \(type.rawValue) attribute compared with an object ID") }
        if v.isNull { return value }
        let mismatch = incompatible("a \(type.rawValue) attribute compared with a \(v.kindName)")
        switch type {
        case .integer16, .integer32, .integer64, .double, .float:
            switch v {
            case .integer, .double, .float: return value
            case .decimal(let d): return .attribute(.double(NSDecimalNumber(decimal: d).doubleValue))
            default: throw mismatch
            }
        case .decimal:
            switch v {
            case .decimal: return value
            case .integer(let i): return .attribute(.decimal(Decimal(i)))
            case .double(let d): return .attribute(.decimal(Decimal(d)))
            case .float(let f): return .attribute(.decimal(Decimal(Double(f))))
            default: throw mismatch
            }
        case .boolean:
            switch v {
            case .boolean: return value
            case .integer(let i) where i == 0 || i == 1: return .attribute(.boolean(i == 1))
            default: throw mismatch
            }
        case .date:
            switch v {
            case .date: return value
            case .string(let s):
                guard let d = RFC3339.date(from: s) else { throw incompatible("\"\(s)\" is not an RFC 3339 date") }
                return .attribute(.date(d))
            default: throw mismatch
            }
        case .uuid:
            switch v {
            case .uuid: return value
            case .string(let s):
                guard let u = UUID(uuidString: s) else { throw incompatible("\"\(s)\" is not a UUID") }
                return .attribute(.uuid(u))
            default: throw mismatch
            }
        case .uri:
            switch v {
            case .uri: return value
            case .string(let s):
                guard let u = URL(string: s) else { throw incompatible("\"\(s)\" is not a URI") }
                return .attribute(.uri(u))
            default: throw mismatch
            }
        case .string:
            guard case .string = v else { throw mismatch }
            return value
        case .binary:
            guard case .binary = v else { throw mismatch }
            return value
        }
    }
}

extension ComparisonOperator {
    /// The operator with its operands swapped: `5 < x` is `x > 5`.
    var mirrored: ComparisonOperator {
        switch self {
        case .equal, .notEqual: return self
        case .lessThan: return .greaterThan
        case .lessThanOrEqual: return .greaterThanOrEqual
        case .greaterThan: return .lessThan
        case .greaterThanOrEqual: return .lessThanOrEqual
        }
    }
}
