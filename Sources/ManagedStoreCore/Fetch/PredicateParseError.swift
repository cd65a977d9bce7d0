/// Why a predicate format string was refused, and where: "expected a value after '>=' at column 14".
public struct PredicateParseError: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String
    /// 1-based position in the format string, counted in Unicode scalars.
    public let column: Int

    public init(_ message: String, column: Int) {
        self.message = message
        self.column = column
    }

    public var description: String { "\(message) at column \(column)" }
}
