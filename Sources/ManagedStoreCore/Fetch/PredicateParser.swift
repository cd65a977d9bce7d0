import Foundation

/// A recursive-descent parser for the NSPredicate format language.
///
/// Nesting is limited (`maxDepth`), so no input, however hostile, can exhaust the stack; every
/// refusal is a `PredicateParseError` with the column it happened at.
struct PredicateParser {
    static let maxDepth = 100

    private let tokens: [PredicateToken]
    private let scalars: [Unicode.Scalar]
    private var index = 0
    private var arguments: [Any]
    private var argumentIndex = 0
    private var depth = 0

    init(format: String, arguments: [Any]) throws(PredicateParseError) {
        (self.tokens, self.scalars) = try PredicateLexer.tokenize(format)
        self.arguments = arguments
    }

    mutating func parse() throws(PredicateParseError) -> ObjectPredicate {
        let predicate = try parseOr()
        guard case .end = current.kind else { throw unexpected("expected AND, OR or the end") }
        if argumentIndex < arguments.count {
            throw PredicateParseError("\(arguments.count - argumentIndex) format argument(s) left unused", column: current.column)
        }
        return predicate
    }

    // MARK: Tokens

    private var current: PredicateToken { tokens[index] }
    private var previous: PredicateToken { tokens[max(0, index - 1)] }

    private mutating func advance() { if index < tokens.count - 1 { index += 1 } }

    private func isKeyword(_ word: String) -> Bool { current.kind == .keyword(word) }
    private func isSymbol(_ symbol: String) -> Bool { current.kind == .symbol(symbol) }

    private mutating func accept(keyword word: String) -> Bool {
        guard isKeyword(word) else { return false }
        advance()
        return true
    }

    private mutating func accept(symbol: String) -> Bool {
        guard isSymbol(symbol) else { return false }
        advance()
        return true
    }

    private mutating func expect(symbol: String, _ what: String) throws(PredicateParseError) {
        guard accept(symbol: symbol) else { throw unexpected("expected \(what)") }
    }

    private func unexpected(_ message: String) -> PredicateParseError {
        let found = current.kind == .end ? "the end" : "'\(current.text(in: scalars))'"
        return PredicateParseError("\(message), found \(found)", column: current.column)
    }

    private mutating func nested<T>(_ body: (inout PredicateParser) throws(PredicateParseError) -> T) throws(PredicateParseError) -> T {
        depth += 1
        defer { depth -= 1 }
        guard depth <= Self.maxDepth else { throw PredicateParseError("nesting deeper than \(Self.maxDepth) levels", column: current.column) }
        return try body(&self)
    }

    // MARK: Predicates

    private mutating func parseOr() throws(PredicateParseError) -> ObjectPredicate {
        var terms = [try parseAnd()]
        while accept(keyword: "OR") || accept(symbol: "||") { terms.append(try parseAnd()) }
        return terms.count == 1 ? terms[0] : .or(terms)
    }

    private mutating func parseAnd() throws(PredicateParseError) -> ObjectPredicate {
        var terms = [try parseNot()]
        while accept(keyword: "AND") || accept(symbol: "&&") { terms.append(try parseNot()) }
        return terms.count == 1 ? terms[0] : .and(terms)
    }

    private mutating func parseNot() throws(PredicateParseError) -> ObjectPredicate {
        if accept(keyword: "NOT") || accept(symbol: "!") {
            return .not(try nested { p throws(PredicateParseError) in try p.parseNot() })
        }
        return try parsePrimary()
    }

    private mutating func parsePrimary() throws(PredicateParseError) -> ObjectPredicate {
        if accept(symbol: "(") {
            let inner = try nested { p throws(PredicateParseError) in try p.parseOr() }
            try expect(symbol: ")", "')'")
            return inner
        }
        if accept(keyword: "TRUEPREDICATE") { return .constant(true) }
        if accept(keyword: "FALSEPREDICATE") { return .constant(false) }
        var modifier = ComparisonModifier.direct
        if accept(keyword: "ANY") || accept(keyword: "SOME") { modifier = .any }
        else if accept(keyword: "ALL") { modifier = .all }
        else if accept(keyword: "NONE") { modifier = .none }
        guard startsExpression else { throw unexpected("expected a predicate") }
        let lhs = try parseExpression()
        guard let op = try parseOperator() else {
            // A bare key path is a boolean test: `done`, `NOT archived`.
            guard modifier == .direct, case .keyPath = lhs else { throw unexpected("expected a comparison operator") }
            return .comparison(ComparisonPredicate(lhs, .equal, .constant(.attribute(.boolean(true)))))
        }
        let options = try parseOptions()
        guard startsExpression else {
            let previousText = previous.text(in: scalars)
            let operatorText = previousText == "]" ? op.rawValue : previousText
            throw PredicateParseError("expected a value after '\(operatorText)'" + (current.kind == .end ? "" : ", found '\(current.text(in: scalars))'"),
                                      column: current.column)
        }
        let rhs = try parseExpression()
        if op == .between {
            guard case .list(let bounds) = rhs, bounds.count == 2 else {
                throw PredicateParseError("BETWEEN takes a list of two values: x BETWEEN {low, high}", column: previous.column)
            }
        }
        return .comparison(ComparisonPredicate(lhs, op, rhs, modifier: modifier, options: options))
    }

    private mutating func parseOperator() throws(PredicateParseError) -> ComparisonOperator? {
        let op: ComparisonOperator?
        switch current.kind {
        case .symbol("=="), .symbol("="): op = .equal
        case .symbol("!="), .symbol("<>"): op = .notEqual
        case .symbol("<"): op = .lessThan
        case .symbol("<="), .symbol("=<"): op = .lessThanOrEqual
        case .symbol(">"): op = .greaterThan
        case .symbol(">="), .symbol("=>"): op = .greaterThanOrEqual
        case .keyword("BEGINSWITH"): op = .beginsWith
        case .keyword("ENDSWITH"): op = .endsWith
        case .keyword("CONTAINS"): op = .contains
        case .keyword("LIKE"): op = .like
        case .keyword("MATCHES"): op = .matches
        case .keyword("IN"): op = .in
        case .keyword("BETWEEN"): op = .between
        default: op = nil
        }
        if op != nil { advance() }
        return op
    }

    /// `[c]`, `[d]`, `[cd]` (also `[n]`, accepted and ignored, as NSPredicate's normalized hint).
    private mutating func parseOptions() throws(PredicateParseError) -> ComparisonOptions {
        guard isSymbol("["), index + 1 < tokens.count, case .identifier(let letters) = tokens[index + 1].kind else { return [] }
        let column = current.column
        advance()
        var options: ComparisonOptions = []
        for letter in letters.lowercased() {
            switch letter {
            case "c": options.insert(.caseInsensitive)
            case "d": options.insert(.diacriticInsensitive)
            case "n": break
            default: throw PredicateParseError("unknown comparison option '\(letter)' (use [c], [d] or [cd])", column: column)
            }
        }
        advance()
        try expect(symbol: "]", "']' after the comparison options")
        return options
    }

    // MARK: Expressions

    private var startsExpression: Bool {
        switch current.kind {
        case .identifier, .string, .integer, .real, .variable, .format: return true
        case .keyword(let k): return ["YES", "NO", "TRUE", "FALSE", "NIL", "NULL", "SUBQUERY", "CAST"].contains(k)
        case .symbol(let s): return s == "{"
        default: return false
        }
    }

    private mutating func parseExpression() throws(PredicateParseError) -> PredicateExpression {
        let token = current
        switch token.kind {
        case .string(let s): advance(); return .constant(.attribute(.string(s)))
        case .integer(let i): advance(); return .constant(.attribute(.integer(i)))
        case .real(let d): advance(); return .constant(.attribute(.double(d)))
        case .keyword("YES"), .keyword("TRUE"): advance(); return .constant(.attribute(.boolean(true)))
        case .keyword("NO"), .keyword("FALSE"): advance(); return .constant(.attribute(.boolean(false)))
        case .keyword("NIL"), .keyword("NULL"): advance(); return .constant(.null)
        case .symbol("{"):
            advance()
            return try nested { p throws(PredicateParseError) in try p.parseList(openedAt: token.column) }
        case .keyword("SUBQUERY"):
            advance()
            return try nested { p throws(PredicateParseError) in try p.parseSubquery() }
        case .keyword("CAST"):
            advance()
            return try nested { p throws(PredicateParseError) in try p.parseCast() }
        case .variable(let name):
            advance()
            if isSymbol(".") { return try parseKeyPath(first: "$" + name, column: token.column) }
            return .variable(name)
        case .identifier(let name):
            advance()
            return try parseKeyPath(first: name, column: token.column)
        case .format(let spec):
            advance()
            return try formatArgument(spec, column: token.column)
        default:
            throw unexpected("expected a value")
        }
    }

    private mutating func parseList(openedAt column: Int) throws(PredicateParseError) -> PredicateExpression {
        var items: [PredicateExpression] = []
        if accept(symbol: "}") { return .list(items) }
        while true {
            guard startsExpression else { throw unexpected("expected a value in the list") }
            items.append(try parseExpression())
            if accept(symbol: "}") { return .list(items) }
            guard accept(symbol: ",") else { throw unexpected("expected ',' or '}' in the list opened at column \(column)") }
        }
    }

    /// `name(.name | .@fn)*`; an aggregate splits the path into collection and attribute.
    private mutating func parseKeyPath(first: String, column: Int) throws(PredicateParseError) -> PredicateExpression {
        var components = [first]
        var aggregate: (AggregateFunction, Int)?
        while accept(symbol: ".") {
            switch current.kind {
            case .identifier(let name):
                components.append(name)
            case .keyword(let word):
                // Reserved words after a dot can only be keys: `task.in` is unusual but unambiguous.
                components.append(word.lowercased())
            case .at(let fn):
                guard aggregate == nil, let function = AggregateFunction(rawValue: fn) else {
                    throw PredicateParseError("unknown or repeated aggregate '@\(fn)' (use @count, @sum, @avg, @min, @max)", column: current.column)
                }
                aggregate = (function, components.count)
            case .format("K"):
                guard argumentIndex < arguments.count, let key = arguments[argumentIndex] as? String else {
                    throw PredicateParseError("%K needs a key path string argument", column: current.column)
                }
                argumentIndex += 1
                components.append(contentsOf: key.split(separator: ".").map(String.init))
            default:
                throw unexpected("expected a key after '.'")
            }
            advance()
        }
        let path = components.joined(separator: ".")
        guard let (function, at) = aggregate else { return .keyPath(path) }
        let collection = components[..<at].joined(separator: ".")
        let rest = components[at...].joined(separator: ".")
        if function == .count {
            guard rest.isEmpty else { throw PredicateParseError("@count ends a key path", column: column) }
            return .aggregate(.count, collection: collection, attribute: nil)
        }
        guard !rest.isEmpty else { throw PredicateParseError("@\(function.rawValue) needs a key after it, as in tasks.@\(function.rawValue).priority", column: column) }
        return .aggregate(function, collection: collection, attribute: rest)
    }

    /// `SUBQUERY(collection, $x, predicate).@count`
    private mutating func parseSubquery() throws(PredicateParseError) -> PredicateExpression {
        try expect(symbol: "(", "'(' after SUBQUERY")
        let collectionToken = current
        guard case .identifier = collectionToken.kind else { throw unexpected("expected the collection key path of SUBQUERY") }
        let collection = try parseExpression()
        guard case .keyPath(let path) = collection else {
            throw PredicateParseError("SUBQUERY's first argument is a to-many key path", column: collectionToken.column)
        }
        try expect(symbol: ",", "',' after the SUBQUERY collection")
        guard case .variable(let variable) = current.kind else { throw unexpected("expected a $variable as SUBQUERY's second argument") }
        advance()
        try expect(symbol: ",", "',' after the SUBQUERY variable")
        let predicate = try parseOr()
        try expect(symbol: ")", "')' to close SUBQUERY")
        guard accept(symbol: ".") else { throw unexpected("expected .@count after SUBQUERY(...)") }
        guard current.kind == .at("count") else { throw unexpected("expected @count after SUBQUERY(...).") }
        advance()
        return .subqueryCount(collection: path, variable: variable, predicate: predicate)
    }

    /// `CAST(value, "NSDate")`: seconds since 2001-01-01, or an RFC 3339 string; also "NSNumber" and "NSString".
    private mutating func parseCast() throws(PredicateParseError) -> PredicateExpression {
        let column = previous.column
        try expect(symbol: "(", "'(' after CAST")
        guard startsExpression else { throw unexpected("expected a value to CAST") }
        let value = try parseExpression()
        try expect(symbol: ",", "',' after the value to CAST")
        guard case .string(let type) = current.kind else { throw unexpected("expected a type name string such as \"NSDate\"") }
        advance()
        try expect(symbol: ")", "')' to close CAST")
        guard case .constant(.attribute(let constant)) = value else {
            throw PredicateParseError("CAST takes a constant value", column: column)
        }
        switch (type, constant) {
        case ("NSDate", .integer(let seconds)): return .constant(.attribute(.date(Date(timeIntervalSinceReferenceDate: Double(seconds)))))
        case ("NSDate", .double(let seconds)): return .constant(.attribute(.date(Date(timeIntervalSinceReferenceDate: seconds))))
        case ("NSDate", .string(let text)):
            if let date = RFC3339.date(from: text) { return .constant(.attribute(.date(date))) }
            if let seconds = Double(text) { return .constant(.attribute(.date(Date(timeIntervalSinceReferenceDate: seconds)))) }
            throw PredicateParseError("CAST(\"\(text)\", \"NSDate\"): not an RFC 3339 date or a number of seconds", column: column)
        case ("NSNumber", .string(let text)):
            if let i = Int64(text) { return .constant(.attribute(.integer(i))) }
            if let d = Double(text) { return .constant(.attribute(.double(d))) }
            throw PredicateParseError("CAST(\"\(text)\", \"NSNumber\"): not a number", column: column)
        case ("NSNumber", .integer), ("NSNumber", .double), ("NSString", .string):
            return value
        case ("NSString", .integer(let i)): return .constant(.attribute(.string(String(i))))
        default:
            throw PredicateParseError("cannot CAST a \(constant.kindName) to \(type) (use \"NSDate\", \"NSNumber\" or \"NSString\")", column: column)
        }
    }

    // MARK: Format arguments

    private mutating func formatArgument(_ spec: Character, column: Int) throws(PredicateParseError) -> PredicateExpression {
        guard argumentIndex < arguments.count else {
            throw PredicateParseError("%\(spec) has no argument (\(arguments.count) given)", column: column)
        }
        let argument = arguments[argumentIndex]
        argumentIndex += 1
        switch spec {
        case "K":
            guard let key = argument as? String, !key.isEmpty else { throw PredicateParseError("%K needs a key path string", column: column) }
            return try parseKeyPath(first: key, column: column)
        case "d", "i", "u":
            guard let value = AttributeValue(any: argument), case .integer = value else {
                throw PredicateParseError("%\(spec) needs an integer argument, got \(type(of: argument))", column: column)
            }
            return .constant(.attribute(value))
        case "f", "g", "e":
            switch AttributeValue(any: argument) {
            case .double(let d)?: return .constant(.attribute(.double(d)))
            case .float(let f)?: return .constant(.attribute(.double(Double(f))))
            case .integer(let i)?: return .constant(.attribute(.double(Double(i))))
            default: throw PredicateParseError("%\(spec) needs a floating-point argument, got \(type(of: argument))", column: column)
            }
        default:
            guard let expression = Self.expression(for: argument) else {
                throw PredicateParseError("%@ cannot take a value of type \(type(of: argument))", column: column)
            }
            return expression
        }
    }

    /// A Swift value as a predicate constant: attribute values, object IDs, arrays and sets as
    /// lists, nil and `NSNull()` as null (what Core Data code passes for nil in an argument array).
    static func expression(for value: Any) -> PredicateExpression? {
        if let id = value as? ManagedObjectID { return .constant(.object(id)) }
        if let expression = value as? PredicateExpression { return expression }
        if let predicateValue = value as? PredicateValue { return .constant(predicateValue) }
        if let array = value as? [Any] { return list(array) }
        // A set's order is arbitrary; sorted by description, the SQL and its bindings come out
        // the same for the same set every time.
        if let set = value as? Set<AnyHashable> { return list(set.map(\.base).sorted { "\($0)" < "\($1)" }) }
        if case Optional<Any>.none = value { return .constant(.null) }
        if value is NSNull { return .constant(.null) }
        if let attribute = AttributeValue(any: value) { return .constant(.attribute(attribute)) }
        return nil
    }

    private static func list(_ elements: [Any]) -> PredicateExpression? {
        var items: [PredicateExpression] = []
        for element in elements {
            guard let item = expression(for: element) else { return nil }
            items.append(item)
        }
        return .list(items)
    }
}

extension ObjectPredicate {
    /// Parses an NSPredicate format string [NSPredicate(format:)]:
    /// `try ObjectPredicate(format: "priority >= %d AND title BEGINSWITH[c] %@", 2, "re")`.
    /// `%@` takes a value (string, number, date, object ID, array, set, nil or `NSNull()`),
    /// `%K` a key path, `%d` an integer, `%f` a double; `$NAME` is a substitution variable.
    public init(format: String, _ arguments: Any...) throws(PredicateParseError) {
        try self.init(format: format, argumentArray: arguments)
    }

    public init(format: String, argumentArray: [Any]) throws(PredicateParseError) {
        var parser = try PredicateParser(format: format, arguments: argumentArray)
        self = try parser.parse()
    }

    /// The predicate with each `$NAME` replaced by `variables["NAME"]`
    /// [withSubstitutionVariables(_:)]. A variable with no value is an error.
    public func withSubstitutionVariables(_ variables: [String: Any]) throws(PredicateParseError) -> ObjectPredicate {
        try substitute(variables, bound: [])
    }

    private func substitute(_ variables: [String: Any], bound: Set<String>) throws(PredicateParseError) -> ObjectPredicate {
        switch self {
        case .constant: return self
        case .and(let ps): return .and(try ps.map { p throws(PredicateParseError) in try p.substitute(variables, bound: bound) })
        case .or(let ps): return .or(try ps.map { p throws(PredicateParseError) in try p.substitute(variables, bound: bound) })
        case .not(let p): return .not(try p.substitute(variables, bound: bound))
        case .comparison(var c):
            c.lhs = try c.lhs.substitute(variables, bound: bound)
            c.rhs = try c.rhs.substitute(variables, bound: bound)
            return .comparison(c)
        }
    }
}

extension PredicateExpression {
    fileprivate func substitute(_ variables: [String: Any], bound: Set<String>) throws(PredicateParseError) -> PredicateExpression {
        switch self {
        case .variable(let name) where !bound.contains(name):
            guard let value = variables[name] else { throw PredicateParseError("no value for the variable $\(name)", column: 1) }
            guard let expression = PredicateParser.expression(for: value) else {
                throw PredicateParseError("$\(name) cannot take a value of type \(type(of: value))", column: 1)
            }
            return expression
        case .list(let items):
            return .list(try items.map { item throws(PredicateParseError) in try item.substitute(variables, bound: bound) })
        case let .subqueryCount(collection, variable, predicate):
            return .subqueryCount(collection: collection, variable: variable,
                                  predicate: try predicate.substituteInside(variables, bound: bound.union([variable])))
        default:
            return self
        }
    }
}

extension ObjectPredicate {
    fileprivate func substituteInside(_ variables: [String: Any], bound: Set<String>) throws(PredicateParseError) -> ObjectPredicate {
        try substitute(variables, bound: bound)
    }
}
