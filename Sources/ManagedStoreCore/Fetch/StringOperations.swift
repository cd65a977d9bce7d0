import Foundation

/// The string semantics of predicates, in one place: the in-memory evaluator calls these
/// directly and the SQLite store calls the same functions through `ms_fold` and `ms_strop`
/// (see `SQLFunctions`), so `[c]`, `[d]`, LIKE and MATCHES can never answer differently in
/// SQL and in memory.
package enum StringOperations {
    /// Case folding (`[c]`, full Unicode: "ß" folds to "ss") and diacritic folding (`[d]`),
    /// then canonical composition, so canonically equal strings fold alike.
    package static func fold(_ text: String, _ options: ComparisonOptions) -> String {
        guard !options.isEmpty else { return text }
        var foldOptions: String.CompareOptions = []
        if options.contains(.caseInsensitive) { foldOptions.insert(.caseInsensitive) }
        if options.contains(.diacriticInsensitive) { foldOptions.insert(.diacriticInsensitive) }
        return text.folding(options: foldOptions, locale: nil).precomposedStringWithCanonicalMapping
    }

    /// Operator codes shared with the SQL function `ms_strop(code, value, pattern, flags)`.
    package enum Code: Int32 {
        case beginsWith = 1, endsWith, contains, like, matches
    }

    /// Whether `value` satisfies the string operator against `pattern`, after folding both
    /// (for MATCHES only the value is folded; `[c]` also makes the expression case-insensitive).
    package static func evaluate(_ code: Code, _ value: String, _ pattern: String, _ options: ComparisonOptions) -> Bool {
        let v = fold(value, options)
        switch code {
        case .beginsWith: return Array(v.utf8).starts(with: fold(pattern, options).utf8)
        case .endsWith: return Array(v.utf8).reversed().starts(with: Array(fold(pattern, options).utf8).reversed())
        case .contains: return containsBytes(Array(v.utf8), Array(fold(pattern, options).utf8))
        case .like: return like(Array(v.unicodeScalars), Array(fold(pattern, options).unicodeScalars))
        case .matches: return WholeStringRegex.shared.matchesWhole(v, pattern: pattern, caseInsensitive: options.contains(.caseInsensitive))
        }
    }

    /// UTF-8 is self-synchronizing, so a byte substring is a code-point substring.
    private static func containsBytes(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        if needle.isEmpty { return true }
        guard needle.count <= haystack.count else { return false }
        let first = needle[0]
        var i = 0
        while i <= haystack.count - needle.count {
            if haystack[i] == first && haystack[i..<(i + needle.count)].elementsEqual(needle) { return true }
            i += 1
        }
        return false
    }

    /// LIKE: `*` is any run of characters, `?` exactly one (one code point); `%`, `_` and
    /// everything else match themselves. Greedy matching with one backtrack point: O(n·m).
    static func like(_ s: [Unicode.Scalar], _ p: [Unicode.Scalar]) -> Bool {
        var si = 0, pi = 0
        var starP = -1, starS = 0
        while si < s.count {
            if pi < p.count && (p[pi] == "?" || (p[pi] != "*" && p[pi] == s[si])) {
                si += 1; pi += 1
            } else if pi < p.count && p[pi] == "*" {
                starP = pi; starS = si; pi += 1
            } else if starP >= 0 {
                pi = starP + 1; starS += 1; si = starS
            } else {
                return false
            }
        }
        while pi < p.count && p[pi] == "*" { pi += 1 }
        return pi == p.count
    }

    /// Whether `pattern` is a regular expression MATCHES accepts (ICU syntax, the subset that
    /// runs in linear time: see `LinearRegexParser`).
    static func isValidRegex(_ pattern: String) -> Bool { WholeStringRegex.shared.isValid(pattern) }

    /// Why MATCHES refuses `pattern`, nil when it accepts it.
    static func regexError(_ pattern: String) -> LinearRegexError? { WholeStringRegex.shared.error(pattern) }
}

