import Foundation

/// An aggregate request checked against the model: each result's key path resolved, its
/// computation and its type decided, the having predicate and the sorts resolved to the results.
package struct PreparedAggregate {
    /// One result of the groups.
    package struct Column {
        package let name: String
        /// nil for the count of rows.
        package let keyPath: ResolvedKeyPath?
        /// nil for a group key.
        let function: AggregateFunction?
        package let computation: Computation
        /// The type of the result.
        package let type: OperandType

        package var isGroupKey: Bool { function == nil }
    }

    /// What a result is: a group key, or a function of the groups' values. Sums and averages of
    /// integers and decimals are exact (an integer sum past Int64 is an overflow error, never a
    /// rounded double).
    package enum Computation {
        /// The key path's value itself: a group key.
        case value
        /// The number of rows in the group.
        case countRows
        /// The number of non-null values.
        case countValues
        case minimum
        case maximum
        /// An exact sum of integers, an Int64.
        case integerSum
        /// An exact sum of decimals.
        case decimalSum
        /// A sum of doubles: 0.0 over no values.
        case doubleSum
        /// The average of integers, a double computed from their exact sum.
        case integerAverage
        case doubleAverage
        /// The exact average of decimals.
        case decimalAverage
    }

    /// The entity and predicate, checked as a fetch's are (and the request's deadline).
    package let fetch: PreparedFetch
    package let columns: [Column]
    package let having: CheckedPredicate?
    package let sorts: [ResolvedSort]
    package let limit: Int
    package let offset: Int

    /// Entities whose values decide the groups: the fetch's and those the results' key paths read.
    package var entitiesRead: Set<Int> {
        var result = fetch.entitiesRead
        for column in columns { if let keyPath = column.keyPath { result.formUnion(keyPath.entitiesRead) } }
        return result
    }

    /// The most properties a request has: ordering the groups takes every sort key and every
    /// group key, and a store may take only so many (the SQLite store: 64 terms in an ORDER BY).
    package static let maxProperties = 32

    init(_ request: AggregateRequest, fetch: PreparedFetch, model: ManagedObjectModel, storeIdentifier: UUID) throws(AggregateError) {
        guard !request.properties.isEmpty else { throw .fetch(.invalidRequest("an aggregate request needs at least one property")) }
        guard request.properties.count <= Self.maxProperties else {
            throw .fetch(.invalidRequest("at most \(Self.maxProperties) properties, not \(request.properties.count)"))
        }
        guard request.sortDescriptors.count <= ManagedObjectContext.maxSortDescriptors else {
            throw .fetch(.invalidRequest("at most \(ManagedObjectContext.maxSortDescriptors) sort descriptors, not \(request.sortDescriptors.count)"))
        }
        var seen = Set<String>()
        for property in request.properties {
            guard !property.name.isEmpty else { throw .invalidProperty(name: property.name, reason: "a result needs a name") }
            guard seen.insert(property.name).inserted else { throw .duplicateName(property.name) }
        }
        self.fetch = fetch
        self.columns = try request.properties.map { property throws(AggregateError) in
            try Self.column(property, entity: fetch.entity, model: model)
        }
        let byName = Dictionary(uniqueKeysWithValues: columns.enumerated().map { ($1.name, (index: $0, type: $1.type)) })
        let names = columns.map(\.name)
        func groupColumn(_ name: String) throws(AggregateError) -> ResolvedKeyPath {
            guard let column = byName[name] else { throw .unknownName(name, known: names) }
            return ResolvedKeyPath(groupColumn: column.index, named: name, type: column.type, rootEntity: fetch.entity)
        }
        if let predicate = request.havingPredicate {
            var checker = PredicateChecker(model: model, root: fetch.entity, storeIdentifier: storeIdentifier)
            checker.groupColumns = byName
            do throws(FetchError) {
                having = try checker.checkTopLevel(predicate)
            } catch {
                // The only key paths a having predicate has are the results' names.
                guard case .unknownKeyPath(let name, _) = error else { throw .fetch(error) }
                throw .unknownName(name, known: names)
            }
        } else {
            having = nil
        }
        sorts = try request.sortDescriptors.map { sort throws(AggregateError) -> ResolvedSort in
            let keyPath = try groupColumn(sort.keyPath)
            guard sort.options.isEmpty || keyPath.valueType(model) == .attribute(.string) else {
                throw .fetch(.invalidRequest("\(sort.options.formatSuffix) order applies to strings, and '\(sort.keyPath)' is not one"))
            }
            return ResolvedSort(keyPath: keyPath, ascending: sort.ascending, options: sort.options)
        }
        limit = request.fetchLimit
        offset = request.fetchOffset
    }

    /// Checks one property and decides its computation and type.
    private static func column(_ property: AggregateProperty, entity: Entity, model: ManagedObjectModel) throws(AggregateError) -> Column {
        let name = property.name
        func resolve(_ text: String) throws(AggregateError) -> ResolvedKeyPath {
            let keyPath: ResolvedKeyPath
            do throws(FetchError) {
                keyPath = try ResolvedKeyPath(text, rootEntity: entity, model: model)
            } catch {
                throw .fetch(error)
            }
            guard !keyPath.isCollection else {
                throw .invalidProperty(name: name, reason: "'\(text)' goes through a to-many relationship; use attributes and to-one key paths")
            }
            return keyPath
        }
        switch property.expression {
        case .groupKey(let text):
            let keyPath = try resolve(text)
            return Column(name: name, keyPath: keyPath, function: nil, computation: .value, type: keyPath.valueType(model))
        case .function(.count, nil):
            return Column(name: name, keyPath: nil, function: .count, computation: .countRows, type: .attribute(.integer64))
        case .function(let function, nil):
            throw .invalidProperty(name: name, reason: "\(function.rawValue) needs a key path; only count counts rows")
        case let .function(function, text?):
            let keyPath = try resolve(text)
            let valueType = keyPath.valueType(model)
            guard function != .count else {
                return Column(name: name, keyPath: keyPath, function: .count, computation: .countValues, type: .attribute(.integer64))
            }
            guard case .attribute(let type) = valueType else {
                if function == .sum || function == .avg { throw .notNumeric(function, keyPath: text, type: "relationship") }
                throw .invalidProperty(name: name, reason: "\(function.rawValue) needs an attribute, and '\(text)' is a relationship")
            }
            let (computation, resultType) = try Self.function(function, of: type, keyPath: text)
            return Column(name: name, keyPath: keyPath, function: function, computation: computation, type: .attribute(resultType))
        }
    }

    /// How `function` is computed over an attribute of `type`, and the result's type.
    private static func function(_ function: AggregateFunction, of type: AttributeType, keyPath: String)
        throws(AggregateError) -> (Computation, AttributeType) {
        switch (function, type) {
        case (.count, _): return (.countValues, .integer64)
        // Strings in code-point order (UTF-8 bytes).
        case (.min, _): return (.minimum, type)
        case (.max, _): return (.maximum, type)
        case (.sum, .integer16), (.sum, .integer32), (.sum, .integer64): return (.integerSum, .integer64)
        case (.sum, .decimal): return (.decimalSum, .decimal)
        case (.sum, .double), (.sum, .float): return (.doubleSum, .double)
        case (.avg, .integer16), (.avg, .integer32), (.avg, .integer64): return (.integerAverage, .double)
        case (.avg, .double), (.avg, .float): return (.doubleAverage, .double)
        case (.avg, .decimal): return (.decimalAverage, .decimal)
        case (.sum, _), (.avg, _): throw .notNumeric(function, keyPath: keyPath, type: type.rawValue)
        }
    }
}
