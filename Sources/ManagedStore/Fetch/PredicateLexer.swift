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
    /// The token as written, for error messages.
    let text: String
}

/// Splits a format string into tokens.
struct PredicateLexer {
    static let keywords: Set<String> = [
        "AND", "OR", "NOT", "ANY", "ALL", "NONE", "SOME", "IN", "BETWEEN", "BEGINSWITH", "ENDSWITH",
        "CONTAINS", "LIKE", "MATCHES", "TRUEPREDICATE", "FALSEPREDICATE", "YES", "NO", "TRUE", "FALSE",
        "NIL", "NULL", "SUBQUERY", "CAST",
    ]

    private let scalars: [Unicode.Scalar]
    private var position = 0

    init(_ text: String) { scalars = Array(text.unicodeScalars) }

    static func tokenize(_ text: String) throws(PredicateParseError) -> [PredicateToken] {
        var lexer = PredicateLexer(text)
        var tokens: [PredicateToken] = []
        while true {
            let token = try lexer.next()
            tokens.append(token)
            if token.kind == .end { return tokens }
        }
    }

    private var current: Unicode.Scalar? { position < scalars.count ? scalars[position] : nil }
    private func peek(_ offset: Int) -> Unicode.Scalar? { position + offset < scalars.count ? scalars[position + offset] : nil }

    private func isIdentifierStart(_ c: Unicode.Scalar) -> Bool { c.properties.isAlphabetic || c == "_" }
    private func isIdentifierPart(_ c: Unicode.Scalar) -> Bool { isIdentifierStart(c) || ("0"..."9").contains(c) }

    private mutating func next() throws(PredicateParseError) -> PredicateToken {
        while let c = current, c.properties.isWhitespace { position += 1 }
        let start = position
        let column = start + 1
        func token(_ kind: PredicateToken.Kind) -> PredicateToken {
            PredicateToken(kind: kind, column: column, text: String(String.UnicodeScalarView(scalars[start..<position])))
        }
        guard let c = current else { return PredicateToken(kind: .end, column: column, text: "end of input") }

        if isIdentifierStart(c) || c == "#" {
            // `#name` escapes a reserved word used as a key.
            let escaped = c == "#"
            if escaped { position += 1 }
            let nameStart = position
            while let d = current, isIdentifierPart(d) { position += 1 }
            let name = String(String.UnicodeScalarView(scalars[nameStart..<position]))
            if name.isEmpty { throw PredicateParseError("expected a name after '#'", column: column) }
            let upper = name.uppercased()
            if !escaped && Self.keywords.contains(upper) { return token(.keyword(upper)) }
            return token(.identifier(name))
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
            return PredicateToken(kind: .integer(value), column: column, text: (negative ? "-0x" : "0x") + text)
        }
        var isReal = false
        while let d = current, ("0"..."9").contains(d) { position += 1 }
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
        let text = String(String.UnicodeScalarView(scalars[start..<position]))
        if !isReal, let value = Int64(text) { return PredicateToken(kind: .integer(value), column: column, text: text) }
        guard let value = Double(text), value.isFinite else { throw PredicateParseError("number out of range", column: column) }
        return PredicateToken(kind: .real(value), column: column, text: text)
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
