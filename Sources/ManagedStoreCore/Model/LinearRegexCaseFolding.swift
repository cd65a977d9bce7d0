/// Case-insensitive matching for `LinearRegex`: simple (one scalar to one scalar) Unicode case
/// folding, derived from the standard library's case mappings.
///
/// Two scalars match case-insensitively when they have the same fold key: "k", "K" and the
/// Kelvin sign U+212A all fold to "k"; "ſ" to "s"; "ς" and "Σ" to "σ". A set matches a scalar
/// when any scalar of the same fold class is in it, which is ICU's closure of a set over case.
///
/// What is deliberately not done: full case folding, where one scalar folds to several ("ß" to
/// "ss", "ﬀ" to "ff"). ICU applies it to literal strings, so `(?i)ss` matches "ß" there and not
/// here. Matching one text scalar against two pattern scalars would need another kind of
/// instruction and is rare enough in MATCHES patterns to leave out; "ß" still matches "ẞ", and
/// a `[c]` predicate folds the value itself ("ß" to "ss") before the pattern sees it.
enum LinearRegexCaseFolding {
    /// The fold key of `c`: the scalar every member of its case class folds to.
    static func key(_ c: Unicode.Scalar) -> Unicode.Scalar {
        if c.value < 0x80 {
            // ASCII, the common case, without touching the property tables.
            return c.value >= 0x41 && c.value <= 0x5A ? Unicode.Scalar(UInt8(c.value + 0x20)) : c
        }
        let properties = c.properties
        // Scalars that case folding leaves alone are their own key. This also keeps the Turkic
        // dotless "ı" apart from "i": its uppercase is "I", but it does not fold to "i".
        guard properties.changesWhenCaseFolded else { return c }
        if let lower = single(properties.lowercaseMapping), lower != c { return lower }
        if let upper = single(properties.uppercaseMapping), upper != c {
            // "ſ" has no lowercase of its own: it folds to the lowercase of its uppercase, "s".
            // Cherokee small letters fold to their uppercase (whose lowercase is themselves).
            if let lower = single(upper.properties.lowercaseMapping), lower != upper, lower != c { return lower }
            return upper
        }
        return c
    }

    /// Every scalar with the same fold key as `c`, `c` included.
    static func equivalents(of c: Unicode.Scalar) -> [Unicode.Scalar] {
        if c.value < 0x80 { return asciiEquivalents[Int(c.value)] }
        return computedEquivalents(of: c)
    }

    /// Asked 128 times for every case-insensitive set a pattern compiles (its ASCII bitmap).
    private static let asciiEquivalents: [[Unicode.Scalar]] = (0..<0x80).map { computedEquivalents(of: Unicode.Scalar(UInt8($0))) }

    private static func computedEquivalents(of c: Unicode.Scalar) -> [Unicode.Scalar] {
        let k = key(c)
        guard let others = members[k.value] else { return [k] }
        return [k] + others
    }

    /// The scalars whose key is not themselves, grouped by key. Built once, on first use: one
    /// pass over the Basic and Supplementary Multilingual Planes, where every cased script lives.
    private static let members: [UInt32: [Unicode.Scalar]] = {
        var members: [UInt32: [Unicode.Scalar]] = [:]
        for value in UInt32(0x80)...0x1FFFF {
            guard let scalar = Unicode.Scalar(value), scalar.properties.changesWhenCaseFolded else { continue }
            let k = key(scalar)
            if k != scalar { members[k.value, default: []].append(scalar) }
        }
        // ASCII capitals: key() folds them arithmetically, so add them here.
        for value in UInt32(0x41)...0x5A { members[value + 0x20, default: []].append(Unicode.Scalar(UInt8(value))) }
        return members
    }()

    /// The scalar of a one-scalar mapping, nil for a mapping to several scalars.
    private static func single(_ mapping: String) -> Unicode.Scalar? {
        var scalars = mapping.unicodeScalars.makeIterator()
        guard let first = scalars.next(), scalars.next() == nil else { return nil }
        return first
    }
}
