import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite

/// The stored text of decimals (`DecimalStorage`): exact round trips, bytewise order equal to
/// numeric order, one text per number, and malformed text refused.
@Suite("Decimal storage encoding")
struct DecimalStorageTests {
    static func decimal(_ text: String) -> Decimal {
        // Fixed literals of this file; a nil is a typo here, not input.
        Decimal(string: text, locale: Locale(identifier: "en_US_POSIX"))!
    }

    /// Bytewise order, as SQLite's BINARY collation compares TEXT.
    static func bytewise(_ a: String, _ b: String) -> ComparisonResult {
        a.utf8.lexicographicallyPrecedes(b.utf8) ? .orderedAscending : (a == b ? .orderedSame : .orderedDescending)
    }

    static func numeric(_ a: Decimal, _ b: Decimal) -> ComparisonResult {
        a < b ? .orderedAscending : (a == b ? .orderedSame : .orderedDescending)
    }

    @Test("the documented examples", arguments: [
        ("12.5", "3502125 12.5"), ("1.2", "350112 1.2"), ("0.001", "34981 0.001"), ("0", "2 0"), ("-0", "2 0"),
        ("-0.5", "14994~ -0.5"), ("-100", "14968~ -100"), ("-1.25", "1498874~ -1.25"), ("-1.2", "149887~ -1.2"),
        ("1e-100", "34011 1e-100"), ("12.50", "3502125 12.5"), ("100000000000000000000", "35211 100000000000000000000"),
        ("1e41", "35421 1e41"), ("-1.5e-25", "152384~ -1.5e-25"), ("0.00000000000000000001", "34811 0.00000000000000000001"),
    ])
    func examples(_ value: String, _ stored: String) throws {
        #expect(DecimalStorage.encode(Self.decimal(value)) == stored)
        #expect(DecimalStorage.decode(stored) == Self.decimal(value))
    }

    /// Values in increasing order, with equal neighbours written differently.
    static let ordered: [String] = [
        "-340282366920938463463374607431768211455e127", "-1e100", "-99999999999999999999999999999999999999", "-1e20", "-100",
        "-12.5", "-1.25", "-1.21", "-1.2", "-1.2000", "-1", "-0.5", "-0.1", "-0.09", "-0.001", "-1e-20", "-1e-127",
        "0", "-0", "0.000",
        "1e-127", "1e-21", "0.00000000000000000001", "0.001", "0.0010", "0.01", "0.1", "0.10000000000000000000000000000000000001", "0.5", "0.999",
        "1", "1.0", "1.2", "1.20", "1.21", "1.25", "9", "10", "12.5", "12.50", "99.99", "100",
        "1e20", "100000000000000000001", "99999999999999999999999999999999999999", "340282366920938463463374607431768211455",
        "1e40", "1e41", "340282366920938463463374607431768211455e127",
    ]

    @Test("bytewise order is numeric order, and equal numbers have one text")
    func orderMatches() throws {
        let values = Self.ordered.map(Self.decimal)
        let texts = try values.map { try #require(DecimalStorage.encode($0), "no text for \($0)") }
        for i in values.indices {
            #expect(DecimalStorage.decode(texts[i]) == values[i], "\(Self.ordered[i]) read back as \(String(describing: DecimalStorage.decode(texts[i])))")
            for j in values.indices {
                #expect(Self.bytewise(texts[i], texts[j]) == Self.numeric(values[i], values[j]),
                        "\(Self.ordered[i]) (\(texts[i])) against \(Self.ordered[j]) (\(texts[j]))")
            }
        }
    }

    /// A random decimal: up to 39 digits (within 128 bits), any exponent Decimal holds, either sign.
    static func randomDecimal<G: RandomNumberGenerator>(_ generator: inout G) -> Decimal {
        let count = Int.random(in: 1...38, using: &generator)
        var digits = (0..<count).map { _ in String(Int.random(in: 0...9, using: &generator)) }.joined()
        if Int.random(in: 0..<20, using: &generator) == 0 { digits = "3" + digits }  // now and then 39 digits
        let exponent = Int.random(in: -128...(127 - max(0, digits.count - 38)), using: &generator)
        let sign = Bool.random(using: &generator) ? "-" : ""
        // Decimal(string:) answers NaN (or nil) for what it cannot hold; the caller drops those.
        return Decimal(string: "\(sign)\(digits)e\(exponent)", locale: Locale(identifier: "en_US_POSIX")) ?? .nan
    }

    @Test("random decimals round-trip exactly and order as numbers")
    func randomValues() throws {
        var generator = PredicateFuzzTests.SplitMix64(seed: 0x5eed_dec1_3a1)
        let values = (0..<2_000).map { _ in Self.randomDecimal(&generator) }.filter { !$0.isNaN }
        #expect(values.count > 1_500, "the generator made mostly NaN")
        var texts: [String] = []
        for value in values {
            let text = try #require(DecimalStorage.encode(value), "no text for \(value)")
            #expect(DecimalStorage.decode(text) == value, "\(value) as \(text)")
            texts.append(text)
        }
        for i in 1..<values.count {
            #expect(Self.bytewise(texts[i - 1], texts[i]) == Self.numeric(values[i - 1], values[i]), "\(values[i - 1]) against \(values[i])")
        }
        let byText = values.indices.sorted { texts[$0].utf8.lexicographicallyPrecedes(texts[$1].utf8) }.map { values[$0] }
        #expect(byText == values.sorted())
    }

    @Test("the extremes of Decimal round-trip")
    func extremes() throws {
        for value in [Decimal.greatestFiniteMagnitude, -Decimal.greatestFiniteMagnitude, Decimal.leastNonzeroMagnitude,
                      -Decimal.leastNonzeroMagnitude, Self.decimal("340282366920938463463374607431768211455")] {
            let text = try #require(DecimalStorage.encode(value))
            #expect(DecimalStorage.decode(text) == value, "\(value) as \(text)")
        }
    }

    @Test("NaN has no text (the store keeps it as NULL; validation refuses it first)")
    func nan() {
        #expect(DecimalStorage.encode(.nan) == nil)
    }

    @Test("text that is not exactly what the encoder writes is refused, never trapped on", arguments: [
        "", "2", "2 ", "2 00", "2 -0", "3", "3502", "3502125", "3502125 ", "3502125 12.50", "3502125 12.4", "3502125 12.5 ",
        "350212 12.5", "3502120 12.5", "3502012 1.2", "4502125 12.5", "0502125 12.5", "3a02125 12.5", "350x125 12.5",
        "1498874 -1.25", "1498874~-1.25", "1498874~ 1.25", "1498874~ -1.24", "14988749~ -1.25", "10498874~ -1.25",
        "12.5", "-1.25", "NaN", "3999 1", "39991 1e498", "30001 1e-501", "3502125\u{0}12.5", "3502125 12.5\u{0}",
        "3539" + String(repeating: "9", count: 40) + " " + String(repeating: "9", count: 39) + "0",
        "3539340282366920938463463374607431768211456 340282366920938463463374607431768211456",
        "é", "3502125 12,5", "3502125 1.25e1",
    ])
    func refusesMalformed(_ text: String) {
        #expect(DecimalStorage.decode(text) == nil)
    }

    @Test("arbitrary bytes never trap the decoder")
    func arbitraryBytes() {
        var generator = PredicateFuzzTests.SplitMix64(seed: 42)
        let alphabet = Array("0123456789123 ~-.e".utf8)
        for _ in 0..<20_000 {
            let length = Int.random(in: 0...24, using: &generator)
            let bytes = (0..<length).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &generator)] }
            if let value = bytes.withUnsafeBufferPointer(DecimalStorage.decode) {
                // Whatever it accepts is exactly what the encoder writes for that value.
                #expect(DecimalStorage.encode(value).map { Array($0.utf8) } == bytes)
            }
        }
    }
}
