/// Why an aggregate request cannot run, or stopped.
public enum AggregateError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What would stop a fetch of the same entity and predicate: an unknown entity or key path,
    /// a `predicate` or `havingPredicate` that cannot run, a negative limit, the timeout, the store.
    case fetch(FetchError)
    /// Two properties have the same name.
    case duplicateName(String)
    /// A having predicate or a sort descriptor uses a name that no property has.
    case unknownName(String, known: [String])
    /// `sum` or `avg` of a key path that does not end in a number.
    case notNumeric(AggregateFunction, keyPath: String, type: String)
    /// A property that cannot be computed as written (a to-many key path, the minimum of a
    /// relationship, an empty name).
    case invalidProperty(name: String, reason: String)
    /// The exact result called `name` does not fit its type: a sum of integers beyond Int64,
    /// a sum of decimals beyond 38 significant digits or `Decimal`'s exponents.
    case overflow(name: String)

    public var description: String {
        switch self {
        case .fetch(let error): return error.description
        case .duplicateName(let name): return "two results are named '\(name)'; give one another name"
        case let .unknownName(name, known):
            return "no result is named '\(name)' (the results: \(known.joined(separator: ", ")))"
        case let .notNumeric(function, keyPath, type):
            return "\(function.rawValue) needs a number, and '\(keyPath)' is a \(type)"
        case let .invalidProperty(name, reason): return "result '\(name)': \(reason)"
        case .overflow(let name): return "the exact value of result '\(name)' does not fit its type (it overflows)"
        }
    }
}
