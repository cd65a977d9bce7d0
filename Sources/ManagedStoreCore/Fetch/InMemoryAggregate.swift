import Foundation

/// A checked aggregate request answered in memory over any graph of stored rows, with the
/// SQLite store's results: groups of equal group keys (one group, also over no rows, when there
/// are none), exact sums and averages of integers and decimals (`ExactDecimalSum`), 0.0 as the
/// sum of no doubles, minimums and maximums in store order with nulls left out, then the having
/// predicate over the groups, their order (the sorts, then every group key ascending, nulls
/// first), offset and limit.
package struct InMemoryAggregate<Graph: PredicateGraph> {
    package let graph: Graph
    private let model: ManagedObjectModel

    package init(graph: Graph, model: ManagedObjectModel) {
        self.graph = graph
        self.model = model
    }

    /// The groups of `prepared` over `candidates`, every stored object of its entity.
    package func groups(_ prepared: PreparedAggregate, candidates: [Graph.Node]) throws(AggregateError) -> [AggregateGroup] {
        var groups = AggregateGroups(prepared)
        groups.add(candidates, of: graph, matching: prepared.fetch.predicate)
        return try groups.results()
    }
}

/// An aggregate's groups built up over candidates given a batch at a time, each batch in a
/// graph of its own (a store that streams its rows keeps only the groups, not the rows).
package struct AggregateGroups {
    private let prepared: PreparedAggregate
    private let keyColumns: [Int]
    private var accumulators: [[Accumulator]] = []
    private var groupOf: [[GroupKeyPart]: Int] = [:]
    private var keys: [[GroupKeyPart]] = []

    package init(_ prepared: PreparedAggregate) {
        self.prepared = prepared
        keyColumns = prepared.columns.indices.filter { prepared.columns[$0].isGroupKey }
        if keyColumns.isEmpty {
            accumulators.append(prepared.columns.map { Accumulator($0.computation) })
            keys.append([])
            groupOf[[]] = 0
        }
    }

    /// Adds the candidates that match `predicate` to their groups: the request's, or what a
    /// store's own query did not check of it.
    package mutating func add<Graph: PredicateGraph>(_ candidates: [Graph.Node], of graph: Graph, matching predicate: CheckedPredicate?) {
        let evaluator = PredicateEvaluator(graph: graph)
        for node in candidates {
            if let predicate, !evaluator.evaluate(predicate, on: node) { continue }
            let key = keyColumns.map { GroupKeyPart(Self.propertyValue(evaluator.value(prepared.columns[$0].keyPath!, from: node), prepared.columns[$0])) }
            let group: Int
            if let known = groupOf[key] {
                group = known
            } else {
                group = accumulators.count
                groupOf[key] = group
                keys.append(key)
                accumulators.append(prepared.columns.map { Accumulator($0.computation) })
            }
            for (c, column) in prepared.columns.enumerated() where !column.isGroupKey {
                let value: AttributeValue
                switch column.keyPath.map({ evaluator.value($0, from: node) }) {
                case .attribute(let attribute)?: value = attribute
                // A to-one's destination counts as a value (count of a relationship).
                case .object?: value = .boolean(true)
                // count(*) counts rows, whatever they hold.
                case nil: value = .boolean(true)
                }
                accumulators[group][c].add(value)
            }
        }
    }

    /// The groups' results, kept by the having predicate, ordered and windowed.
    package func results() throws(AggregateError) -> [AggregateGroup] {
        do throws(FetchError) { try prepared.fetch.checkDeadline() } catch { throw .fetch(error) }
        var results: [[PropertyValue]] = []
        for (group, key) in keys.enumerated() {
            var values: [PropertyValue] = []
            var nextKey = 0
            for (c, column) in prepared.columns.enumerated() {
                if column.isGroupKey {
                    values.append(key[nextKey].value)
                    nextKey += 1
                } else {
                    guard let result = accumulators[group][c].result else { throw .overflow(name: column.name) }
                    values.append(.attribute(result))
                }
            }
            results.append(values)
        }
        return Self.finish(prepared, results)
    }

    /// Groups computed elsewhere (a store's SQL: each a result per column, in any order) kept by
    /// the having predicate, ordered and windowed, as `results()` does its own.
    package static func finish(_ prepared: PreparedAggregate, _ groups: [[PropertyValue]]) -> [AggregateGroup] {
        var results = groups
        let keyColumns = prepared.columns.indices.filter { prepared.columns[$0].isGroupKey }
        if let having = prepared.having {
            let groups = GroupGraph(groups: results)
            let havingEvaluator = PredicateEvaluator(graph: groups)
            results = results.indices.filter { havingEvaluator.evaluate(having, on: $0) }.map { results[$0] }
        }
        results.sort { a, b in Self.precedes(a, b, sorts: prepared.sorts, keyColumns: keyColumns) }
        let window = results.dropFirst(prepared.offset)
        let names = prepared.columns.map(\.name)
        return (prepared.limit > 0 ? Array(window.prefix(prepared.limit)) : Array(window)).map { AggregateGroup(names: names, values: $0) }
    }

    private static func propertyValue(_ value: PredicateValue, _ column: PreparedAggregate.Column) -> PropertyValue {
        switch (column.type, value) {
        case (.object, .object(let id)): return .object(id)
        case (.object, _): return .object(nil)
        case (_, .attribute(let attribute)): return .attribute(attribute)
        case (_, .object): return .attribute(.null)
        }
    }

    /// The groups' order: the sorts (on results, by position), then every group key ascending.
    private static func precedes(_ a: [PropertyValue], _ b: [PropertyValue], sorts: [ResolvedSort], keyColumns: [Int]) -> Bool {
        for sort in sorts {
            guard case .groupColumn(let index, _) = sort.keyPath.terminal else { continue }
            let order = order(a[index], b[index], options: sort.options)
            if order != .orderedSame { return sort.ascending ? order == .orderedAscending : order == .orderedDescending }
        }
        for index in keyColumns {
            let order = order(a[index], b[index], options: [])
            if order != .orderedSame { return order == .orderedAscending }
        }
        return false
    }

    /// Store order of two results: nulls first; objects by primary key.
    private static func order(_ x: PropertyValue, _ y: PropertyValue, options: ComparisonOptions) -> ComparisonResult {
        switch (x, y) {
        case let (.object(a), .object(b)):
            guard let a, let b else { return a == nil && b == nil ? .orderedSame : (a == nil ? .orderedAscending : .orderedDescending) }
            let (p, q) = (a.primaryKey ?? .max, b.primaryKey ?? .max)
            return p == q ? .orderedSame : (p < q ? .orderedAscending : .orderedDescending)
        case let (.attribute(a), .attribute(b)):
            return PredicateSemantics.sortOrder(PredicateSemantics.folded(.attribute(a), options), PredicateSemantics.folded(.attribute(b), options))
        default:
            return .orderedSame
        }
    }
}

/// A group key's value as groups tell keys apart: strings by their code points, as the SQLite
/// store's GROUP BY does (Swift's `==` would put "é" and "e\u{301}" in one group).
private struct GroupKeyPart: Hashable {
    let value: PropertyValue

    init(_ value: PropertyValue) { self.value = value }

    static func == (a: Self, b: Self) -> Bool {
        if case .attribute(let x) = a.value, case .attribute(let y) = b.value { return StoredValueIdentity.same(x, y) }
        return a.value == b.value
    }

    func hash(into hasher: inout Hasher) {
        if case .attribute(let attribute) = value { StoredValueIdentity.hash(attribute, into: &hasher) } else { hasher.combine(value) }
    }
}

/// One result of a group, accumulated a row at a time.
private struct Accumulator {
    let computation: PreparedAggregate.Computation
    var count: Int64 = 0
    var extreme: AttributeValue = .null
    var integerTotal: Int128 = 0
    var doubleTotal: Double = 0
    var decimals = ExactDecimalSum()

    init(_ computation: PreparedAggregate.Computation) { self.computation = computation }

    mutating func add(_ value: AttributeValue) {
        switch computation {
        case .value:
            return
        case .countRows:
            count &+= 1
        case .countValues:
            if !value.isNull { count &+= 1 }
        case .minimum, .maximum:
            guard !value.isNull else { return }
            if extreme.isNull { extreme = value; return }
            let order = PredicateSemantics.sortOrder(.attribute(value), .attribute(extreme))
            if computation == .minimum ? order == .orderedAscending : order == .orderedDescending { extreme = value }
        case .integerSum, .integerAverage:
            guard case .integer(let v) = value else { return }
            integerTotal &+= Int128(v)
            count &+= 1
        case .doubleSum, .doubleAverage:
            switch value {
            case .double(let v): doubleTotal += v
            case .float(let v): doubleTotal += Double(v)
            case .integer(let v): doubleTotal += Double(v)
            default: return
            }
            count &+= 1
        case .decimalSum, .decimalAverage:
            guard case .decimal(let v) = value else { return }
            decimals.add(v)
        }
    }

    /// The result; nil when an exact result does not fit its type (an overflow).
    var result: AttributeValue? {
        switch computation {
        case .value: return .null
        case .countRows, .countValues: return .integer(count)
        case .minimum, .maximum: return extreme
        case .integerSum: return Int64(exactly: integerTotal).map(AttributeValue.integer)
        case .integerAverage: return count == 0 ? .null : .double(Double(integerTotal) / Double(count))
        case .doubleSum: return .double(doubleTotal)
        case .doubleAverage: return count == 0 ? .null : .double(doubleTotal / Double(count))
        case .decimalSum: return decimals.sum.map(AttributeValue.decimal)
        case .decimalAverage:
            guard decimals.count > 0 else { return .null }
            return decimals.average.map(AttributeValue.decimal)
        }
    }
}

/// An aggregate's groups as the predicate evaluator walks them (a having predicate): a node is
/// a group's position, its attributes the group's results.
private struct GroupGraph: PredicateGraph {
    let groups: [[PropertyValue]]

    /// Groups are no objects; an ID only because the protocol asks for one.
    private static let noStore = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
    func objectID(of node: Int) -> ManagedObjectID {
        ManagedObjectID(storeIdentifier: Self.noStore, entityName: "", key: .permanent(Int64(node)))
    }
    func isAccessible(_ node: Int) -> Bool { true }
    func attribute(_ index: Int, of node: Int) -> AttributeValue {
        if case .attribute(let value) = groups[node][index] { return value }
        return .null
    }
    func toOneID(_ relationship: Int, of node: Int) -> ManagedObjectID? { nil }
    func toOne(_ relationship: Int, of node: Int) -> Int? { nil }
    func toMany(_ relationship: Int, of node: Int) -> [Int] { [] }

    func groupColumnValue(_ index: Int, of node: Int) -> PredicateValue {
        switch groups[node][index] {
        case .attribute(let value): return .attribute(value)
        case .object(let id): return id.map(PredicateValue.object) ?? .null
        case .objects: return .null
        }
    }
}

extension ExactDecimalSum {
    /// Adds a decimal, by its digits (`Decimal`'s own text, which is exact).
    mutating func add(_ value: Decimal) {
        guard !value.isNaN else { return }
        var text = Array("\(value)".utf8)
        let isNegative = text.first == UInt8(ascii: "-")
        if isNegative { text.removeFirst() }
        let point = text.firstIndex(of: UInt8(ascii: ".")) ?? text.count
        var digits = text.filter { $0 != UInt8(ascii: ".") }
        // Leading zeros are not digits of the value ("0.05": digits 5, exponent -1).
        var exponent = point
        while let first = digits.first, first == UInt8(ascii: "0") {
            digits.removeFirst()
            exponent -= 1
        }
        add(negative: isNegative, count: digits.count, exponent: exponent, digit: { digits[$0] })
    }
}
