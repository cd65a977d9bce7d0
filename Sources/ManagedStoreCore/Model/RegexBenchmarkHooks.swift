/// The MATCHES engine without a store around it, for the benchmark package only
/// (`@_spi(Benchmarks) import ManagedStoreCore`), which measures it against NSRegularExpression.
/// Not part of the library's API.
@_spi(Benchmarks)
public enum RegexBenchmarkHooks {
    /// What a MATCHES comparison does per row: the shared compiled-pattern cache, then a
    /// whole-string match.
    public static func matchesWhole(_ text: String, pattern: String, caseInsensitive: Bool = false) -> Bool {
        WholeStringRegex.shared.matchesWhole(text, pattern: pattern, caseInsensitive: caseInsensitive)
    }
}
