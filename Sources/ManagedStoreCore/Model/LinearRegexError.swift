/// Why `LinearRegex` refused a pattern, and where.
///
/// The message is shown to clients (a MATCHES predicate or a model's `pattern` that is refused
/// comes back as a 400 with it), so every case names the construct it found, not only "invalid".
struct LinearRegexError: Error, Equatable, Sendable, CustomStringConvertible {
    enum Kind: Equatable, Sendable {
        // Constructs the engine does not run: each would need backtracking, or is outside the
        // subset it implements.
        /// `\1`…`\9`, `\k<name>`.
        case backreference(String)
        /// `(?=` and `(?!`.
        case lookahead
        /// `(?<=` and `(?<!`.
        case lookbehind
        /// `(?>`.
        case atomicGroup
        /// `*+`, `++`, `?+`, `{n,m}+`.
        case possessiveQuantifier
        /// A `(?…` form other than the ones supported (`(?:`, `(?<name>`, `(?#…)`, flags).
        case unsupportedGroup(String)
        /// An inline flag other than `i`, `m`, `s`, `x`.
        case unsupportedFlag(Character)
        /// An escape ICU knows but the engine does not run (`\X`, `\N{…}`, `\R` inside `[…]`…).
        case unsupportedEscape(String)
        /// A `\p{…}` name that is neither a general category nor one of the few binary properties.
        case unsupportedProperty(String)
        /// `&&` or `--` inside `[…]`.
        case setOperation(String)
        /// `[` inside `[…]`.
        case nestedSet
        /// `[:name:]`.
        case posixClass

        // Malformed patterns (ICU refuses these too, except `unknownEscape`, which ICU reads
        // as the letter itself: refusing it keeps a typo from silently meaning something else).
        case trailingBackslash
        case unknownEscape(String)
        case malformedEscape(String)
        case nothingToRepeat
        case quantifierAfterQuantifier
        case malformedInterval
        case intervalOutOfOrder(min: Int, max: Int)
        case unmatchedClosingParenthesis
        case missingClosingParenthesis
        case unescapedClosingBrace
        case unclosedSet
        case invalidRange(Unicode.Scalar, Unicode.Scalar)
        case malformedGroupName
        case duplicateGroupName(String)
        case unclosedComment
        case emptyFlagGroup

        // Limits that keep memory and time bounded whatever the pattern.
        case countTooLarge(limit: Int)
        case nestingTooDeep(limit: Int)
        case programTooLarge(limit: Int)
        case compileWorkTooLarge(limit: Int)
    }

    let kind: Kind
    /// Where the problem starts, as an offset in Unicode scalars from the start of the pattern (0-based).
    let position: Int

    var description: String { "\(what) (at offset \(position))" }

    /// The problem without its position.
    var what: String {
        switch kind {
        case .backreference(let text): return "backreferences (\(text)) are not supported"
        case .lookahead: return "lookahead (?= (?! is not supported"
        case .lookbehind: return "lookbehind (?<= (?<! is not supported"
        case .atomicGroup: return "atomic groups (?> are not supported"
        case .possessiveQuantifier: return "possessive quantifiers (*+ ++ ?+ {n,m}+) are not supported"
        case .unsupportedGroup(let text): return "the group syntax \(text) is not supported"
        case .unsupportedFlag(let flag): return "the inline flag '\(flag)' is not supported (only i, m, s and x are)"
        case .unsupportedEscape(let text): return "the escape \(text) is not supported"
        case .unsupportedProperty(let name): return "the property \\p{\(name)} is not supported (general categories such as L, Lu, Nd are, and Any, ASCII, Assigned, Alphabetic, White_Space, Uppercase, Lowercase)"
        case .setOperation(let op): return "set operations (\(op)) inside [...] are not supported"
        case .nestedSet: return "nested sets ([ inside [...]) are not supported; escape a literal [ as \\["
        case .posixClass: return "POSIX classes [:name:] are not supported; use \\p{name}"
        case .trailingBackslash: return "the pattern ends with a lone backslash"
        case .unknownEscape(let text): return "\(text) is not a known escape"
        case .malformedEscape(let text): return "malformed escape \(text)"
        case .nothingToRepeat: return "the quantifier has nothing to repeat"
        case .quantifierAfterQuantifier: return "a quantifier cannot follow another quantifier"
        case .malformedInterval: return "malformed {n,m} interval (a literal { must be escaped as \\{)"
        case .intervalOutOfOrder(let min, let max): return "{\(min),\(max)}: the maximum is below the minimum"
        case .unmatchedClosingParenthesis: return "unmatched )"
        case .missingClosingParenthesis: return "the group opened here is never closed"
        case .unescapedClosingBrace: return "a literal } must be escaped as \\}"
        case .unclosedSet: return "the set [... opened here is never closed"
        case .invalidRange(let low, let high): return "invalid range \(low.escapedForMessage)-\(high.escapedForMessage) in [...]"
        case .malformedGroupName: return "malformed group name (ASCII letters then letters or digits)"
        case .duplicateGroupName(let name): return "the group name \(name) is used twice"
        case .unclosedComment: return "the comment (?# opened here is never closed"
        case .emptyFlagGroup: return "(?) has no flags"
        case .countTooLarge(let limit): return "repetition count above the limit of \(limit)"
        case .nestingTooDeep(let limit): return "groups nested deeper than the limit of \(limit)"
        case .programTooLarge(let limit): return "the compiled pattern exceeds the limit of \(limit) instructions (counted repetition {n,m} copies its operand)"
        case .compileWorkTooLarge(let limit): return "compiling the pattern writes more than \(limit) instructions in all (counted repetition copies its operand, each enclosing group copies its contents, and copies that {0} discards count too)"
        }
    }
}

extension Unicode.Scalar {
    /// The scalar as a message shows it: printable ASCII as itself, anything else as `\x{…}`.
    var escapedForMessage: String {
        value >= 0x21 && value < 0x7F ? String(self) : "\\x{" + String(value, radix: 16, uppercase: true) + "}"
    }
}
