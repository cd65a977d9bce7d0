/// Walks a template's predicate and types each substitution variable by the key path on the
/// other side of its comparison.
struct TemplateVariableTyper {
    let model: ManagedObjectModel
    private(set) var variables: [FetchTemplateVariable] = []

    init(model: ManagedObjectModel) { self.model = model }

    mutating func type(_ predicate: ObjectPredicate, root: Entity, bound: [String: Int] = [:]) throws(FetchError) {
        switch predicate {
        case .constant: break
        case .and(let ps), .or(let ps): for p in ps { try type(p, root: root, bound: bound) }
        case .not(let p): try type(p, root: root, bound: bound)
        case .comparison(let c):
            try visit(c.lhs, other: c.rhs, isListSide: false, root: root, bound: bound)
            try visit(c.rhs, other: c.lhs, isListSide: c.op == .in, root: root, bound: bound)
        }
    }

    private mutating func visit(_ side: PredicateExpression, other: PredicateExpression, isListSide: Bool,
                                root: Entity, bound: [String: Int]) throws(FetchError) {
        switch side {
        case .variable(let name) where bound[name] == nil:
            var keyPath: String?, type: OperandType?
            switch other {
            case .keyPath(let text):
                keyPath = text
                type = try ResolvedKeyPath(text, rootEntity: root, variables: bound, model: model).valueType(model)
            case .aggregate(.count, let collection, _):
                keyPath = collection + ".@count"
                type = .attribute(.integer64)
            default: break
            }
            guard !variables.contains(where: { $0.name == name }) else { return }
            var destination: String?
            if case .object(let index)? = type { destination = model.schema[index].name }
            variables.append(FetchTemplateVariable(name: name, keyPath: keyPath, type: type, isList: isListSide,
                                                   destinationEntityName: destination))
        case .list(let items):
            for item in items { try visit(item, other: other, isListSide: false, root: root, bound: bound) }
        case let .subqueryCount(collection, variable, predicate):
            let path = try ResolvedKeyPath(collection, rootEntity: root, variables: bound, model: model)
            guard case .object(let destination) = path.terminal else { return }
            var inner = bound
            inner[variable] = destination
            try type(predicate, root: root, bound: inner)
        default: break
        }
    }
}
