import Foundation

/// Evaluates a checked predicate on objects in memory, with the SQL builder's semantics:
/// unsaved objects and pending changes answer exactly as the store would after a save.
struct PredicateEvaluator {
    let context: ManagedObjectContext
    /// SUBQUERY variables bound to the object they stand for.
    private var variables: [String: ManagedObject] = [:]

    init(context: ManagedObjectContext) { self.context = context }

    func evaluate(_ predicate: CheckedPredicate, on object: ManagedObject) -> Bool {
        switch predicate {
        case .constant(let b): return b
        case .and(let ps): return ps.allSatisfy { evaluate($0, on: object) }
        case .or(let ps): return ps.contains { evaluate($0, on: object) }
        case .not(let p): return !evaluate(p, on: object)
        case .comparison(let c): return evaluate(c, on: object)
        }
    }

    private func evaluate(_ c: CheckedComparison, on object: ManagedObject) -> Bool {
        let right = rightSide(c.rhs, on: object)
        switch c.quantifier {
        case .scalar:
            return Self.compare(scalar(c.lhs, on: object), c.op, right, options: c.options)
        case .any, .all, .none:
            guard case .keyPath(let keyPath) = c.lhs else { return false }
            let elements = collection(keyPath, from: object)
            switch c.quantifier {
            case .any: return elements.contains { Self.compare($0, c.op, right, options: c.options) }
            case .all: return elements.allSatisfy { Self.compare($0, c.op, right, options: c.options) }
            default: return !elements.contains { Self.compare($0, c.op, right, options: c.options) }
            }
        }
    }

    /// The right side: a value, or a list for IN and BETWEEN.
    private func rightSide(_ operand: CheckedOperand, on object: ManagedObject) -> Operand {
        if case .list(let items) = operand { return .list(items) }
        return .value(scalar(operand, on: object))
    }

    enum Operand {
        case value(PredicateValue)
        case list([PredicateValue])
    }

    // MARK: Values

    func scalar(_ operand: CheckedOperand, on object: ManagedObject) -> PredicateValue {
        switch operand {
        case .value(let v): return v
        case .list: return .null
        case .keyPath(let keyPath): return collection(keyPath, from: object).first ?? .null
        case let .aggregate(function, collectionPath, attribute):
            let members = objects(collectionPath, from: object).compactMap { $0 }
            if function == .count { return .attribute(.integer(Int64(members.count))) }
            let values = members.compactMap { member -> AttributeValue? in
                guard let attribute, case .attribute(let v) = value(attribute, from: member), !v.isNull else { return nil }
                return v
            }
            return .attribute(Self.aggregate(function, values))
        case let .subqueryCount(collectionPath, variable, predicate):
            var inner = self
            var count: Int64 = 0
            for member in objects(collectionPath, from: object).compactMap({ $0 }) {
                inner.variables[variable] = member
                if inner.evaluate(predicate, on: object) { count += 1 }
            }
            return .attribute(.integer(count))
        }
    }

    /// SQL's aggregates as a predicate runs them: a sum of integers stays an integer while it
    /// fits Int64, and is the nearest double beyond (`ms_sum_in_predicate`); empty sum and avg
    /// are 0, empty min and max null.
    static func aggregate(_ function: AggregateFunction, _ values: [AttributeValue]) -> AttributeValue {
        switch function {
        case .count: return .integer(Int64(values.count))
        case .sum:
            if values.allSatisfy({ if case .integer = $0 { return true } else { return false } }) {
                // 128 bits hold the sum of any 2^64 Int64s.
                let total = values.reduce(Int128(0)) { sum, v in if case .integer(let i) = v { return sum + Int128(i) } else { return sum } }
                return Int64(exactly: total).map { .integer($0) } ?? .double(Double(total))
            }
            return .double(values.reduce(0.0) { $0 + (Double(attributeValue: $1) ?? Double(Int64(attributeValue: $1) ?? 0)) })
        case .avg:
            guard !values.isEmpty else { return .double(0) }
            let total = values.reduce(0.0) { $0 + (Double(attributeValue: $1) ?? Double(Int64(attributeValue: $1) ?? 0)) }
            return .double(total / Double(values.count))
        case .min:
            return values.min { AttributeValue.compare($0, $1) == .orderedAscending } ?? .null
        case .max:
            return values.max { AttributeValue.compare($0, $1) == .orderedAscending } ?? .null
        }
    }

    /// Every value a key path reaches: one for a scalar path (null when a to-one on the way is
    /// nil), any number for a path through to-many relationships.
    func collection(_ keyPath: ResolvedKeyPath, from object: ManagedObject) -> [PredicateValue] {
        objects(keyPath, from: object, stoppingBeforeTerminal: true).map { owner in
            guard let owner else { return .null }
            return terminalValue(keyPath.terminal, of: owner)
        }
    }

    /// The value of a scalar key path.
    func value(_ keyPath: ResolvedKeyPath, from object: ManagedObject) -> PredicateValue {
        collection(keyPath, from: object).first ?? .null
    }

    /// The objects a path's steps reach (nil where a to-one on the way is nil). With
    /// `stoppingBeforeTerminal` false, the path must end at objects (a to-many step).
    func objects(_ keyPath: ResolvedKeyPath, from object: ManagedObject, stoppingBeforeTerminal: Bool = false) -> [ManagedObject?] {
        var current: [ManagedObject?]
        switch keyPath.root {
        case .object: current = [object]
        case .variable(let name): current = [variables[name]]
        }
        for step in keyPath.steps {
            var next: [ManagedObject?] = []
            for owner in current {
                guard let owner, !owner.isInaccessible else {
                    if !step.isToMany { next.append(nil) }  // a nil to-one stays a null value; a to-many of nil is empty
                    continue
                }
                if step.isToMany {
                    for id in context.toManyValue(of: owner, step.relationship).sortedByKey() {
                        let member = context.object(with: id)
                        member.fireFaultIfNeeded()
                        if !member.isDeleted { next.append(member) }
                    }
                } else if let id = context.toOneValue(of: owner, step.relationship) {
                    let target = context.object(with: id)
                    target.fireFaultIfNeeded()
                    next.append(target.isInaccessible ? nil : target)
                } else {
                    next.append(nil)
                }
            }
            current = next
        }
        return current
    }

    private func terminalValue(_ terminal: ResolvedKeyPath.Terminal, of owner: ManagedObject) -> PredicateValue {
        owner.fireFaultIfNeeded()
        switch terminal {
        case .attribute(_, let a): return .attribute(owner.attributes[a])
        case .toOne(_, let r): return context.toOneValue(of: owner, r).map(PredicateValue.object) ?? .null
        case .object: return .object(owner.objectID)
        case .groupColumn:
            preconditionFailure("a result of an aggregate's groups is read in SQL only, never from an object")
        }
    }

    // MARK: Comparing

    static func compare(_ l: PredicateValue, _ op: ComparisonOperator, _ r: PredicateValue, options: ComparisonOptions) -> Bool {
        compare(l, op, .value(r), options: options)
    }

    /// One comparison, NSPredicate style: null equals only null; ordering and string operators
    /// with a null are false; `[c]`/`[d]` fold both strings first.
    static func compare(_ l: PredicateValue, _ op: ComparisonOperator, _ r: Operand, options: ComparisonOptions) -> Bool {
        switch r {
        case .list(let items):
            let l = folded(l, options), items = items.map { folded($0, options) }
            switch op {
            case .in: return items.contains { equal(l, $0) }
            case .between:
                guard items.count == 2 else { return false }
                return ordered(l, .greaterThanOrEqual, items[0]) && ordered(l, .lessThanOrEqual, items[1])
            default: return false
            }
        case .value(let r):
            switch op {
            case .equal: return equal(folded(l, options), folded(r, options))
            case .notEqual: return !equal(folded(l, options), folded(r, options))
            case .lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual: return ordered(folded(l, options), op, folded(r, options))
            case .beginsWith, .endsWith, .contains, .like, .matches:
                // These fold for themselves (MATCHES folds only the value), exactly as ms_strop does in SQL.
                guard case .attribute(.string(let value)) = l, case .attribute(.string(let pattern)) = r, let code = op.stringCode else { return false }
                return StringOperations.evaluate(code, value, pattern, options)
            case .in, .between: return false
            }
        }
    }

    private static func folded(_ v: PredicateValue, _ options: ComparisonOptions) -> PredicateValue {
        guard !options.isEmpty, case .attribute(.string(let s)) = v else { return v }
        return .attribute(.string(StringOperations.fold(s, options)))
    }

    static func equal(_ l: PredicateValue, _ r: PredicateValue) -> Bool {
        switch (l, r) {
        case let (.object(a), .object(b)): return a == b
        case let (.attribute(a), .attribute(b)):
            if a.isNull || b.isNull { return a.isNull && b.isNull }
            return AttributeValue.compare(a, b) == .orderedSame
        default: return false  // an object ID is never a plain value (nor null: that is .attribute(.null))
        }
    }

    private static func ordered(_ l: PredicateValue, _ op: ComparisonOperator, _ r: PredicateValue) -> Bool {
        guard case .attribute(let a) = l, case .attribute(let b) = r, !a.isNull, !b.isNull,
              let order = AttributeValue.compare(a, b) else { return false }
        switch op {
        case .lessThan: return order == .orderedAscending
        case .lessThanOrEqual: return order != .orderedDescending
        case .greaterThan: return order == .orderedDescending
        case .greaterThanOrEqual: return order != .orderedAscending
        default: return false
        }
    }

    // MARK: Sorting

    /// The order of two objects under `sorts`, then primary key ascending (temporary IDs last):
    /// the same total order the SQL query produces.
    func precedes(_ a: ManagedObject, _ b: ManagedObject, sorts: [ResolvedSort]) -> Bool {
        for sort in sorts {
            let order = Self.sortOrder(sortValue(sort, of: a), sortValue(sort, of: b))
            if order != .orderedSame { return sort.ascending ? order == .orderedAscending : order == .orderedDescending }
        }
        return a.objectID != b.objectID && [a.objectID, b.objectID].sortedByKey().first == a.objectID
    }

    /// Whether `object` comes after the cursor's position in the order (keyset pagination).
    func isAfter(_ object: ManagedObject, _ cursor: FetchCursor, sorts: [ResolvedSort]) -> Bool {
        for (sort, value) in zip(sorts, cursor.values) {
            let order = Self.sortOrder(sortValue(sort, of: object), Self.folded(.attribute(value), sort.options))
            if order != .orderedSame { return sort.ascending ? order == .orderedDescending : order == .orderedAscending }
        }
        // Unsaved objects (temporary IDs) sort after every saved one.
        guard let pk = object.objectID.primaryKey else { return true }
        return pk > cursor.primaryKey
    }

    func sortValue(_ sort: ResolvedSort, of object: ManagedObject) -> PredicateValue {
        Self.folded(value(sort.keyPath, from: object), sort.options)
    }

    /// Nulls first, then values in store order.
    static func sortOrder(_ x: PredicateValue, _ y: PredicateValue) -> ComparisonResult {
        guard case .attribute(let a) = x, case .attribute(let b) = y else { return .orderedSame }
        if a.isNull && b.isNull { return .orderedSame }
        if a.isNull { return .orderedAscending }
        if b.isNull { return .orderedDescending }
        return AttributeValue.compare(a, b) ?? .orderedSame
    }
}

/// A sort key resolved against the model.
package struct ResolvedSort: Sendable {
    package let keyPath: ResolvedKeyPath
    package let ascending: Bool
    package let options: ComparisonOptions
}

extension ComparisonOperator {
    package var stringCode: StringOperations.Code? {
        switch self {
        case .beginsWith: return .beginsWith
        case .endsWith: return .endsWith
        case .contains: return .contains
        case .like: return .like
        case .matches: return .matches
        default: return nil
        }
    }
}
