import ManagedStoreCore

/// SQL text that a model builds once and runs often (load a row, read a relationship's keys).
///
/// Connections cache its statement by the object's identity instead of by the text: hashing a
/// long statement to find it, on every read of one object by key, cost more than the rest of
/// the lookup. The cache holds the object too, so its identity cannot be reused while cached.
final class PreparedSQL: Sendable {
    let text: String
    init(_ text: String) { self.text = text }
}
