import Foundation

/// A token of the NSPredicate format language, with the column it starts at.
struct PredicateToken: Equatable {
    enum Kind: Equatable {
        case identifier(String)
        /// A reserved word, upper-cased (`AND`, `BEGINSWITH`, `NIL`, ...).
        case keyword(String)
        case string(String)
        case integer(Int64)
        case real(Double)
        /// `$name`
        case variable(String)
        /// `@count`, `@sum`, ...
        case at(String)
        /// `%@`, `%K`, `%d`, `%f` (the letter after `%`; `l` and `ll` prefixes dropped).
        case format(Character)
        /// Punctuation and symbolic operators: `( ) { } [ ] , .` and `== != < <= && ||` ...
        case symbol(String)
        case end
    }

    let kind: Kind
    let column: Int
    /// Where the token is in the format string (scalar offsets), for error messages.
    let range: Range<Int>

    /// The token as written; built only when an error message needs it.
    func text(in scalars: [Unicode.Scalar]) -> String {
        if kind == .end { return "end of input" }
        return String(String.UnicodeScalarView(scalars[range.clamped(to: 0..<scalars.count)]))
    }
}

/// Splits a format string into tokens.
struct PredicateLexer {
    static let keywords: Set<String> = [
        "AND", "OR", "NOT", "ANY", "ALL", "NONE", "SOME", "IN", "BETWEEN", "BEGINSWITH", "ENDSWITH",
        "CONTAINS", "LIKE", "MATCHES", "TRUEPREDICATE", "FALSEPREDICATE", "YES", "NO", "TRUE", "FALSE",
        "NIL", "NULL", "SUBQUERY", "CAST",
    ]

    let scalars: [Unicode.Scalar]
    private var position = 0

    init(_ text: String) { scalars = Array(text.unicodeScalars) }

    /// The tokens of `text`, and its scalars (for the tokens' text in error messages).
    static func tokenize(_ text: String) throws(PredicateParseError) -> (tokens: [PredicateToken], scalars: [Unicode.Scalar]) {
        var lexer = PredicateLexer(text)
        var tokens: [PredicateToken] = []
        while true {
            let token = try lexer.next()
            tokens.append(token)
            if token.kind == .end { return (tokens, lexer.scalars) }
        }
    }

    /// Keywords by their upper-case ASCII letters packed into two words (at most 16 letters).
    private static let packedKeywords: [Packed: String] = Dictionary(uniqueKeysWithValues: keywords.map {
        (pack($0.unicodeScalars[...])!, $0)
    })

    private struct Packed: Hashable {
        var low: UInt64 = 0
        var high: UInt64 = 0
    }

    /// The upper-cased ASCII letters of `name` packed, or nil when it cannot be a keyword.
    private static func pack(_ name: some Collection<Unicode.Scalar>) -> Packed? {
        guard name.count >= 2, name.count <= 16 else { return nil }
        var packed = Packed()
        for (i, c) in name.enumerated() {
            guard c.isASCII else { return nil }
            var byte = UInt64(c.value)
            if byte >= 0x61 && byte <= 0x7A { byte -= 32 }
            if i < 8 { packed.low |= byte << (8 * UInt64(i)) } else { packed.high |= byte << (8 * UInt64(i - 8)) }
        }
        return packed
    }

    /// The keyword a name is, upper-cased; no allocation for names that are none.
    private static func keyword(_ name: ArraySlice<Unicode.Scalar>) -> String? {
        guard let packed = pack(name) else { return nil }
        return packedKeywords[packed]
    }

    private var current: Unicode.Scalar? { position < scalars.count ? scalars[position] : nil }
    private func peek(_ offset: Int) -> Unicode.Scalar? { position + offset < scalars.count ? scalars[position + offset] : nil }

    // ASCII first: Unicode property lookups cost more than the rest of the lexer together.
    private func isIdentifierStart(_ c: Unicode.Scalar) -> Bool {
        if c.isASCII { return ("a"..."z").contains(c) || ("A"..."Z").contains(c) || c == "_" }
        return c.properties.isAlphabetic
    }
    private func isIdentifierPart(_ c: Unicode.Scalar) -> Bool { isIdentifierStart(c) || ("0"..."9").contains(c) }
    private func isWhitespace(_ c: Unicode.Scalar) -> Bool {
        if c.isASCII { return c == " " || c == "\t" || c == "\n" || c == "\r" || c == "\u{0B}" || c == "\u{0C}" }
        return c.properties.isWhitespace
    }

    private mutating func next() throws(PredicateParseError) -> PredicateToken {
        while let c = current, isWhitespace(c) { position += 1 }
        let start = position
        let column = start + 1
        func token(_ kind: PredicateToken.Kind) -> PredicateToken {
            PredicateToken(kind: kind, column: column, range: start..<position)
        }
        guard let c = current else { return PredicateToken(kind: .end, column: column, range: start..<start) }

        if isIdentifierStart(c) || c == "#" {
            // `#name` escapes a reserved word used as a key.
            let escaped = c == "#"
            if escaped { position += 1 }
            let nameStart = position
            while let d = current, isIdentifierPart(d) { position += 1 }
            if position == nameStart { throw PredicateParseError("expected a name after '#'", column: column) }
            if !escaped, let word = Self.keyword(scalars[nameStart..<position]) { return token(.keyword(word)) }
            return token(.identifier(String(String.UnicodeScalarView(scalars[nameStart..<position]))))
        }
        func isDigit(_ s: Unicode.Scalar?) -> Bool { s.map { ("0"..."9").contains($0) } ?? false }
        // A number; a minus sign belongs to it (the language has no subtraction).
        if isDigit(c) || (c == "." && isDigit(peek(1))) || (c == "-" && (isDigit(peek(1)) || (peek(1) == "." && isDigit(peek(2))))) {
            return try number(start: start, column: column)
        }
        switch c {
        case "\"", "'":
            return token(.string(try string(quote: c, column: column)))
        case "$":
            position += 1
            let nameStart = position
            while let d = current, isIdentifierPart(d) { position += 1 }
            guard position > nameStart else { throw PredicateParseError("expected a variable name after '$'", column: column) }
            return token(.variable(String(String.UnicodeScalarView(scalars[nameStart..<position]))))
        case "@":
            position += 1
            let nameStart = position
            while let d = current, isIdentifierPart(d) { position += 1 }
            guard position > nameStart else { throw PredicateParseError("expected an aggregate after '@' (@count, @sum, @avg, @min, @max)", column: column) }
            return token(.at(String(String.UnicodeScalarView(scalars[nameStart..<position])).lowercased()))
        case "%":
            position += 1
            while current == "l" || current == "h" || current == "q" { position += 1 }
            guard let spec = current, ["@", "K", "d", "i", "u", "f", "g", "e", "s"].contains(spec) else {
                throw PredicateParseError("unknown format specifier (use %@, %K, %d or %f)", column: column)
            }
            position += 1
            return token(.format(Character(spec)))
        default:
            break
        }
        // Symbols, longest first.
        let two = peek(1).map { String(c) + String($0) } ?? ""
        for symbol in ["==", "!=", "<>", "<=", "=<", ">=", "=>", "&&", "||"] where two == symbol {
            position += 2
            return token(.symbol(symbol))
        }
        if "()[]{},.=<>!".unicodeScalars.contains(c) {
            position += 1
            return token(.symbol(String(c)))
        }
        throw PredicateParseError("unexpected character '\(c)'", column: column)
    }

    private mutating func number(start: Int, column: Int) throws(PredicateParseError) -> PredicateToken {
        let negative = current == "-"
        if negative { position += 1 }
        if current == "0", let x = peek(1), x == "x" || x == "X" {
            position += 2
            let digitsStart = position
            while let d = current, d.properties.isASCIIHexDigit { position += 1 }
            let text = String(String.UnicodeScalarView(scalars[digitsStart..<position]))
            guard let value = Int64((negative ? "-" : "") + text, radix: 16) else { throw PredicateParseError("invalid hexadecimal number", column: column) }
            return PredicateToken(kind: .integer(value), column: column, range: start..<position)
        }
        var isReal = false
        // Plain integers (the common case) are read digit by digit; anything else goes through text.
        var integer: Int64? = 0
        while let d = current, ("0"..."9").contains(d) {
            if let value = integer {
                let (times10, o1) = value.multipliedReportingOverflow(by: 10)
                let (sum, o2) = times10.addingReportingOverflow(Int64(d.value - 48))
                integer = (o1 || o2) ? nil : sum
            }
            position += 1
        }
        if current == ".", let d = peek(1), ("0"..."9").contains(d) {
            isReal = true
            position += 1
            while let d = current, ("0"..."9").contains(d) { position += 1 }
        }
        if let e = current, e == "e" || e == "E" {
            let save = position
            position += 1
            if current == "+" || current == "-" { position += 1 }
            if let d = current, ("0"..."9").contains(d) {
                isReal = true
                while let d = current, ("0"..."9").contains(d) { position += 1 }
            } else {
                position = save
            }
        }
        if let d = current, isIdentifierStart(d) { throw PredicateParseError("unexpected '\(d)' after a number", column: position + 1) }
        if !isReal, let value = integer {
            return PredicateToken(kind: .integer(negative ? -value : value), column: column, range: start..<position)
        }
        let text = String(String.UnicodeScalarView(scalars[start..<position]))
        if !isReal, let value = Int64(text) { return PredicateToken(kind: .integer(value), column: column, range: start..<position) }
        guard let value = Double(text), value.isFinite else { throw PredicateParseError("number out of range", column: column) }
        return PredicateToken(kind: .real(value), column: column, range: start..<position)
    }

    private mutating func string(quote: Unicode.Scalar, column: Int) throws(PredicateParseError) -> String {
        position += 1
        var result = String.UnicodeScalarView()
        while true {
            guard let c = current else { throw PredicateParseError("unterminated string", column: column) }
            position += 1
            if c == quote { return String(result) }
            guard c == "\\" else { result.append(c); continue }
            guard let e = current else { throw PredicateParseError("unterminated string", column: column) }
            position += 1
            switch e {
            case "n": result.append("\n")
            case "t": result.append("\t")
            case "r": result.append("\r")
            case "0": result.append("\0")
            case "u":
                var value: UInt32 = 0
                for _ in 0..<4 {
                    guard let h = current, let digit = h.properties.isASCIIHexDigit ? UInt32(String(h), radix: 16) : nil else {
                        throw PredicateParseError("expected four hex digits after \\u", column: position + 1)
                    }
                    value = value * 16 + digit
                    position += 1
                }
                guard let scalar = Unicode.Scalar(value) else { throw PredicateParseError("\\u escape is not a character", column: position) }
                result.append(scalar)
            default: result.append(e)  // \" \' \\ and any other escaped character stand for themselves
            }
        }
    }
}
