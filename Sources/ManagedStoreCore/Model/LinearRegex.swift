/// A regular expression compiled for whole-string matching in time linear in the text.
///
/// MATCHES predicates and model `pattern` rules come from clients, and a backtracking engine
/// (ICU, behind NSRegularExpression) takes exponential time on patterns such as `(a+)+b`,
/// inside an SQLite function that cannot be interrupted. This engine never backtracks: the
/// pattern compiles to a program for a Thompson NFA, and `LinearRegexMatcher` runs every
/// possible thread in lock step (a Pike VM without captures), visiting each instruction at most
/// once per text position. Matching costs O(text length × program size), and the program size is
/// capped at `instructionLimit`, so every match is bounded whatever the pattern.
///
/// The syntax and meaning are ICU's (what NSPredicate MATCHES uses) for the subset that a
/// non-backtracking engine can run: `LinearRegexParser` documents it, and refuses the rest with
/// a `LinearRegexError` naming the construct. Only match / no-match is computed: groups do not
/// capture, and lazy quantifiers match the same strings as greedy ones.
///
/// The program is immutable once built, so one instance is safely shared by every thread.
struct LinearRegex: Sendable {
    /// The most instructions a compiled pattern may have. Counted repetition copies its
    /// operand (`(abc){1000}` is 3,000 instructions), so this also bounds `{n,m}`.
    static let instructionLimit = 10_000
    /// The deepest group nesting accepted. The parser keeps its own stack, so this is not about
    /// the call stack: it refuses absurd input early instead of carrying it.
    static let nestingLimit = 500
    /// The largest `n` or `m` in `{n,m}`.
    static let countLimit = instructionLimit
    /// The most instructions compiling one pattern may write in all, copies included (those
    /// of counted repetition, and of groups gathering their contents), kept or later discarded:
    /// compiling stays bounded too, whatever the pattern's length.
    static let compileWorkLimit = 100 * instructionLimit

    /// One step of the program. Jumps are relative to the instruction's own index, so a
    /// fragment of program can be copied or appended anywhere unchanged. Offsets are 32-bit
    /// (programs are at most `instructionLimit` long), which keeps an instruction at 12 bytes.
    enum Instruction: Equatable, Sendable {
        /// Consumes this exact scalar.
        case scalar(Unicode.Scalar)
        /// Consumes a scalar whose fold key (`LinearRegexCaseFolding.key`) is this one.
        case foldedScalar(Unicode.Scalar)
        /// Consumes a scalar in `sets[index]`.
        case set(Int32)
        /// Consumes nothing; continues only where the assertion holds.
        case assert(Assertion)
        /// Continues at both offsets.
        case split(Int32, Int32)
        /// Continues at the offset.
        case jump(Int32)
        /// The end of the program: a match if the whole text has been consumed.
        case match
    }

    /// Zero-width conditions on the position and the scalars around it.
    enum Assertion: Equatable, Sendable {
        /// `^` (without `m`), `\A`, `\G`: the start of the text.
        case startOfText
        /// `\z`: the end of the text.
        case endOfText
        /// `$` (without `m`), `\Z`: the end, or before a line terminator (or CR LF) that ends the text.
        case endOfTextOrBeforeFinalTerminator
        /// `^` with `m`: the start, or after a line terminator, except at the very end.
        case startOfLine
        /// `$` with `m`: the end, or before a line terminator (not between CR and LF).
        case endOfLine
        /// `\b`, `\B`.
        case wordBoundary, notWordBoundary
        /// Not before a line feed: lets `\R` and `(?s).` take CR LF as one unit, as ICU does.
        case notBeforeLineFeed
    }

    let instructions: [Instruction]
    let sets: [LinearRegexScalarSet]
    /// Whether the matcher must compute fold keys of the text.
    let usesFolding: Bool
    /// Whether the matcher must track word characters for `\b` and `\B`.
    let usesWordBoundaries: Bool
    /// Each set's answers for the 128 ASCII scalars, two words per set (bit `c` of word
    /// `2 × set + c / 64`): most text is ASCII, and a bit test beats asking Unicode properties.
    let asciiBitmaps: [UInt64]

    init(instructions: [Instruction], sets: [LinearRegexScalarSet]) {
        self.instructions = instructions
        self.sets = sets
        var bitmaps = [UInt64](repeating: 0, count: 2 * sets.count)
        for (index, set) in sets.enumerated() {
            for value in 0..<128 where set.contains(Unicode.Scalar(UInt8(value))) {
                bitmaps[2 * index + value / 64] |= 1 << UInt64(value % 64)
            }
        }
        asciiBitmaps = bitmaps
        usesFolding = instructions.contains { if case .foldedScalar = $0 { return true } else { return false } }
        usesWordBoundaries = instructions.contains { $0 == .assert(.wordBoundary) || $0 == .assert(.notWordBoundary) }
    }

    /// Compiles `pattern`; `caseInsensitive` is the initial `(?i)`.
    init(_ pattern: String, caseInsensitive: Bool = false) throws(LinearRegexError) {
        var parser = LinearRegexParser(pattern, caseInsensitive: caseInsensitive)
        self = try parser.parse()
    }

    /// Whether the pattern matches all of `text` (not a part of it).
    func matchesWhole(_ text: String) -> Bool {
        LinearRegexMatcher(self).run(Self.scalars(of: text)).matched
    }

    /// The answer and the number of VM steps it took (instructions visited): a deterministic
    /// measure of the work, for tests that check it grows linearly with the text.
    func matchCountingSteps(_ text: String) -> (matched: Bool, steps: Int) {
        LinearRegexMatcher(self).run(Self.scalars(of: text))
    }

    /// The text's scalars in one pass (`Array(text.unicodeScalars)` counts them first, a
    /// second pass): the UTF-8 length bounds their number.
    private static func scalars(of text: String) -> [Unicode.Scalar] {
        var scalars: [Unicode.Scalar] = []
        scalars.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars { scalars.append(scalar) }
        return scalars
    }
}
