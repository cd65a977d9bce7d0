import Foundation

/// The objects a predicate is evaluated on, and how to walk from one to another: a context's
/// objects (`ContextGraph`: unsaved changes included), or a store's stored rows (a store that
/// answers fetches in memory).
package protocol PredicateGraph {
    associatedtype Node
    func objectID(of node: Node) -> ManagedObjectID
    /// False for an object whose stored row is gone.
    func isAccessible(_ node: Node) -> Bool
    func attribute(_ index: Int, of node: Node) -> AttributeValue
    /// The ID of to-one `relationship`'s destination; nil when there is none.
    func toOneID(_ relationship: Int, of node: Node) -> ManagedObjectID?
    /// To-one `relationship`'s destination; nil when there is none, or it is gone.
    func toOne(_ relationship: Int, of node: Node) -> Node?
    /// To-many `relationship`'s destinations in primary-key order, deleted ones left out.
    func toMany(_ relationship: Int, of node: Node) -> [Node]
    /// The result at `index` of an aggregate's group, for a graph whose nodes are groups (a
    /// having predicate); other graphs never hold one.
    func groupColumnValue(_ index: Int, of node: Node) -> PredicateValue
}

extension PredicateGraph {
    package func groupColumnValue(_ index: Int, of node: Node) -> PredicateValue {
        preconditionFailure("a result of an aggregate's groups is read over its groups, never from an object")
    }
}

/// Evaluates a checked predicate on objects in memory, with the semantics the SQLite store
/// gives it in SQL: unsaved objects and pending changes answer exactly as the store would after
/// a save, and a store that evaluates in memory answers as the SQLite store does.
package struct PredicateEvaluator<Graph: PredicateGraph> {
    package typealias Object = Graph.Node
    let graph: Graph
    /// SUBQUERY variables bound to the object they stand for.
    private var variables: [String: Object] = [:]

    package init(graph: Graph) { self.graph = graph }

    package func evaluate(_ predicate: CheckedPredicate, on object: Object) -> Bool {
        switch predicate {
        case .constant(let b): return b
        case .and(let ps): return ps.allSatisfy { evaluate($0, on: object) }
        case .or(let ps): return ps.contains { evaluate($0, on: object) }
        case .not(let p): return !evaluate(p, on: object)
        case .comparison(let c): return evaluate(c, on: object)
        }
    }

    private func evaluate(_ c: CheckedComparison, on object: Object) -> Bool {
        let right = rightSide(c.rhs, on: object)
        switch c.quantifier {
        case .scalar:
            return PredicateSemantics.compare(scalar(c.lhs, on: object), c.op, right, options: c.options)
        case .any, .all, .none:
            guard case .keyPath(let keyPath) = c.lhs else { return false }
            let elements = collection(keyPath, from: object)
            switch c.quantifier {
            case .any: return elements.contains { PredicateSemantics.compare($0, c.op, right, options: c.options) }
            case .all: return elements.allSatisfy { PredicateSemantics.compare($0, c.op, right, options: c.options) }
            default: return !elements.contains { PredicateSemantics.compare($0, c.op, right, options: c.options) }
            }
        }
    }

    /// The right side: a value, or a list for IN and BETWEEN.
    private func rightSide(_ operand: CheckedOperand, on object: Object) -> PredicateSemantics.Operand {
        if case .list(let items) = operand { return .list(items) }
        return .value(scalar(operand, on: object))
    }

    // MARK: Values

    func scalar(_ operand: CheckedOperand, on object: Object) -> PredicateValue {
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
            return .attribute(PredicateSemantics.aggregate(function, values))
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

    /// Every value a key path reaches: one for a scalar path (null when a to-one on the way is
    /// nil), any number for a path through to-many relationships.
    func collection(_ keyPath: ResolvedKeyPath, from object: Object) -> [PredicateValue] {
        objects(keyPath, from: object, stoppingBeforeTerminal: true).map { owner in
            guard let owner else { return .null }
            return terminalValue(keyPath.terminal, of: owner)
        }
    }

    /// The value of a scalar key path.
    package func value(_ keyPath: ResolvedKeyPath, from object: Object) -> PredicateValue {
        collection(keyPath, from: object).first ?? .null
    }

    /// The objects a path's steps reach (nil where a to-one on the way is nil). With
    /// `stoppingBeforeTerminal` false, the path must end at objects (a to-many step).
    func objects(_ keyPath: ResolvedKeyPath, from object: Object, stoppingBeforeTerminal: Bool = false) -> [Object?] {
        var current: [Object?]
        switch keyPath.root {
        case .object: current = [object]
        case .variable(let name): current = [variables[name]]
        }
        for step in keyPath.steps {
            var next: [Object?] = []
            for owner in current {
                guard let owner, graph.isAccessible(owner) else {
                    if !step.isToMany { next.append(nil) }  // a nil to-one stays a null value; a to-many of nil is empty
                    continue
                }
                if step.isToMany {
                    next += graph.toMany(step.relationship, of: owner).map(Optional.some)
                } else {
                    next.append(graph.toOne(step.relationship, of: owner))
                }
            }
            current = next
        }
        return current
    }

    private func terminalValue(_ terminal: ResolvedKeyPath.Terminal, of owner: Object) -> PredicateValue {
        switch terminal {
        case .attribute(_, let a): return .attribute(graph.attribute(a, of: owner))
        case .toOne(_, let r): return graph.toOneID(r, of: owner).map(PredicateValue.object) ?? .null
        case .object: return .object(graph.objectID(of: owner))
        case .groupColumn(let index, _):
            return graph.groupColumnValue(index, of: owner)
        }
    }

    // MARK: Sorting

    /// The order of two objects under `sorts`, then primary key ascending (temporary IDs last):
    /// the same total order the SQL query produces.
    package func precedes(_ a: Object, _ b: Object, sorts: [ResolvedSort]) -> Bool {
        for sort in sorts {
            let order = PredicateSemantics.sortOrder(sortValue(sort, of: a), sortValue(sort, of: b))
            if order != .orderedSame { return sort.ascending ? order == .orderedAscending : order == .orderedDescending }
        }
        let (x, y) = (graph.objectID(of: a), graph.objectID(of: b))
        return x != y && [x, y].sortedByKey().first == x
    }

    /// Whether `object` comes after the cursor's position in the order (keyset pagination).
    package func isAfter(_ object: Object, _ cursor: FetchCursor, sorts: [ResolvedSort]) -> Bool {
        for (sort, value) in zip(sorts, cursor.values) {
            let order = PredicateSemantics.sortOrder(sortValue(sort, of: object), PredicateSemantics.folded(.attribute(value), sort.options))
            if order != .orderedSame { return sort.ascending ? order == .orderedDescending : order == .orderedAscending }
        }
        // Unsaved objects (temporary IDs) sort after every saved one.
        guard let pk = graph.objectID(of: object).primaryKey else { return true }
        return pk > cursor.primaryKey
    }

    func sortValue(_ sort: ResolvedSort, of object: Object) -> PredicateValue {
        PredicateSemantics.folded(value(sort.keyPath, from: object), sort.options)
    }
}

/// How values compare, sort and aggregate in a predicate, NSPredicate's way (the SQLite
/// store's SQL functions keep to the same rules).
package enum PredicateSemantics {
    package enum Operand {
        case value(PredicateValue)
        case list([PredicateValue])
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

    static func folded(_ v: PredicateValue, _ options: ComparisonOptions) -> PredicateValue {
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

/// A context's objects as a predicate sees them: pending changes and unsaved objects as they
/// are now, faults filled as the walk reaches them (from the store, or the parent context).
package struct ContextGraph: PredicateGraph {
    let context: ManagedObjectContext

    package func objectID(of node: ManagedObject) -> ManagedObjectID { node.objectID }

    package func isAccessible(_ node: ManagedObject) -> Bool { !node.isInaccessible }

    package func attribute(_ index: Int, of node: ManagedObject) -> AttributeValue {
        node.fireFaultIfNeeded()
        return node.attributes[index]
    }

    package func toOneID(_ relationship: Int, of node: ManagedObject) -> ManagedObjectID? {
        node.fireFaultIfNeeded()
        return context.toOneValue(of: node, relationship)
    }

    package func toOne(_ relationship: Int, of node: ManagedObject) -> ManagedObject? {
        guard let id = context.toOneValue(of: node, relationship) else { return nil }
        let target = context.object(with: id)
        target.fireFaultIfNeeded()
        return target.isInaccessible ? nil : target
    }

    package func toMany(_ relationship: Int, of node: ManagedObject) -> [ManagedObject] {
        context.toManyValue(of: node, relationship).sortedByKey().compactMap { id in
            let member = context.object(with: id)
            member.fireFaultIfNeeded()
            return member.isDeleted ? nil : member
        }
    }
}

extension PredicateEvaluator where Graph == ContextGraph {
    /// An evaluator over `context`'s objects.
    init(context: ManagedObjectContext) { self.init(graph: ContextGraph(context: context)) }
}
