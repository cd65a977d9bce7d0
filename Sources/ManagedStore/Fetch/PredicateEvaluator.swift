import Foundation

/// Evaluates a checked predicate on objects in memory, with the SQL compiler's semantics:
/// unsaved objects and pending changes answer exactly as the store would after a save.
struct PredicateEvaluator {
    let context: ManagedObjectContext

    func evaluate(_ predicate: CheckedPredicate, on object: ManagedObject) -> Bool {
        switch predicate {
        case .constant(let b): return b
        case .and(let ps): return ps.allSatisfy { evaluate($0, on: object) }
        case .or(let ps): return ps.contains { evaluate($0, on: object) }
        case .not(let p): return !evaluate(p, on: object)
        case let .comparison(l, op, r):
            return Self.compareValues(value(l, of: object), op, value(r, of: object))
        }
    }

    func value(_ operand: CheckedOperand, of object: ManagedObject) -> PredicateValue {
        switch operand {
        case .value(let v): return v
        case .keyPath(let keyPath): return value(keyPath, of: object)
        }
    }

    /// Follows the key path through to-one relationships; nil (null) as soon as a step is nil.
    func value(_ keyPath: ResolvedKeyPath, of object: ManagedObject) -> PredicateValue {
        var current = object
        for step in keyPath.steps {
            guard let next = context.toOneValue(of: current, step.relationship) else { return .null }
            current = context.object(with: next)
            current.fireFaultIfNeeded()
            if current.isInaccessible { return .null }
        }
        current.fireFaultIfNeeded()
        switch keyPath.terminal {
        case .attribute(_, let a): return .attribute(current.attributes[a])
        case .relationship(_, let r): return context.toOneValue(of: current, r).map(PredicateValue.object) ?? .null
        }
    }

    /// One comparison, NSPredicate style: null equals only null; ordering with a null is false.
    static func compareValues(_ l: PredicateValue, _ op: ComparisonOperator, _ r: PredicateValue) -> Bool {
        switch (l, r) {
        case let (.object(a), .object(b)):
            switch op {
            case .equal: return a == b
            case .notEqual: return a != b
            default: return false
            }
        case (.object, .attribute(let v)), (.attribute(let v), .object):
            // An object ID against a value: equal only if... never; unequal unless both null.
            switch op {
            case .equal: return false
            case .notEqual: return true
            default: _ = v; return false
            }
        case let (.attribute(a), .attribute(b)):
            if a.isNull || b.isNull {
                switch op {
                case .equal: return a.isNull && b.isNull
                case .notEqual: return a.isNull != b.isNull
                default: return false
                }
            }
            guard let order = AttributeValue.compare(a, b) else { return op == .notEqual }
            switch op {
            case .equal: return order == .orderedSame
            case .notEqual: return order != .orderedSame
            case .lessThan: return order == .orderedAscending
            case .lessThanOrEqual: return order != .orderedDescending
            case .greaterThan: return order == .orderedDescending
            case .greaterThanOrEqual: return order != .orderedAscending
            }
        }
    }

    /// The order of two objects under `sorts`, then primary key ascending (temporary IDs last):
    /// the same total order the SQL query produces.
    func precedes(_ a: ManagedObject, _ b: ManagedObject, sorts: [(ResolvedKeyPath, Bool)]) -> Bool {
        for (keyPath, ascending) in sorts {
            let x = value(keyPath, of: a), y = value(keyPath, of: b)
            let order = Self.sortOrder(x, y)
            if order != .orderedSame { return ascending ? order == .orderedAscending : order == .orderedDescending }
        }
        return [a.objectID, b.objectID].sortedByKey().first == a.objectID && a.objectID != b.objectID
    }

    /// Nulls first, then values in store order.
    static func sortOrder(_ x: PredicateValue, _ y: PredicateValue) -> ComparisonResult {
        switch (x, y) {
        case let (.attribute(a), .attribute(b)):
            if a.isNull && b.isNull { return .orderedSame }
            if a.isNull { return .orderedAscending }
            if b.isNull { return .orderedDescending }
            return AttributeValue.compare(a, b) ?? .orderedSame
        case (.attribute(let a), .object): return a.isNull ? .orderedAscending : .orderedSame
        case (.object, .attribute(let b)): return b.isNull ? .orderedDescending : .orderedSame
        case let (.object(a), .object(b)):
            let sorted = [a, b].sortedByKey()
            return a == b ? .orderedSame : (sorted[0] == a ? .orderedAscending : .orderedDescending)
        }
    }
}
