/// A checked fetch answered in memory by the predicate evaluator, over any graph of stored rows:
/// how a store without a query language of its own (or not yet compiling to it) gives the
/// results the SQLite store gives in SQL.
package struct InMemoryFetch<Graph: PredicateGraph> {
    package let graph: Graph
    private let evaluator: PredicateEvaluator<Graph>

    package init(graph: Graph) {
        self.graph = graph
        self.evaluator = PredicateEvaluator(graph: graph)
    }

    /// The objects among `candidates` (every stored object of the fetched entity, in ascending
    /// key order) that `fetch` matches, in its order (the sorts, then the key ascending), within
    /// its window unless `windowed` is false. With `residual`, the candidates are known to
    /// match the rest of the predicate (a store answered it), and only `residual` is evaluated.
    package func matches(_ fetch: StoreFetch, candidates: [Graph.Node], windowed: Bool = true,
                         residual: CheckedPredicate?? = .none) throws(FetchError) -> [Graph.Node] {
        let prepared = fetch.prepared
        let predicate = residual ?? prepared.predicate
        var found: [Graph.Node] = []
        for node in candidates {
            if let cursor = prepared.after, !evaluator.isAfter(node, cursor, sorts: prepared.sorts) { continue }
            if let predicate, !evaluator.evaluate(predicate, on: node) { continue }
            found.append(node)
        }
        try prepared.checkDeadline()
        found.sort { evaluator.precedes($0, $1, sorts: prepared.sorts) }
        guard windowed else { return found }
        let window = found.dropFirst(fetch.offset)
        return Array(fetch.limit > 0 ? window.prefix(fetch.limit) : window)
    }

    /// The values of `keyPaths` of each of `nodes`.
    package func values(of nodes: [Graph.Node], keyPaths: [ResolvedKeyPath], model: ManagedObjectModel) -> [[PropertyValue]] {
        nodes.map { node in
            keyPaths.map { keyPath in
                let value = evaluator.value(keyPath, from: node)
                switch keyPath.valueType(model) {
                case .object:
                    if case .object(let id) = value { return .object(id) }
                    return .object(nil)
                case .attribute:
                    if case .attribute(let attribute) = value { return .attribute(attribute) }
                    return .attribute(.null)
                }
            }
        }
    }

    /// The values `fetch` sorts `node` by, in the order of its sorts.
    package func sortValues(of node: Graph.Node, _ fetch: StoreFetch) -> [AttributeValue] {
        fetch.prepared.sorts.map { sort in
            if case .attribute(let value) = evaluator.value(sort.keyPath, from: node) { return value }
            return .null
        }
    }
}
