import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite

/// The non-backtracking engine behind MATCHES and model patterns: hand-checked answers, a
/// differential run against ICU (NSRegularExpression) on random patterns, hostile patterns
/// that must stay linear, and the refusals with their typed errors.
@Suite("Linear regex", .serialized)
struct LinearRegexTests {
    // MARK: Hand-checked table

    struct Case: Sendable, CustomStringConvertible {
        let pattern: String
        let text: String
        let matches: Bool
        var caseInsensitive = false
        var description: String { "\(pattern.debugDescription) ~ \(text.debugDescription)\(caseInsensitive ? " [i]" : "")" }
    }

    static func c(_ pattern: String, _ text: String, _ matches: Bool, i caseInsensitive: Bool = false) -> Case {
        Case(pattern: pattern, text: text, matches: matches, caseInsensitive: caseInsensitive)
    }

    static let table: [Case] = [
        // Whole-string matching, and alternation at the lowest precedence.
        c("abc", "abc", true), c("abc", "abcd", false), c("abc", "xabc", false), c("abc", "ab", false),
        c("a|abc", "abc", true), c("a|abc", "a", true), c("a|abc", "ab", false),
        c("cat|catfish", "catfish", true), c("ab|cd", "abd", false), c("ab|cd", "cd", true),
        c("a(b|c)d", "acd", true), c("a(b|c)d", "ad", false),
        c("", "", true), c("", "a", false), c("a|", "", true), c("()", "", true), c("(|a)+", "aa", true),
        // Dot: one scalar, never a line terminator (unless `s`).
        c("a.c", "abc", true), c("a.c", "a\nc", false), c("a.c", "a\rc", false), c("a.c", "a\u{2028}c", false),
        c("(?s)a.c", "a\nc", true), c(".", "\u{E9}", true), c(".", "🚀", true), c(".", "e\u{301}", false), c("..", "e\u{301}", true),
        c("(?s)..", "\r\n", false), c("(?s).", "\r\n", true),
        // Anchors inside a whole-string match.
        c("^abc$", "abc", true), c("\\Aabc\\z", "abc", true), c("a^b", "ab", false), c("a$b", "ab", false),
        c("a$", "a\n", false), // the newline is not consumed, and the match must cover it
        c("a$\\n", "a\n", true), c("a$\n", "a\n", true), c("a\\Z\\n", "a\n", true), c("a\\z\\n", "a\n", false),
        c("a$\\r\\n", "a\r\n", true), c("a$\\nb", "a\nb", false), c("(?m)a$\\nb", "a\nb", true),
        c("a\\n^b", "a\nb", false), c("(?m)a\\n^b", "a\nb", true), c("(?m)a\\n^", "a\n", false),
        // Class escapes, Unicode-aware.
        c("\\d+", "123", true), c("\\d+", "\u{661}\u{662}\u{663}", true), c("\\d", "a", false), c("\\D", "a", true),
        c("\\w+", "h\u{E9}llo_1", true), c("\\w", "-", false), c("\\W", "-", true), c("\\w", "\u{301}", true),
        c("\\s", "\u{A0}", true), c("\\s", "\t", true), c("\\S", " ", false), c("\\h", "\t", true), c("\\h", "\n", false),
        c("\\v", "\u{0B}", true), c("\\V", "a", true),
        // Bracket expressions.
        c("[abc]+", "cab", true), c("[^a-z]", "q", false), c("[^a-z]", "Q", true), c("[\\d_]+", "1_2", true),
        c("[a\\-z]", "-", true), c("[a\\-z]", "b", false), c("[a-]", "-", true), c("[-a]", "-", true), c("[a-z-0]", "-", true),
        c("[]a]", "]", true), c("[\\]]", "]", true), c("[^]a]", "b", true), c("[\\w-]", "-", true),
        c("[\\p{Lu}\\d]", "Q", true), c("[\\p{Lu}\\d]", "q", false), c("[\\x41-\\x{43}]", "B", true), c("[.*+]", "+", true),
        // General categories.
        c("\\p{L}+", "\u{3A9}mega", true), c("\\p{Lu}", "a", false), c("\\p{Lu}", "\u{C9}", true), c("\\P{L}", "1", true),
        c("\\p{Nd}", "\u{663}", true), c("\\p{Letter}", "x", true), c("\\p{gc=Ll}", "x", true), c("\\p{Zs}", " ", true),
        c("\\p{Sc}", "$", true), c("\\p{Mn}", "\u{301}", true), c("\\p{Any}", "\n", true),
        // Counted repetition.
        c("a{3}", "aaa", true), c("a{3}", "aa", false), c("a{2,}", "aaaaa", true), c("a{2,}", "a", false),
        c("a{2,3}", "aaaa", false), c("a{2,3}", "aa", true), c("(ab){2}", "abab", true), c("a{0}", "", true), c("a{0}", "a", false),
        c("a{1,3}?", "aa", true), c("[0-9]{4}-[0-9]{2}", "2024-05", true), c("(a|bc){2,3}", "bcabc", true),
        // Lazy quantifiers match the same strings.
        c("a+?", "aaa", true), c("a*?b", "aab", true), c("a??", "", true), c("a{2,}?", "aaa", true),
        // Case-insensitive: the option, (?i), scoped flags, simple folding.
        c("abc", "ABC", true, i: true), c("abc", "ABC", false), c("(?i)abc", "AbC", true), c("(?i)[a-z]+", "ABC", true),
        c("(?i)k", "\u{212A}", true), c("(?i)[k]", "\u{212A}", true), c("(?i)\u{3C3}", "\u{3C2}", true), c("(?i)[^a]", "A", false),
        c("(?i:a)b", "Ab", true), c("(?i:a)b", "AB", false), c("a(?i)b", "aB", true), c("a(?i)b", "AB", false),
        c("((?i)a|b)c", "Bc", true), c("((?i)a|b)c", "BC", false), c("(?i)(?-i)a", "A", false),
        c("(?i)\u{DF}", "\u{1E9E}", true), c("(?i)\u{DF}", "ss", false), // simple folding only: see LinearRegexCaseFolding
        c("(?i)\\p{Lu}", "a", true), c("(?i)\\P{Lu}", "a", false), c("(?i)i", "\u{131}", false), c("(?i)\u{1C5}", "\u{1C4}", true),
        // Escapes.
        c("\\x41\\x{42}\\u0043\\U00000044", "ABCD", true), c("\\t\\n\\r\\f\\e\\a", "\t\n\r\u{0C}\u{1B}\u{07}", true),
        c("\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\^\\$\\/\\-\\\\", ".*+?()[]{}|^$/-\\", true), c("\\#\\ \\@\\~", "# @~", true),
        c("\\0101", "A", true), c("\\cA", "\u{01}", true), c("\\Qa.b\\E+", "a.bbb", true), c("\\Qa.b", "a.b", true), c("\\Qa.b", "axb", false),
        c("a\\Q\\E*", "aaa", true),
        // Word boundaries (ICU's: marks and format characters belong to the character before).
        c("\\bab\\b", "ab", true), c("a\\b-", "a-", true), c("a\\bb", "ab", false), c("a\\Bb", "ab", true),
        c("\\b", "", false), c("\\B", "", true), c("foo\\b.*", "foo bar", true), c("foo\\b.*", "foobar", false),
        c("a\\b\u{301}", "a\u{301}", false), c("-\u{301}\\ba", "-\u{301}a", true),
        // \R takes CR LF as one unit.
        c("a\\Rb", "a\r\nb", true), c("a\\R\\nb", "a\r\nb", false), c("a\\Rb", "a\nb", true), c("a\\R{2}b", "a\r\rb", true),
        // x mode, named groups, comments.
        c("(?x) a b # c", "ab", true), c("(?x)a\\ b", "a b", true), c("(?x)[a b]+", "ab", true), c("(?x)[a b]+", " ", false),
        c("(?x) [a-z]+   # lower-case letters only", "abc", true), c("(?x)a{2, 3}", "aaa", true),
        c("(?<year>\\d{4})-(?<m>\\d\\d)", "2024-05", true), c("a(?#note)b", "ab", true), c("a(?#note)*", "aaa", true),
        // Decomposed text is not the precomposed scalar.
        c("\u{E9}", "e\u{301}", false), c("e\\p{M}", "e\u{301}", true),
    ]

    @Test("hand-checked patterns", arguments: table)
    func handChecked(_ c: Case) throws {
        let regex = try LinearRegex(c.pattern, caseInsensitive: c.caseInsensitive)
        #expect(regex.matchesWhole(c.text) == c.matches)
    }

    /// The table's expectations agree with ICU wherever this engine documents no difference
    /// (full case folding is the one difference).
    @Test("the hand-checked table agrees with ICU except where documented")
    func tableAgreesWithICU() {
        // ICU refuses the empty pattern; here it matches the empty string.
        for c in Self.table where !c.pattern.contains("\u{DF}") && !c.pattern.isEmpty {
            #expect(Self.icu(c.pattern, c.text, caseInsensitive: c.caseInsensitive) == c.matches, "\(c)")
        }
    }

    // MARK: Differential against ICU

    typealias SplitMix64 = PredicateFuzzTests.SplitMix64

    /// A random pattern from the supported subset, with a few strings it is likely to match.
    indirect enum Node {
        case atom(String, samples: [String])
        case sequence([Node])
        case alternation([Node])
        case group(String, Node)
        case repeated(Node, min: Int, max: Int?, suffix: String)

        var pattern: String {
            switch self {
            case .atom(let text, _): return text
            case .sequence(let nodes): return nodes.map(\.pattern).joined()
            case .alternation(let nodes): return nodes.map(\.pattern).joined(separator: "|")
            case .group(let opening, let node): return opening + node.pattern + ")"
            case .repeated(let node, let min, let max, let suffix):
                let quantifier: String
                switch (min, max) {
                case (0, nil): quantifier = "*"
                case (1, nil): quantifier = "+"
                case (0, 1?): quantifier = "?"
                case (let n, nil): quantifier = "{\(n),}"
                case (let n, let m?) where n == m: quantifier = "{\(n)}"
                case (let n, let m?): quantifier = "{\(n),\(m)}"
                }
                return node.pattern + quantifier + suffix
            }
        }

        /// Whether the node can match the empty string.
        var nullable: Bool {
            switch self {
            case .atom(_, let samples): return samples == [""]
            case .sequence(let nodes): return nodes.allSatisfy(\.nullable)
            case .alternation(let nodes): return nodes.contains(where: \.nullable)
            case .group(_, let node): return node.nullable
            case .repeated(let node, let min, _, _): return min == 0 || node.nullable
            }
        }

        func sample(_ rng: inout SplitMix64) -> String {
            switch self {
            case .atom(_, let samples): return samples.isEmpty ? "" : rng.pick(samples)
            case .sequence(let nodes): return nodes.map { $0.sample(&rng) }.joined()
            case .alternation(let nodes): return rng.pick(nodes).sample(&rng)
            case .group(_, let node): return node.sample(&rng)
            case .repeated(let node, let min, let max, _):
                let count = min + rng.below((max ?? min + 3) - min + 1)
                return (0..<count).map { _ in node.sample(&rng) }.joined()
            }
        }
    }

    /// The text alphabet: letters in both cases, a digit in two scripts, a combining mark,
    /// punctuation, white space and line terminators, including CR LF.
    static let alphabet = [
        "a", "b", "A", "B", "k", "s", "S", "1", "\u{663}", "-", "_", ".", " ", "\t", "\n", "\r", "\r\n", "\u{0B}", "\u{A0}",
        "\u{E9}", "\u{301}", "\u{200D}", "\u{2028}", "\u{3C3}", "\u{3C2}", "\u{3A3}", "\u{212A}", "\u{17F}", "\u{1C5}", "\u{1C6}",
    ]

    static let atoms: [(String, [String])] = [
        ("a", ["a"]), ("b", ["b"]), ("A", ["A"]), ("k", ["k"]), ("1", ["1"]), ("-", ["-"]), (" ", [" "]), ("\u{E9}", ["\u{E9}"]),
        ("\u{3C3}", ["\u{3C3}", "\u{3A3}"]), ("\\.", ["."]), ("\\-", ["-"]), ("\\n", ["\n"]), ("\\r", ["\r"]), ("\\t", ["\t"]), ("\\x41", ["A"]),
        ("\\x{62}", ["b"]), ("\\u0061", ["a"]), (".", ["a", "-", "\n"]), ("\\d", ["1", "\u{663}"]), ("\\D", ["a", "1"]),
        ("\\w", ["a", "_", "\u{301}"]), ("\\W", ["-", " "]), ("\\s", [" ", "\n"]), ("\\S", ["a", " "]), ("\\h", [" ", "\t"]),
        ("\\v", ["\n", "\r"]), ("\\R", ["\r\n", "\n", "\r"]), ("\\p{L}", ["a", "\u{3C3}"]), ("\\p{Lu}", ["A", "a"]),
        ("\\P{Ll}", ["A", "a"]), ("\\p{Nd}", ["\u{663}"]), ("\\p{M}", ["\u{301}"]), ("\\p{P}", ["-", "_", "."]),
        ("[ab]", ["a", "b"]), ("[^ab]", ["A", "-"]), ("[a-z]", ["k", "A"]), ("[A-Z\\d]", ["A", "1"]), ("[\\w-]", ["-", "a"]),
        ("[a\\-z]", ["-", "b"]), ("[^\\s]", ["a", " "]), ("[\\p{Lu}_]", ["_", "B"]), ("[.\\n]", [".", "\n"]), ("[-a]", ["-"]),
        ("[^\\p{L}]", ["1", "a"]), ("[\\x{3C3}-\\x{3C9}]", ["\u{3C3}", "\u{3A3}"]),
        ("^", [""]), ("$", [""]), ("\\A", [""]), ("\\z", [""]), ("\\Z", [""]), ("\\b", [""]), ("\\B", [""]),
        // Case classes with more than two members, octal and control escapes, long property
        // names, quoting, an escaped space (which `x` mode keeps).
        ("\\u212A", ["\u{212A}", "k"]), ("\u{17F}", ["\u{17F}", "s"]), ("[\\x{1C4}-\\x{1C5}]", ["\u{1C5}", "\u{1C6}"]),
        ("\u{3C2}", ["\u{3C2}", "\u{3A3}"]), ("[^k]", ["\u{212A}", "a"]), ("\\0141", ["a"]), ("\\cI", ["\t"]), ("\\e", ["\u{1B}"]),
        ("\\p{Letter}", ["a"]), ("\\p{gc=Nd}", ["1"]), ("\\p{Uppercase_Letter}", ["A"]), ("[^\\P{Lu}]", ["A", "a"]),
        ("\\p{White_Space}", ["\u{A0}"]), ("\\Qa.\\E", ["a."]), ("\\ ", [" "]), ("[\\s\\S]", ["\n"]), ("[^\\n]", ["\r"]),
    ]

    static func randomNode(_ rng: inout SplitMix64, depth: Int) -> Node {
        let roll = rng.below(100)
        if depth >= 3 || roll < 40 {
            let (text, samples) = rng.pick(atoms)
            return .atom(text, samples: samples)
        }
        if roll < 60 {
            return .sequence((0..<(2 + rng.below(3))).map { _ in randomNode(&rng, depth: depth + 1) })
        }
        if roll < 72 {
            return .alternation((0..<(2 + rng.below(2))).map { _ in randomNode(&rng, depth: depth + 1) })
        }
        if roll < 84 {
            let opening = rng.pick(["(", "(?:", "(?i:", "(?-i:", "(?s:", "(?m:", "(?<g>"])
            return .group(opening, randomNode(&rng, depth: depth + 1))
        }
        // Only groups, sets and single-scalar atoms take a quantifier; assertions must not.
        var body = randomNode(&rng, depth: depth + 1)
        if case .atom(let text, _) = body, ["^", "$", "\\A", "\\z", "\\Z", "\\b", "\\B"].contains(text) {
            body = .atom("a", samples: ["a"])
        } else if case .atom = body {
        } else {
            body = .group("(?:", body)
        }
        let (min, max): (Int, Int?) = rng.pick([(0, nil), (1, nil), (0, 1), (2, nil), (2, 2), (0, 2), (1, 3), (0, 0)])
        // ICU gets lazy unbounded loops over a body that can match nothing wrong: `(?:|a)*?`
        // does not match "aa" there (the empty iteration ends the loop for good). Such loops
        // are left greedy here, where ICU answers correctly.
        let lazy = rng.chance(25) && !(max == nil && body.nullable)
        return .repeated(body, min: min, max: max, suffix: lazy ? "?" : "")
    }

    static func randomText(_ rng: inout SplitMix64) -> String {
        (0..<rng.below(7)).map { _ in rng.pick(alphabet) }.joined()
    }

    /// ICU's whole-string expression for `pattern`, nil when ICU refuses the pattern.
    static func icuRegex(_ pattern: String, caseInsensitive: Bool = false) -> NSRegularExpression? {
        let options: NSRegularExpression.Options = caseInsensitive ? [.caseInsensitive] : []
        guard (try? NSRegularExpression(pattern: pattern, options: options)) != nil else { return nil }
        // The anchors go on lines of their own where a (?x) comment would swallow them.
        for closing in [")\\z", "\n)\\z", "\\E)\\z", "\\E\n)\\z"] {
            if let regex = try? NSRegularExpression(pattern: "^(?:" + pattern + closing, options: options) { return regex }
        }
        return nil
    }

    static func icuMatches(_ regex: NSRegularExpression, _ text: String) -> Bool {
        regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
    }

    /// ICU's whole-string answer, nil when ICU refuses the pattern.
    static func icu(_ pattern: String, _ text: String, caseInsensitive: Bool = false) -> Bool? {
        icuRegex(pattern, caseInsensitive: caseInsensitive).map { icuMatches($0, text) }
    }

    static let differentialSeed: UInt64 = 0x5EED_2026_0C0D
    static let differentialPatterns = 8_000
    static let textsPerPattern = 8

    @Test("random patterns agree with ICU on random strings")
    func differentialAgainstICU() async throws {
        var rng = SplitMix64(seed: Self.differentialSeed)
        var compared = 0, matched = 0, refusedByBoth = 0, disagreements: [String] = []
        for n in 0..<Self.differentialPatterns {
            if n % 200 == 0 { await Task.yield() }
            let node = Self.randomNode(&rng, depth: 0)
            let flags = rng.chance(25) ? rng.pick(["(?i)", "(?m)", "(?s)", "(?is)", "(?im)", "(?x)", "(?ix)"]) : ""
            // Group names must differ.
            let pieces = (flags + node.pattern).components(separatedBy: "(?<g>")
            let pattern = pieces.enumerated().map { $0.offset == 0 ? $0.element : "(?<g\($0.offset)>" + $0.element }.joined()
            let caseInsensitive = rng.chance(10)
            let ours = Result { () throws(LinearRegexError) in try LinearRegex(pattern, caseInsensitive: caseInsensitive) }
            // Both must refuse the same patterns (in `x` mode a quantified space leaves the
            // quantifier with nothing to repeat).
            let icuRegex: NSRegularExpression, regex: LinearRegex
            switch (Self.icuRegex(pattern, caseInsensitive: caseInsensitive), ours) {
            case (nil, .failure):
                refusedByBoth += 1
                continue
            case (nil, .success):
                disagreements.append("ICU refuses \(pattern.debugDescription), linear accepts it")
                continue
            case (.some, .failure(let error)):
                disagreements.append("linear refuses \(pattern.debugDescription): \(error)")
                continue
            case (.some(let i), .success(let r)):
                (icuRegex, regex) = (i, r)
            }
            for t in 0..<Self.textsPerPattern {
                var text = t < Self.textsPerPattern / 2 ? node.sample(&rng) : Self.randomText(&rng)
                if t == 1 { text = rng.chance(50) ? text.uppercased() : text.lowercased() }
                let expected = Self.icuMatches(icuRegex, text)
                let actual = regex.matchesWhole(text)
                compared += 1
                if actual { matched += 1 }
                if expected != actual {
                    disagreements.append("\(pattern.debugDescription)\(caseInsensitive ? " [i]" : "") on \(text.debugDescription): ICU \(expected), linear \(actual)")
                }
            }
        }
        if ProcessInfo.processInfo.environment["FUZZ_STATS"] != nil {
            print("STATS patterns=\(Self.differentialPatterns) refusedByBoth=\(refusedByBoth) compared=\(compared) matched=\(matched)")
        }
        #expect(disagreements.isEmpty, "\(disagreements.count) disagreements:\n\(disagreements.prefix(40).joined(separator: "\n"))")
        #expect(refusedByBoth < Self.differentialPatterns / 50, "\(refusedByBoth) patterns refused by both")
        #expect(compared + refusedByBoth * Self.textsPerPattern == Self.differentialPatterns * Self.textsPerPattern)
        // The sampled strings make matches common enough for the comparison to mean something.
        #expect(matched > compared / 5, "only \(matched) of \(compared) texts matched")
    }

    // MARK: Hostile patterns

    static let a10k = String(repeating: "a", count: 10_000)

    /// Patterns that take exponential time in a backtracking engine, against 10,000 characters.
    static let hostile: [Case] = [
        c("(a+)+b", a10k, false), c("(a|a)*b", a10k, false), c("(a*)*b", a10k, false), c("(a|aa)+b", a10k, false),
        c("(.*a){20}", a10k, true), c("(.*a){20}", String(repeating: "a", count: 9_999) + "b", false),
        c("(a+)+", a10k, true), c("(a|aa)+$", a10k, true), c("(?i)(A+A+)+B", a10k, false),
        c("(\\w+\\s?)+$", String(repeating: "word ", count: 2_000) + "!", false),
        c("^(([a-z])+.)+[A-Z]([a-z])+$", a10k + "!", false), c("(a?){50}a{50}", String(repeating: "a", count: 50), true),
        c("(a?){50}a{50}", a10k, false), c("(?s)(.*)*x", String(repeating: "ab\r\n", count: 2_500), false),
        c("(\\b\\w+\\b\\W*)*z", String(repeating: "ab cd ", count: 1_700), false),
    ]

    @Test("hostile patterns finish on 10,000 characters", arguments: hostile)
    func hostilePatterns(_ c: Case) throws {
        let regex = try LinearRegex(c.pattern, caseInsensitive: c.caseInsensitive)
        let (matched, steps) = regex.matchCountingSteps(c.text)
        #expect(matched == c.matches)
        // The Pike VM's bound: each instruction at most once per position, plus one step per
        // live thread per position to consume.
        let bound = 2 * (c.text.unicodeScalars.count + 1) * regex.instructions.count
        #expect(steps <= bound, "\(steps) steps, bound \(bound)")
    }

    /// Work, counted in VM steps (deterministic, unlike time), doubles when the text doubles.
    @Test("the step count grows linearly with the text", arguments: ["(a+)+b", "(a|a)*b", "(a*)*b", "(.*a){20}", "(x+x+)+y", "(?i)(\\w|[a-z]|\\p{L})*\\d"])
    func stepsGrowLinearly(_ pattern: String) throws {
        let regex = try LinearRegex(pattern)
        let letter = pattern.contains("x") ? "x" : "a"
        let small = regex.matchCountingSteps(String(repeating: letter, count: 2_000)).steps
        let large = regex.matchCountingSteps(String(repeating: letter, count: 4_000)).steps
        let ratio = Double(large) / Double(small)
        #expect(ratio > 1.9 && ratio < 2.1, "\(small) then \(large) steps: ratio \(ratio)")
    }

    /// The same hostile pattern through a fetch, where it runs inside SQLite (`ms_strop`).
    @Test("a hostile MATCHES fetch over a long title finishes")
    func hostileFetch() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try Fixtures.seedProject(context, name: "P", taskTitles: [Self.a10k, "aab", "b"])
        try context.performAndWait {
            for (pattern, count) in [("(a+)+b", 1), ("(a|a)*b", 2), ("(a*)*c", 0), ("(.*a){20}", 1)] {
                let request = FetchRequest(entityName: "Task", predicate: .key("title").matches(pattern))
                let found = try context.count(for: request)
                #expect(found == count, "\(pattern)")
            }
        }
    }

    // MARK: Refusals

    static func error(_ pattern: String) -> LinearRegexError? {
        do {
            _ = try LinearRegex(pattern)
            return nil
        } catch {
            return error
        }
    }

    static let refused: [(String, LinearRegexError.Kind, Int)] = [
        ("(a)\\1", .backreference("\\1"), 3), ("(?<n>a)\\k<n>", .backreference("\\k"), 7),
        ("(?=a)a", .lookahead, 0), ("a(?!b)", .lookahead, 1), ("(?<=a)b", .lookbehind, 0), ("(?<!a)b", .lookbehind, 0),
        ("(?>a+)", .atomicGroup, 0), ("a*+", .possessiveQuantifier, 1), ("a++", .possessiveQuantifier, 1),
        ("a?+", .possessiveQuantifier, 1), ("a{2}+", .possessiveQuantifier, 1),
        ("(?w)a", .unsupportedFlag("w"), 2), ("(?P<n>a)", .unsupportedGroup("(?P"), 0), ("(?(1)a|b)", .unsupportedGroup("(?("), 0),
        ("(?|a)", .unsupportedGroup("(?|"), 0), ("(?'n'a)", .unsupportedGroup("(?'"), 0),
        ("\\X", .unsupportedEscape("\\X (grapheme clusters)"), 0), ("\\N{LATIN SMALL LETTER A}", .unsupportedEscape("\\N{...} (character names)"), 0),
        ("[\\b]", .unsupportedEscape("\\b inside [...]"), 1), ("\\p{Greek}", .unsupportedProperty("Greek"), 0), ("\\pL", .malformedEscape("\\p"), 0),
        ("[a&&b]", .setOperation("&&"), 2), ("[a-c--b]", .setOperation("--"), 4), ("[[a]]", .nestedSet, 1), ("[:alpha:]", .posixClass, 0),
        ("\\y", .unknownEscape("\\y"), 0), ("a\\E", .unknownEscape("\\E without \\Q"), 1), ("\\", .trailingBackslash, 0),
        ("a**", .quantifierAfterQuantifier, 2), ("a{1}*", .quantifierAfterQuantifier, 4), ("*a", .nothingToRepeat, 0),
        ("a|*", .nothingToRepeat, 2), ("\\b*", .nothingToRepeat, 2), ("(?i)*", .nothingToRepeat, 4),
        ("a{", .malformedInterval, 1), ("a{,3}", .malformedInterval, 1), ("a{1,2", .malformedInterval, 1), ("a{3,2}", .intervalOutOfOrder(min: 3, max: 2), 1),
        ("}", .unescapedClosingBrace, 0), ("(abc", .missingClosingParenthesis, 0), ("a(b(c)", .missingClosingParenthesis, 1),
        ("abc)", .unmatchedClosingParenthesis, 3), ("[a-", .unclosedSet, 0), ("[]", .unclosedSet, 0), ("[z-a]", .invalidRange("z", "a"), 2),
        ("\\x{110000}", .malformedEscape("\\x{ (not a Unicode scalar)"), 0), ("\\x{D800}", .malformedEscape("\\x{ (not a Unicode scalar)"), 0),
        ("\\u12", .malformedEscape("\\u"), 0), ("\\0", .malformedEscape("\\0"), 0), ("(?<1>a)", .malformedGroupName, 0),
        ("(?<n>a)(?<n>b)", .duplicateGroupName("n"), 7), ("(?#x", .unclosedComment, 0), ("(?)", .emptyFlagGroup, 0),
    ]

    @Test("unsupported and malformed patterns are refused with the construct and its position")
    func refusals() {
        for (pattern, kind, position) in Self.refused {
            #expect(Self.error(pattern) == LinearRegexError(kind: kind, position: position), "\(pattern.debugDescription)")
        }
    }

    @Test("giant counts, deep nesting and huge programs are refused, never a crash")
    func limits() {
        let count = LinearRegex.countLimit, size = LinearRegex.instructionLimit, depth = LinearRegex.nestingLimit
        #expect(Self.error("a{99999999999999999999}")?.kind == .countTooLarge(limit: count))
        #expect(Self.error("a{1,99999999999999999999}")?.kind == .countTooLarge(limit: count))
        #expect(Self.error("a{\(count + 1)}")?.kind == .countTooLarge(limit: count))
        #expect(Self.error("(?:){\(count + 1),}")?.kind == .countTooLarge(limit: count))
        #expect(Self.error(String(repeating: "(", count: 100_000))?.kind == .nestingTooDeep(limit: depth))
        #expect(Self.error(String(repeating: "(?:", count: 100_000) + "a" + String(repeating: ")", count: 100_000))?.kind == .nestingTooDeep(limit: depth))
        #expect(Self.error(String(repeating: ")", count: 100_000))?.kind == .unmatchedClosingParenthesis)
        #expect(Self.error(String(repeating: "[", count: 100_000))?.kind == .nestedSet)
        #expect(Self.error(String(repeating: "a*", count: 3_000)) == nil)
        #expect(Self.error(String(repeating: "a", count: 20_000))?.kind == .programTooLarge(limit: size))
        #expect(Self.error("((a{100}){100}){100}")?.kind == .programTooLarge(limit: size))
        #expect(Self.error("(?:a{1000}){11}")?.kind == .programTooLarge(limit: size))
        #expect(Self.error("[a-z]{5000}[a-z]{5000}")?.kind == .programTooLarge(limit: size))
        #expect(Self.error("(a|b|c|d){3000}")?.kind == .programTooLarge(limit: size))
        #expect(Self.error("(x{9000}|(y{9000}|z))")?.kind == .programTooLarge(limit: size))
        // Work that {0} throws away still counts, and so do the sets it leaves behind.
        #expect(Self.error(String(repeating: "(?:a{9000}){0}", count: 100))?.kind == .compileWorkTooLarge(limit: 100 * size))
        #expect((try? LinearRegex(String(repeating: "(?:a{9000}){0}", count: 5)))?.matchesWhole("") == true)
        let deepCopies = String(repeating: "(a", count: 400) + String(repeating: "b", count: 5_000) + String(repeating: ")", count: 400)
        #expect(Self.error(deepCopies)?.kind == .compileWorkTooLarge(limit: 100 * size))
        let manySets = (0..<(size + 1)).map { "[\\x{\(String(0x100 + $0, radix: 16))}]{0}" }.joined()
        #expect(Self.error(manySets)?.kind == .programTooLarge(limit: size))
        // What the pattern cache's budget assumes (12 bytes per instruction).
        #expect(MemoryLayout<LinearRegex.Instruction>.stride == 12)
        // Just inside the limits: accepted, and they run.
        let nested = String(repeating: "(", count: depth - 1) + "a" + String(repeating: ")", count: depth - 1)
        #expect((try? LinearRegex(nested))?.matchesWhole("a") == true)
        #expect((try? LinearRegex("a{9000}"))?.matchesWhole(String(repeating: "a", count: 9_000)) == true)
        #expect((try? LinearRegex("(?:){\(count)}"))?.matchesWhole("") == true)
    }

    @Test("the error message names the problem and its offset")
    func errorMessages() {
        #expect(Self.error("(a)\\1")?.description == "backreferences (\\1) are not supported (at offset 3)")
        #expect(Self.error("a{3,2}")?.description == "{3,2}: the maximum is below the minimum (at offset 1)")
        #expect(Self.error("a{20000}")?.description == "repetition count above the limit of 10000 (at offset 1)")
        #expect(Self.error("[z-a]")?.description == "invalid range z-a in [...] (at offset 2)")
    }

    /// A refused MATCHES is an invalid predicate (a 400 over HTTP) whose message says why.
    @Test("a refused MATCHES pattern makes an invalid predicate that says why", arguments: [
        ("(a)\\1", "backreferences"), ("(?=x)", "lookahead"), ("a++", "possessive"), ("\\X", "\\X"), ("a{99999}", "limit of 10000"),
    ])
    func refusedMatchesPredicate(_ pattern: String, _ reason: String) throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        context.performAndWait {
            do {
                _ = try context.compiledSQL(for: FetchRequest(entityName: "Task", predicate: .key("title").matches(pattern)))
                Issue.record("\(pattern) was accepted")
            } catch let error as FetchError {
                guard case .invalidPredicate(let message) = error else {
                    Issue.record("\(pattern): \(error)")
                    return
                }
                #expect(message.contains(reason) && message.contains("MATCHES"), "\(message)")
            } catch {
                Issue.record("\(pattern): \(error)")
            }
        }
    }

    @Test("a refused model pattern is a model problem that says why")
    func refusedModelPattern() {
        let problems: [String]
        do {
            _ = try ManagedObjectModel(name: "M", entities: [
                EntityDescription(name: "Item", attributes: [AttributeDescription(name: "code", type: .string, pattern: "(?<=x)y")]),
            ])
            problems = []
        } catch {
            problems = ["\(error)"]
        }
        #expect(problems.count == 1 && problems[0].contains("lookbehind"), "\(problems)")
    }

    // MARK: Case folding

    @Test("fold keys: simple folding, one key per case class")
    func foldKeys() {
        let key = LinearRegexCaseFolding.key
        #expect(key("A") == "a" && key("a") == "a")
        #expect(key("\u{212A}") == "k" && key("\u{17F}") == "s")
        #expect(key("\u{3A3}") == "\u{3C3}" && key("\u{3C2}") == "\u{3C3}")
        #expect(key("\u{1C4}") == "\u{1C6}" && key("\u{1C5}") == "\u{1C6}")
        #expect(key("\u{131}") == "\u{131}" && key("\u{130}") == "\u{130}")
        #expect(key("\u{DF}") == "\u{DF}" && key("\u{1E9E}") == "\u{DF}")
        #expect(key("\u{13A0}") == key("\u{AB70}"))
        #expect(Set(LinearRegexCaseFolding.equivalents(of: "k")) == ["k", "K", "\u{212A}"])
        #expect(Set(LinearRegexCaseFolding.equivalents(of: "1")) == ["1"])
    }
}
