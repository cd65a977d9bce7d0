/// Whether two values are the same value as the stores keep them, for grouping and uniqueness:
/// strings by their code points (SQLite's BINARY collation and PostgreSQL's "C" compare bytes),
/// where Swift's `==` takes canonically equivalent strings as one ("é" and "e\u{301}"); every
/// other value as `AttributeValue` compares it.
package enum StoredValueIdentity {
    package static func same(_ a: AttributeValue, _ b: AttributeValue) -> Bool {
        if case .string(let x) = a, case .string(let y) = b { return x.unicodeScalars.elementsEqual(y.unicodeScalars) }
        return a == b
    }

    /// A hash that agrees with `same`.
    package static func hash(_ value: AttributeValue, into hasher: inout Hasher) {
        guard case .string(let text) = value else { hasher.combine(value); return }
        hasher.combine(0x5354_5249_4E47 as UInt64)  // "STRING": apart from other kinds' hashes
        for scalar in text.unicodeScalars { hasher.combine(scalar.value) }
    }
}
