import Foundation
import ManagedStoreCore

/// Writes metrics in Prometheus's text exposition format 0.0.4: a `# HELP` and `# TYPE` line per
/// family, then its samples, label values escaped.
struct PrometheusText {
    private(set) var text = ""

    static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    mutating func family(_ name: String, _ type: String, _ help: String) {
        text += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
    }

    mutating func sample(_ name: String, _ value: Double, labels: [(String, String)] = []) {
        text += name + Self.labels(labels) + " " + Self.number(value) + "\n"
    }

    mutating func histogram(_ name: String, _ histogram: Histogram, labels: [(String, String)] = []) {
        for (bound, count) in zip(histogram.bounds, histogram.cumulativeCounts) {
            sample(name + "_bucket", Double(count), labels: labels + [("le", Self.number(bound))])
        }
        sample(name + "_bucket", Double(histogram.count), labels: labels + [("le", "+Inf")])
        sample(name + "_sum", histogram.sum, labels: labels)
        sample(name + "_count", Double(histogram.count), labels: labels)
    }

    private static func labels(_ labels: [(String, String)]) -> String {
        guard !labels.isEmpty else { return "" }
        return "{" + labels.map { name, value in "\(name)=\"\(escape(value))\"" }.joined(separator: ",") + "}"
    }

    /// Label values escape backslash, double quote and newline (the format's only three).
    private static func escape(_ value: String) -> String {
        value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"").replacingOccurrences(of: "\n", with: "\\n")
    }

    /// Whole numbers without a fraction (counts read as counts), others as Swift prints them.
    private static func number(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }
}
