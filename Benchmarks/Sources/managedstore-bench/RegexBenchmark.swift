import Foundation
import ManagedStore
@_spi(Benchmarks) import ManagedStoreCore

/// MATCHES' engine (`LinearRegex`, behind the compiled-pattern cache) against the
/// NSRegularExpression path it replaced, on the same strings: whole-string matches per second
/// for a few typical patterns. `--regex-only` runs this alone.
enum RegexBenchmark {
    /// The removed path, as it was: a locked cache of anchored NSRegularExpressions, then
    /// `firstMatch` over the whole string.
    final class ICUPath: @unchecked Sendable {
        private var cache: [String: NSRegularExpression] = [:]
        private let lock = NSLock()

        func matchesWhole(_ text: String, pattern: String, caseInsensitive: Bool) -> Bool {
            let key = (caseInsensitive ? "i:" : "s:") + pattern
            lock.lock()
            let regex: NSRegularExpression
            if let cached = cache[key] {
                regex = cached
            } else {
                // try! here: the patterns are this file's constants, all valid.
                regex = try! NSRegularExpression(pattern: "^(?:" + pattern + ")\\z", options: caseInsensitive ? [.caseInsensitive] : [])
                cache[key] = regex
            }
            lock.unlock()
            return regex.firstMatch(in: text, range: NSRange(text.startIndex..<text.endIndex, in: text)) != nil
        }
    }

    struct Row {
        let pattern: String
        let caseInsensitive: Bool
        let linear: Double
        let icu: Double
        let matched: Int
    }

    static let patterns: [(String, Bool)] = [
        ("^[A-Z].*", false), (".*foo.*", false), (".*foo.*", true), ("[a-z]+-[0-9]{1,5}", false), ("(\\w+\\s?)+", false),
    ]

    /// Task-like titles, 20 to 60 characters, some with "foo", some capitalised, a few "item-123".
    static func titles(count: Int = 10_000) -> [String] {
        var rng = SystemRandomNumberGenerator()
        let words = ["review", "the", "quarterly", "report", "fix", "login", "bug", "foo", "update", "docs", "release", "notes", "Überprüfung", "café"]
        return (0..<count).map { i in
            if i % 10 == 0 { return "item-\(i)" }
            var title = (0..<(3 + Int.random(in: 0...6, using: &rng))).map { _ in words.randomElement(using: &rng)! }.joined(separator: " ")
            if i % 2 == 0 { title = title.prefix(1).uppercased() + title.dropFirst() }
            return title
        }
    }

    static func run(rounds: Int = 3) -> [Row] {
        let texts = titles()
        let icu = ICUPath()
        return patterns.map { pattern, caseInsensitive in
            var bestLinear = Double.infinity, bestICU = Double.infinity
            var matched = (linear: 0, icu: 0)
            for _ in 0..<rounds {
                let (l, ls) = measure { texts.reduce(0) { $0 + (RegexBenchmarkHooks.matchesWhole($1, pattern: pattern, caseInsensitive: caseInsensitive) ? 1 : 0) } }
                let (i, iS) = measure { texts.reduce(0) { $0 + (icu.matchesWhole($1, pattern: pattern, caseInsensitive: caseInsensitive) ? 1 : 0) } }
                bestLinear = min(bestLinear, ls)
                bestICU = min(bestICU, iS)
                matched = (l, i)
            }
            if matched.linear != matched.icu { say("CHECK FAILED \(pattern): LinearRegex matched \(matched.linear), ICU \(matched.icu)") }
            return Row(pattern: pattern, caseInsensitive: caseInsensitive,
                       linear: Double(texts.count) / bestLinear, icu: Double(texts.count) / bestICU, matched: matched.linear)
        }
    }

    /// Seconds for one whole-string match of `(a+)+b` against n a's, per engine: exponential
    /// in ICU (it backtracks), linear here.
    static func hostile(lengths: [Int] = [16, 20, 24]) -> [(n: Int, linear: Double, icu: Double)] {
        let icu = ICUPath()
        return lengths.map { n in
            let text = String(repeating: "a", count: n)
            let linear = measure { RegexBenchmarkHooks.matchesWhole(text, pattern: "(a+)+b") }
            let backtracking = measure { icu.matchesWhole(text, pattern: "(a+)+b", caseInsensitive: false) }
            return (n, linear.seconds, backtracking.seconds)
        }
    }

    static func report(_ rows: [Row], hostile: [(n: Int, linear: Double, icu: Double)]) {
        say("| MATCHES pattern (10,000 titles) | LinearRegex | NSRegularExpression | ratio |")
        say("|---|---:|---:|---:|")
        for row in rows {
            say("| `\(row.pattern)`\(row.caseInsensitive ? " [c]" : "") (\(grouped(row.matched)) match) | \(grouped(row.linear)) /s | \(grouped(row.icu)) /s | \(fixed(row.linear / row.icu)) |")
        }
        say()
        say("| `(a+)+b` against n a's, one match | LinearRegex | NSRegularExpression |")
        say("|---|---:|---:|")
        for row in hostile {
            say("| n = \(row.n) | \(fixed(row.linear * 1e6, 1)) µs | \(fixed(row.icu * 1e6, 1)) µs |")
        }
    }
}
