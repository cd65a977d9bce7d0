import ManagedStoreCore

/// SQL text that a model builds once and runs often (load a row, read a relationship's keys).
///
/// Connections cache its statement by the object's identity instead of by the text: hashing a
/// 150-character statement to find it cost more than a thousand instructions per read, a few
/// per object read by key. The cache holds the object too, so its identity cannot be reused while cached.
final class PreparedSQL: Sendable {
    let text: String
    init(_ text: String) { self.text = text }
}
