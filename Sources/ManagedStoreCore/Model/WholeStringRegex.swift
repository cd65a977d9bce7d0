import Foundation

/// Regular expressions that must match a whole string (a model's `pattern`, MATCHES), compiled
/// once and shared by every thread.
///
/// They run on `LinearRegex`, in time linear in the text whatever the pattern: the patterns
/// come from clients, and they also run inside SQLite (`ms_strop`), where a slow match cannot be
/// interrupted. `LinearRegex` matches the whole string itself, so no anchors are added around
/// the pattern.
///
/// `@unchecked Sendable`: `cache` is only read and written under `lock`, and the compiled
/// `LinearRegex` values it hands out are immutable.
final class WholeStringRegex: @unchecked Sendable {
    static let shared = WholeStringRegex()
    private struct Key: Hashable {
        let pattern: String
        let caseInsensitive: Bool
    }

    private var cache: [Key: Result<LinearRegex, LinearRegexError>] = [:]
    private var cachedInstructions = 0
    private let lock = NSLock()
    /// Patterns come from clients: the cache starts over when it holds this many patterns, or
    /// this many instructions in all (12 bytes each, so about 12 MB), rather than growing.
    private let limit = 512
    private let instructionBudget = 1_000_000

    /// The compiled pattern, or why it is refused.
    func compiled(_ pattern: String, caseInsensitive: Bool) -> Result<LinearRegex, LinearRegexError> {
        let key = Key(pattern: pattern, caseInsensitive: caseInsensitive)
        lock.lock()
        defer { lock.unlock() }
        if let cached = cache[key] { return cached }
        let result = Result { () throws(LinearRegexError) in try LinearRegex(pattern, caseInsensitive: caseInsensitive) }
        let instructions = (try? result.get())?.instructions.count ?? 0
        if cache.count >= limit || cachedInstructions + instructions > instructionBudget {
            cache.removeAll()
            cachedInstructions = 0
        }
        cache[key] = result
        cachedInstructions += instructions
        return result
    }

    /// Why `pattern` is refused, or nil when it is valid.
    func error(_ pattern: String) -> LinearRegexError? {
        if case .failure(let error) = compiled(pattern, caseInsensitive: false) { return error }
        return nil
    }

    func isValid(_ pattern: String) -> Bool { error(pattern) == nil }

    /// Whether the pattern matches all of `text` (false for a refused pattern).
    func matchesWhole(_ text: String, pattern: String, caseInsensitive: Bool = false) -> Bool {
        guard case .success(let regex) = compiled(pattern, caseInsensitive: caseInsensitive) else { return false }
        return regex.matchesWhole(text)
    }
}
