import Foundation

/// Regular expressions that must match a whole string (a model's `pattern`, MATCHES), compiled
/// once and shared by every thread.
///
/// Matching the whole string needs anchors around the pattern, `^(?:P)\z` (`$` would allow a final newline); searching and then
/// comparing ranges is not the same ("a|abc" finds "a" in "abc" first). But anchors written
/// after P can be swallowed: by a `(?x)` comment running to the end of the line, or by a `\Q`
/// quote never closed. So when the plain wrapping does not compile, a line break (which ends
/// a comment and is ignored in (?x) mode) or a `\E` goes before the closing anchor.
///
/// `@unchecked Sendable`: `cache` is only touched under `lock`, and NSRegularExpression is
/// immutable once made and documented safe to use from several threads at once.
final class WholeStringRegex: @unchecked Sendable {
    static let shared = WholeStringRegex()
    private var cache: [String: NSRegularExpression?] = [:]
    private let lock = NSLock()
    private let limit = 512

    /// The anchored expression for `pattern`, nil when ICU refuses the pattern.
    func regex(_ pattern: String, caseInsensitive: Bool) -> NSRegularExpression? {
        let key = (caseInsensitive ? "i:" : "s:") + pattern
        lock.lock()
        defer { lock.unlock() }
        if let cached = cache[key] { return cached }
        let options: NSRegularExpression.Options = caseInsensitive ? [.caseInsensitive] : []
        var compiled: NSRegularExpression?
        if (try? NSRegularExpression(pattern: pattern, options: options)) != nil {
            for closing in [")\\z", "\n)\\z", "\\E)\\z", "\\E\n)\\z"] {
                if let regex = try? NSRegularExpression(pattern: "^(?:" + pattern + closing, options: options) {
                    compiled = regex
                    break
                }
            }
        }
        if cache.count >= limit { cache.removeAll() }
        cache[key] = .some(compiled)
        return compiled
    }

    func isValid(_ pattern: String) -> Bool { regex(pattern, caseInsensitive: false) != nil }

    /// Whether the pattern matches all of `text`.
    func matchesWhole(_ text: String, pattern: String, caseInsensitive: Bool = false) -> Bool {
        guard let regex = regex(pattern, caseInsensitive: caseInsensitive) else { return false }
        let range = NSRange(text.startIndex..<text.endIndex, in: text)
        return regex.firstMatch(in: text, options: [], range: range) != nil
    }
}
