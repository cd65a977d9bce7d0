/// Parses a pattern in ICU's syntax straight into a `LinearRegex` program, without recursion.
///
/// Supported, with ICU's meaning:
/// - literals, and `\` before any scalar that is not an ASCII letter or digit;
/// - `.` (no line terminator; with `s` anything, CR LF as one unit as ICU does);
/// - `\t \n \r \f \e \a`, `\cX`, `\0ooo`, `\xhh`, `\x{h…}`, `\uhhhh`, `\Uhhhhhhhh`;
/// - `\d \D \w \W \s \S \h \H \v \V`, `\p{…}` / `\P{…}` (general categories by short or long
///   name, `gc=…`, and Any, ASCII, Assigned, Alphabetic, White_Space, Uppercase, Lowercase), `\R`;
/// - bracket sets with ranges, negation, escapes and the classes above inside;
/// - `( )`, `(?: )`, `(?<name> )` (no capture is kept), `(?#comment)`, `\Q…\E`;
/// - `|`, `* + ? {n} {n,} {n,m}` and their lazy forms;
/// - `^ $ \A \z \Z \G \b \B`;
/// - inline flags `(?imsx-imsx)` and `(?imsx-imsx: )`, scoped to the enclosing group as in ICU.
///
/// Refused with a `LinearRegexError` naming the construct: backreferences, lookaround, atomic
/// groups, possessive quantifiers, conditionals and other `(?…` forms, flags other than i m s x,
/// `\X`, `\N{…}`, unknown letter escapes, set operations and nested sets, POSIX `[:name:]`,
/// counts above `LinearRegex.countLimit`, nesting deeper than `LinearRegex.nestingLimit`,
/// programs (or set tables) above `LinearRegex.instructionLimit`, and compilations writing more
/// than `LinearRegex.compileWorkLimit` instructions. So both compiling and matching are bounded.
struct LinearRegexParser {
    private typealias Fragment = LinearRegexFragments.Fragment
    private typealias Error = LinearRegexError

    /// The `(?imsx)` flags in effect.
    private struct Flags {
        var caseInsensitive = false
        var multiline = false
        var dotAll = false
        /// `x`: white space and `#` comments between tokens are ignored.
        var extended = false
    }

    /// A group being parsed (the whole pattern is the outermost one).
    private struct Frame {
        var flags: Flags
        /// Where the `(` is, for an error if it is never closed.
        let opening: Int
        /// The alternatives already closed by `|`.
        var branches: [Fragment] = []
        var branchesSize = 0
        /// The alternative being built, without `pending`.
        var current = Fragment()
        /// The last atom, kept apart so that a quantifier that follows can wrap it.
        var pending: Fragment?
        /// Whether `pending` may take a quantifier (an assertion such as `\b` may not).
        var pendingRepeatable = false
        /// Whether `pending` already has one (`a**` is an error, as in ICU).
        var pendingQuantified = false

        var size: Int { branchesSize + current.count + (pending?.count ?? 0) }
    }

    private let pattern: [Unicode.Scalar]
    private var index = 0
    private var frames: [Frame]
    /// The instructions held by every frame but the innermost: with it, the total being built
    /// is checked in constant time against the limit.
    private var sizeOfOuterFrames = 0
    private var sets: [LinearRegexScalarSet] = []
    /// Where each set is in `sets`: equal sets share one entry (and one memo slot when matching).
    private var setIndices: [LinearRegexScalarSet: Int] = [:]
    private var groupNames: Set<String> = []
    /// Inside `\Q…\E`.
    private var quoting = false
    /// Instructions written so far (appended, copied by repetition, gathered by a group),
    /// kept or not. `(?:a{9000}){0}` writes 9,000 instructions and keeps none, and each level
    /// of `(x(x(…)))` copies what it holds: without this bound, a long pattern made of such
    /// pieces would cost far more to compile than its program size says.
    private var work = 0

    init(_ pattern: String, caseInsensitive: Bool) {
        self.pattern = Array(pattern.unicodeScalars)
        var flags = Flags()
        flags.caseInsensitive = caseInsensitive
        frames = [Frame(flags: flags, opening: 0)]
    }

    mutating func parse() throws(LinearRegexError) -> LinearRegex {
        while true {
            if quoting {
                guard index < pattern.count else { break }
                if pattern[index] == "\\" && peek(1) == "E" {
                    index += 2
                    quoting = false
                } else {
                    try addLiteral(pattern[index], at: index)
                    index += 1
                }
                continue
            }
            skipInsignificant()
            guard index < pattern.count else { break }
            let start = index
            let c = pattern[index]
            index += 1
            switch c {
            case "(": try openGroup(at: start)
            case ")": try closeGroup(at: start)
            case "|": try alternative(at: start)
            case "*": try quantify(min: 0, max: nil, at: start)
            case "+": try quantify(min: 1, max: nil, at: start)
            case "?": try quantify(min: 0, max: 1, at: start)
            case "{":
                let (min, max) = try interval(at: start)
                try quantify(min: min, max: max, at: start)
            case "}": throw Error(kind: .unescapedClosingBrace, position: start)
            case "[": try addSet(try bracketSet(at: start), at: start)
            case ".": try addDot(at: start)
            case "^": try addAtom([.assert(flags.multiline ? .startOfLine : .startOfText)], repeatable: true, at: start)
            case "$": try addAtom([.assert(flags.multiline ? .endOfLine : .endOfTextOrBeforeFinalTerminator)], repeatable: true, at: start)
            case "\\": try escape(at: start)
            default: try addLiteral(c, at: start)
            }
        }
        if frames.count > 1 { throw Error(kind: .missingClosingParenthesis, position: frames[frames.count - 1].opening) }
        var program = try finish(frames[0], at: pattern.count)
        program.append(.match)
        try LinearRegexFragments.check(program.count, at: pattern.count)
        return LinearRegex(instructions: program, sets: sets)
    }

    // MARK: Frames and atoms

    private var flags: Flags {
        get { frames[frames.count - 1].flags }
        set { frames[frames.count - 1].flags = newValue }
    }

    /// Moves the pending atom into the current alternative.
    private mutating func flushPending(at position: Int) throws(LinearRegexError) {
        let last = frames.count - 1
        if let pending = frames[last].pending {
            try addWork(pending.count, at: position)
            frames[last].current += pending
            frames[last].pending = nil
        }
    }

    private mutating func addWork(_ instructions: Int, at position: Int) throws(LinearRegexError) {
        work += instructions
        if work > LinearRegex.compileWorkLimit {
            throw Error(kind: .compileWorkTooLarge(limit: LinearRegex.compileWorkLimit), position: position)
        }
    }

    private mutating func addAtom(_ atom: Fragment, repeatable: Bool, at position: Int) throws(LinearRegexError) {
        try flushPending(at: position)
        let last = frames.count - 1
        frames[last].pending = atom
        frames[last].pendingRepeatable = repeatable
        frames[last].pendingQuantified = false
        try LinearRegexFragments.check(sizeOfOuterFrames + frames[last].size, at: position)
    }

    private mutating func addLiteral(_ c: Unicode.Scalar, at position: Int) throws(LinearRegexError) {
        if flags.caseInsensitive && (c.properties.changesWhenCaseMapped || LinearRegexCaseFolding.key(c) != c) {
            try addAtom([.foldedScalar(LinearRegexCaseFolding.key(c))], repeatable: true, at: position)
        } else {
            try addAtom([.scalar(c)], repeatable: true, at: position)
        }
    }

    private mutating func setIndex(_ set: LinearRegexScalarSet, at position: Int) throws(LinearRegexError) -> Int {
        if let existing = setIndices[set] { return existing }
        // Sets that `{0}` discards stay in the table: bound it like the program.
        try LinearRegexFragments.check(sets.count + 1, at: position)
        sets.append(set)
        setIndices[set] = sets.count - 1
        return sets.count - 1
    }

    private mutating func addSet(_ set: LinearRegexScalarSet, at position: Int) throws(LinearRegexError) {
        // At most `instructionLimit` sets, so the index fits.
        try addAtom([.set(Int32(setIndex(set, at: position)))], repeatable: true, at: position)
    }

    private mutating func addDot(at position: Int) throws(LinearRegexError) {
        if flags.dotAll {
            var notCR = LinearRegexScalarSet(items: [.range(0x0D, 0x0D)])
            notCR.negated = true
            try addAtom(LinearRegexFragments.crlfUnit(otherSet: setIndex(notCR, at: position)), repeatable: true, at: position)
        } else {
            try addSet(.property(.lineTerminator, negated: true), at: position)
        }
    }

    /// `*`, `+`, `?`, `{n,m}` just read, applied to the pending atom; then a lazy `?` or a
    /// possessive `+` may follow.
    private mutating func quantify(min: Int, max: Int?, at position: Int) throws(LinearRegexError) {
        skipInsignificant()
        if peek() == "?" {
            index += 1
        } else if peek() == "+" {
            throw Error(kind: .possessiveQuantifier, position: position)
        }
        let last = frames.count - 1
        guard let pending = frames[last].pending, frames[last].pendingRepeatable else {
            throw Error(kind: .nothingToRepeat, position: position)
        }
        if frames[last].pendingQuantified { throw Error(kind: .quantifierAfterQuantifier, position: position) }
        // The pending atom is already counted in the total; check the repetition's own size first.
        let repeated = try LinearRegexFragments.repetition(pending, min: min, max: max, at: position)
        try addWork(repeated.count, at: position)
        frames[last].pending = repeated
        frames[last].pendingQuantified = true
        try LinearRegexFragments.check(sizeOfOuterFrames + frames[last].size, at: position)
    }

    /// `{n}`, `{n,}`, `{n,m}` after the `{`.
    private mutating func interval(at start: Int) throws(LinearRegexError) -> (Int, Int?) {
        guard let min = try decimalCount(at: start) else { throw Error(kind: .malformedInterval, position: start) }
        var max: Int? = min
        skipInsignificant()
        if peek() == "," {
            index += 1
            max = try decimalCount(at: start)
        }
        skipInsignificant()
        guard peek() == "}" else { throw Error(kind: .malformedInterval, position: start) }
        index += 1
        if let max, max < min { throw Error(kind: .intervalOutOfOrder(min: min, max: max), position: start) }
        return (min, max)
    }

    /// A decimal count, nil if there are no digits. Refused above `countLimit`; digits are
    /// read whatever their number, with no arithmetic that could overflow.
    private mutating func decimalCount(at start: Int) throws(LinearRegexError) -> Int? {
        skipInsignificant()
        var value = 0, digits = 0
        while let c = peek(), let digit = Self.digitValue(c, radix: 10) {
            index += 1
            digits += 1
            // Checked at every digit, so the value never exceeds ten times the limit.
            value = value * 10 + digit
            if value > LinearRegex.countLimit { throw Error(kind: .countTooLarge(limit: LinearRegex.countLimit), position: start) }
            skipInsignificant()
        }
        return digits > 0 ? value : nil
    }

    // MARK: Groups

    private mutating func openGroup(at start: Int) throws(LinearRegexError) {
        skipInsignificant()
        guard peek() == "?" else { return try pushFrame(flags, at: start) }
        index += 1
        skipInsignificant()
        let kind = peek()
        switch kind {
        case ":":
            index += 1
            try pushFrame(flags, at: start)
        case "=", "!":
            throw Error(kind: .lookahead, position: start)
        case ">":
            throw Error(kind: .atomicGroup, position: start)
        case "#":
            // A comment, transparent to what surrounds it (`a(?#x)*` repeats the a).
            while index < pattern.count && pattern[index] != ")" { index += 1 }
            guard index < pattern.count else { throw Error(kind: .unclosedComment, position: start) }
            index += 1
        case "<":
            index += 1
            if peek() == "=" || peek() == "!" { throw Error(kind: .lookbehind, position: start) }
            var name = ""
            while let c = peek(), c.isASCII, c.properties.isAlphabetic || (!name.isEmpty && Self.digitValue(c, radix: 10) != nil) {
                name.unicodeScalars.append(c)
                index += 1
            }
            guard !name.isEmpty, peek() == ">" else { throw Error(kind: .malformedGroupName, position: start) }
            index += 1
            guard groupNames.insert(name).inserted else { throw Error(kind: .duplicateGroupName(name), position: start) }
            try pushFrame(flags, at: start)
        default:
            try flagGroup(at: start)
        }
    }

    /// `(?imsx-imsx)` sets flags to the end of the enclosing group; `(?imsx-imsx:…)` inside its own.
    private mutating func flagGroup(at start: Int) throws(LinearRegexError) {
        var newFlags = flags
        var turningOff = false
        var letters = 0
        while let c = peek() {
            switch c {
            case "i": newFlags.caseInsensitive = !turningOff
            case "m": newFlags.multiline = !turningOff
            case "s": newFlags.dotAll = !turningOff
            case "x": newFlags.extended = !turningOff
            case "-": turningOff = true
            case "w", "d", "u": throw Error(kind: .unsupportedFlag(Character(c)), position: index)
            case ")":
                index += 1
                guard letters > 0 else { throw Error(kind: .emptyFlagGroup, position: start) }
                // Nothing to repeat after a flag group: `(?i)*` is an error, as in ICU.
                try flushPending(at: start)
                flags = newFlags
                return
            case ":":
                index += 1
                return try pushFrame(newFlags, at: start)
            default:
                let end = Swift.min(index + 1, pattern.count)
                throw Error(kind: .unsupportedGroup(String(String.UnicodeScalarView(pattern[start..<end]))), position: start)
            }
            index += 1
            letters += 1
            skipInsignificant()
        }
        throw Error(kind: .missingClosingParenthesis, position: start)
    }

    private mutating func pushFrame(_ flags: Flags, at start: Int) throws(LinearRegexError) {
        if frames.count > LinearRegex.nestingLimit { throw Error(kind: .nestingTooDeep(limit: LinearRegex.nestingLimit), position: start) }
        sizeOfOuterFrames += frames[frames.count - 1].size
        frames.append(Frame(flags: flags, opening: start))
    }

    private mutating func closeGroup(at position: Int) throws(LinearRegexError) {
        guard frames.count > 1 else { throw Error(kind: .unmatchedClosingParenthesis, position: position) }
        let frame = frames.removeLast()
        sizeOfOuterFrames -= frames[frames.count - 1].size
        let group = try finish(frame, at: position)
        try addWork(group.count, at: position)
        try addAtom(group, repeatable: true, at: position)
    }

    private mutating func alternative(at position: Int) throws(LinearRegexError) {
        try flushPending(at: position)
        let last = frames.count - 1
        frames[last].branches.append(frames[last].current)
        frames[last].branchesSize += frames[last].current.count
        frames[last].current = []
    }

    /// The frame's alternatives as one fragment.
    private func finish(_ frame: Frame, at position: Int) throws(LinearRegexError) -> Fragment {
        var last = frame.current
        if let pending = frame.pending { last += pending }
        return try LinearRegexFragments.alternation(frame.branches + [last], at: position)
    }

    // MARK: Escapes

    /// What an escape stands for.
    private enum Escaped {
        case scalar(Unicode.Scalar)
        case set(LinearRegexScalarSet)
        case assertion(LinearRegex.Assertion)
        case lineBreak
        case quote
    }

    /// An escape outside brackets, after the `\`.
    private mutating func escape(at start: Int) throws(LinearRegexError) {
        switch try escaped(at: start, inSet: false) {
        case .scalar(let c): try addLiteral(c, at: start)
        case .set(let set): try addSet(set, at: start)
        case .assertion(let assertion): try addAtom([.assert(assertion)], repeatable: false, at: start)
        case .lineBreak:
            // The line terminators but CR, which the unit handles itself.
            let vertical = LinearRegexScalarSet(items: [.range(0x0A, 0x0C), .range(0x85, 0x85), .range(0x2028, 0x2029)])
            try addAtom(LinearRegexFragments.crlfUnit(otherSet: setIndex(vertical, at: start)), repeatable: true, at: start)
        case .quote:
            quoting = true
        }
    }

    /// Decodes the escape whose `\` is at `start` (the index is just past it).
    private mutating func escaped(at start: Int, inSet: Bool) throws(LinearRegexError) -> Escaped {
        guard let c = peek() else { throw Error(kind: .trailingBackslash, position: start) }
        index += 1
        let text = "\\" + String(c)
        func property(_ p: LinearRegexProperty, _ negated: Bool) -> Escaped { .set(.property(p, negated: negated)) }
        switch c {
        case "a": return .scalar("\u{07}")
        case "e": return .scalar("\u{1B}")
        case "f": return .scalar("\u{0C}")
        case "n": return .scalar("\n")
        case "r": return .scalar("\r")
        case "t": return .scalar("\t")
        case "c":
            // \cX: the control character X & 0x1F, for a printable ASCII X.
            guard let x = peek(), x.value >= 0x20 && x.value < 0x7F else { throw Error(kind: .malformedEscape("\\c"), position: start) }
            index += 1
            return .scalar(Unicode.Scalar(UInt8(x.value & 0x1F)))
        case "0":
            // \0ooo: up to three octal digits, at most 0377.
            var value = 0, digits = 0
            while digits < 3, let d = peek().flatMap({ Self.digitValue($0, radix: 8) }), value * 8 + d <= 0o377 {
                value = value * 8 + d
                digits += 1
                index += 1
            }
            guard digits > 0 else { throw Error(kind: .malformedEscape("\\0"), position: start) }
            return .scalar(Unicode.Scalar(UInt8(value)))
        case "x":
            if peek() == "{" {
                index += 1
                let value = try hex(minDigits: 1, maxDigits: 6, at: start, text: "\\x{")
                guard peek() == "}" else { throw Error(kind: .malformedEscape("\\x{"), position: start) }
                index += 1
                return .scalar(try codePoint(value, at: start, text: "\\x{"))
            }
            return .scalar(try codePoint(try hex(minDigits: 1, maxDigits: 2, at: start, text: text), at: start, text: text))
        case "u": return .scalar(try codePoint(try hex(minDigits: 4, maxDigits: 4, at: start, text: text), at: start, text: text))
        case "U": return .scalar(try codePoint(try hex(minDigits: 8, maxDigits: 8, at: start, text: text), at: start, text: text))
        case "d", "D": return property(.digit, c == "D")
        case "w", "W": return property(.word, c == "W")
        case "s", "S": return property(.whiteSpace, c == "S")
        case "h", "H": return property(.horizontalSpace, c == "H")
        case "v", "V": return property(.lineTerminator, c == "V")
        case "p", "P":
            // In `x` mode ICU allows space between \p and its brace.
            if flags.extended { skipInsignificant() }
            guard peek() == "{" else { throw Error(kind: .malformedEscape(text), position: start) }
            index += 1
            var name = ""
            while let n = peek(), n != "}" {
                name.unicodeScalars.append(n)
                index += 1
            }
            guard peek() == "}" else { throw Error(kind: .malformedEscape(text + "{"), position: start) }
            index += 1
            guard let p = LinearRegexProperty.named(name) else { throw Error(kind: .unsupportedProperty(name), position: start) }
            // Under `(?i)` ICU closes a property over case (`(?i)\p{Lu}` matches "a"); the
            // other class escapes are closed over case already.
            var set = LinearRegexScalarSet.property(p, negated: c == "P")
            set.caseInsensitive = flags.caseInsensitive
            return .set(set)
        case "b", "B", "A", "z", "Z", "G", "R", "Q":
            // Outside sets only: inside, ICU reads these as the letter itself, which would surprise.
            if inSet { throw Error(kind: .unsupportedEscape(text + " inside [...]"), position: start) }
            switch c {
            case "b": return .assertion(.wordBoundary)
            case "B": return .assertion(.notWordBoundary)
            case "A", "G": return .assertion(.startOfText)
            case "z": return .assertion(.endOfText)
            case "Z": return .assertion(.endOfTextOrBeforeFinalTerminator)
            case "R": return .lineBreak
            default: return .quote
            }
        case "k": throw Error(kind: .backreference("\\k"), position: start)
        case "1"..."9": throw Error(kind: .backreference(text), position: start)
        case "X": throw Error(kind: .unsupportedEscape("\\X (grapheme clusters)"), position: start)
        case "N": throw Error(kind: .unsupportedEscape("\\N{...} (character names)"), position: start)
        case "E": throw Error(kind: .unknownEscape("\\E without \\Q"), position: start)
        default:
            if c.isASCII && (c.properties.isAlphabetic || Self.digitValue(c, radix: 10) != nil) {
                throw Error(kind: .unknownEscape(text), position: start)
            }
            return .scalar(c)
        }
    }

    /// Between `minDigits` and `maxDigits` hexadecimal digits.
    private mutating func hex(minDigits: Int, maxDigits: Int, at start: Int, text: String) throws(LinearRegexError) -> UInt32 {
        var value: UInt32 = 0, digits = 0
        while digits < maxDigits, let d = peek().flatMap({ Self.digitValue($0, radix: 16) }) {
            value = value * 16 + UInt32(d)
            digits += 1
            index += 1
        }
        guard digits >= minDigits else { throw Error(kind: .malformedEscape(text), position: start) }
        return value
    }

    private func codePoint(_ value: UInt32, at start: Int, text: String) throws(LinearRegexError) -> Unicode.Scalar {
        guard let scalar = Unicode.Scalar(value) else { throw Error(kind: .malformedEscape(text + " (not a Unicode scalar)"), position: start) }
        return scalar
    }

    // MARK: Bracket sets

    /// `[…]` after the `[`.
    private mutating func bracketSet(at start: Int) throws(LinearRegexError) -> LinearRegexScalarSet {
        var set = LinearRegexScalarSet()
        set.caseInsensitive = flags.caseInsensitive
        if peek() == ":" && isPOSIXClass() { throw Error(kind: .posixClass, position: start) }
        skipInsignificant()
        if peek() == "^" {
            set.negated = true
            index += 1
        }
        /// The last single scalar added, which a `-` may turn into the start of a range.
        var rangeStart: Unicode.Scalar?
        var first = true
        while true {
            skipInsignificant()
            guard let c = peek() else { throw Error(kind: .unclosedSet, position: start) }
            let position = index
            index += 1
            if c == "]" && !first { break }
            defer { first = false }
            var single: Unicode.Scalar?
            switch c {
            case "[": throw Error(kind: .nestedSet, position: position)
            case "&" where peek() == "&": throw Error(kind: .setOperation("&&"), position: position)
            case "-":
                skipInsignificant()
                if peek() == "-" { throw Error(kind: .setOperation("--"), position: position) }
                if let low = rangeStart, peek() != "]", let next = peek() {
                    // A range: its high end is one scalar, written or escaped.
                    index += 1
                    var high = next
                    if next == "\\" {
                        guard case .scalar(let escaped) = try escaped(at: index - 1, inSet: true) else {
                            throw Error(kind: .invalidRange(low, next), position: position)
                        }
                        high = escaped
                    } else if next == "[" {
                        throw Error(kind: .nestedSet, position: index - 1)
                    }
                    guard low.value <= high.value else { throw Error(kind: .invalidRange(low, high), position: position) }
                    // The low end went in as a single scalar; widen it to the range.
                    set.items.removeLast()
                    set.items.append(.range(low.value, high.value))
                    rangeStart = nil
                    continue
                }
                single = "-"
            case "\\":
                switch try escaped(at: position, inSet: true) {
                case .scalar(let s): single = s
                case .set(let inner): set.items += inner.items
                default: throw Error(kind: .unsupportedEscape("\\" + String(pattern[position + 1]) + " inside [...]"), position: position)
                }
            default:
                single = c
            }
            if let single {
                set.items.append(.range(single.value, single.value))
            }
            // After a range or a class, `-` is literal (`[a-z-0]`, `[\w-a]`), as in ICU.
            rangeStart = single
        }
        return set
    }

    /// Whether the set just opened reads `[:…:]`.
    private func isPOSIXClass() -> Bool {
        var i = index + 1
        while i < pattern.count && pattern[i] != "]" {
            if pattern[i] == "\\" { return false }
            i += 1
        }
        return i < pattern.count && i - index >= 2 && pattern[i - 1] == ":"
    }

    // MARK: Scanning

    private func peek(_ offset: Int = 0) -> Unicode.Scalar? {
        index + offset < pattern.count ? pattern[index + offset] : nil
    }

    /// In `x` mode, skips white space and `#` comments (to the end of the line), as ICU does
    /// between any two tokens, inside sets and intervals too.
    private mutating func skipInsignificant() {
        guard flags.extended, !quoting else { return }
        while let c = peek() {
            if Self.isPatternWhiteSpace(c) {
                index += 1
            } else if c == "#" {
                while let d = peek(), !(d == "\n" || d == "\r" || d == "\u{85}" || d == "\u{2028}") { index += 1 }
            } else {
                return
            }
        }
    }

    /// ICU's pattern white space: what `x` mode ignores.
    private static func isPatternWhiteSpace(_ c: Unicode.Scalar) -> Bool {
        switch c.value {
        case 0x09...0x0D, 0x20, 0x85, 0x200E, 0x200F, 0x2028, 0x2029: return true
        default: return false
        }
    }

    private static func digitValue(_ c: Unicode.Scalar, radix: Int) -> Int? {
        guard c.isASCII, let value = Int(String(c), radix: radix) else { return nil }
        return value
    }
}
