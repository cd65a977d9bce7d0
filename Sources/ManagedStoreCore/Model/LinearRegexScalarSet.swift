/// A set of Unicode scalars that one `LinearRegex` instruction tests a text scalar against:
/// a bracket expression (`[a-z\d]`, `[^…]`), a class escape (`\d`, `\W`, `\p{Lu}`) or `.`.
///
/// Membership is decided per scalar from the standard library's Unicode properties, so no set
/// is ever expanded into a table, whatever ranges or categories it names.
struct LinearRegexScalarSet: Hashable, Sendable {
    enum Item: Hashable, Sendable {
        /// The scalars from `low` through `high`.
        case range(UInt32, UInt32)
        /// A property, or its complement (`\D`, `\P{L}`).
        case property(LinearRegexProperty, negated: Bool)
    }

    var items: [Item] = []
    /// `[^…]`.
    var negated = false
    /// Made under `(?i)`: a scalar matches when any scalar of its fold class is in the set
    /// (ICU closes a set over case, then complements it for `[^…]`: `(?i)[^a]` matches neither
    /// "a" nor "A").
    var caseInsensitive = false

    func contains(_ c: Unicode.Scalar) -> Bool {
        guard caseInsensitive else { return negated != items.contains { Self.item($0, contains: c) } }
        let equivalents = LinearRegexCaseFolding.equivalents(of: c)
        let found = items.contains { item in
            switch item {
            case .range:
                return equivalents.contains { Self.item(item, contains: $0) }
            case .property(let property, let itemNegated):
                // A property is closed over case before an item's own complement, as ICU does:
                // `(?i)\P{Lu}` matches neither "A" nor "a".
                return itemNegated != equivalents.contains { property.contains($0) }
            }
        }
        return negated != found
    }

    private static func item(_ item: Item, contains c: Unicode.Scalar) -> Bool {
        switch item {
        case .range(let low, let high): return c.value >= low && c.value <= high
        case .property(let property, let negated): return negated != property.contains(c)
        }
    }

    /// One property, or its complement.
    static func property(_ property: LinearRegexProperty, negated: Bool = false) -> Self {
        Self(items: [.property(property, negated: negated)])
    }
}

/// The named sets of the pattern language, with ICU's definitions.
enum LinearRegexProperty: Hashable, Sendable {
    /// Scalars whose general category is in the mask (bit positions: `categoryBit`).
    case categories(UInt32)
    /// `\d`: decimal digits in any script (Nd).
    case digit
    /// `\w`: alphabetic, marks, decimal digits, connector punctuation, ZWNJ and ZWJ.
    case word
    /// `\s`: the White_Space property (includes U+000B, U+0085, U+00A0).
    case whiteSpace
    /// `\h`: space separators (Zs) and tab.
    case horizontalSpace
    /// `\v`, and what `.` does not match: ICU's line terminators, U+000A–U+000D, U+0085, U+2028, U+2029.
    case lineTerminator
    case any, ascii, assigned, alphabetic, uppercase, lowercase

    func contains(_ c: Unicode.Scalar) -> Bool {
        switch self {
        case .categories(let mask): return mask & (1 << Self.categoryBit(c.properties.generalCategory)) != 0
        case .digit: return c.value < 0x80 ? (c.value >= 0x30 && c.value <= 0x39) : c.properties.generalCategory == .decimalNumber
        case .word: return Self.isWord(c)
        case .whiteSpace: return c.properties.isWhitespace
        case .horizontalSpace: return c.value == 0x09 || c.properties.generalCategory == .spaceSeparator
        case .lineTerminator: return Self.isLineTerminator(c)
        case .any: return true
        case .ascii: return c.value < 0x80
        case .assigned: return c.properties.generalCategory != .unassigned
        case .alphabetic: return c.properties.isAlphabetic
        case .uppercase: return c.properties.isUppercase
        case .lowercase: return c.properties.isLowercase
        }
    }

    static func isLineTerminator(_ c: Unicode.Scalar) -> Bool {
        (c.value >= 0x0A && c.value <= 0x0D) || c.value == 0x85 || c.value == 0x2028 || c.value == 0x2029
    }

    /// ICU's word characters, which `\w` and `\b` share.
    static func isWord(_ c: Unicode.Scalar) -> Bool {
        if c.value < 0x80 {
            let v = c.value
            return (v >= 0x30 && v <= 0x39) || (v >= 0x41 && v <= 0x5A) || (v >= 0x61 && v <= 0x7A) || v == 0x5F
        }
        if c.value == 0x200C || c.value == 0x200D { return true }
        let properties = c.properties
        if properties.isAlphabetic { return true }
        switch properties.generalCategory {
        case .nonspacingMark, .spacingMark, .enclosingMark, .decimalNumber, .connectorPunctuation: return true
        default: return false
        }
    }

    /// Scalars that `\b` looks through, as ICU does: a combining mark or a format character
    /// belongs to the character before it.
    static func isWordBoundaryTransparent(_ c: Unicode.Scalar) -> Bool {
        if c.value < 0x80 { return false }
        return c.properties.isGraphemeExtend || c.properties.generalCategory == .format
    }

    // MARK: Names

    /// The property `\p{name}` names, or nil. Names match loosely, as ICU's do: case, spaces,
    /// `_` and `-` are ignored, and `gc=` / `General_Category=` may come first.
    static func named(_ name: String) -> LinearRegexProperty? {
        let loose = String(name.lowercased().unicodeScalars.filter { $0 != " " && $0 != "_" && $0 != "-" })
        for prefix in ["gc=", "generalcategory="] where loose.hasPrefix(prefix) {
            return categoryMasks[String(loose.dropFirst(prefix.count))].map { .categories($0) }
        }
        if let mask = categoryMasks[loose] { return .categories(mask) }
        switch loose {
        case "any": return .any
        case "ascii": return .ascii
        case "assigned": return .assigned
        case "alphabetic": return .alphabetic
        case "whitespace": return .whiteSpace
        case "uppercase": return .uppercase
        case "lowercase": return .lowercase
        default: return nil
        }
    }

    /// Short and long general category names (loose form) and the categories they cover.
    private static let categoryMasks: [String: UInt32] = {
        func mask(_ categories: [Unicode.GeneralCategory]) -> UInt32 { categories.reduce(0) { $0 | 1 << categoryBit($1) } }
        let groups: [([String], [Unicode.GeneralCategory])] = [
            (["l", "letter"], [.uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter]),
            (["lc", "casedletter"], [.uppercaseLetter, .lowercaseLetter, .titlecaseLetter]),
            (["lu", "uppercaseletter"], [.uppercaseLetter]),
            (["ll", "lowercaseletter"], [.lowercaseLetter]),
            (["lt", "titlecaseletter"], [.titlecaseLetter]),
            (["lm", "modifierletter"], [.modifierLetter]),
            (["lo", "otherletter"], [.otherLetter]),
            (["m", "mark", "combiningmark"], [.nonspacingMark, .spacingMark, .enclosingMark]),
            (["mn", "nonspacingmark"], [.nonspacingMark]),
            (["mc", "spacingmark"], [.spacingMark]),
            (["me", "enclosingmark"], [.enclosingMark]),
            (["n", "number"], [.decimalNumber, .letterNumber, .otherNumber]),
            (["nd", "decimalnumber"], [.decimalNumber]),
            (["nl", "letternumber"], [.letterNumber]),
            (["no", "othernumber"], [.otherNumber]),
            (["p", "punctuation"], [.connectorPunctuation, .dashPunctuation, .openPunctuation, .closePunctuation,
                                    .initialPunctuation, .finalPunctuation, .otherPunctuation]),
            (["pc", "connectorpunctuation"], [.connectorPunctuation]),
            (["pd", "dashpunctuation"], [.dashPunctuation]),
            (["ps", "openpunctuation"], [.openPunctuation]),
            (["pe", "closepunctuation"], [.closePunctuation]),
            (["pi", "initialpunctuation"], [.initialPunctuation]),
            (["pf", "finalpunctuation"], [.finalPunctuation]),
            (["po", "otherpunctuation"], [.otherPunctuation]),
            (["s", "symbol"], [.mathSymbol, .currencySymbol, .modifierSymbol, .otherSymbol]),
            (["sm", "mathsymbol"], [.mathSymbol]),
            (["sc", "currencysymbol"], [.currencySymbol]),
            (["sk", "modifiersymbol"], [.modifierSymbol]),
            (["so", "othersymbol"], [.otherSymbol]),
            (["z", "separator"], [.spaceSeparator, .lineSeparator, .paragraphSeparator]),
            (["zs", "spaceseparator"], [.spaceSeparator]),
            (["zl", "lineseparator"], [.lineSeparator]),
            (["zp", "paragraphseparator"], [.paragraphSeparator]),
            (["c", "other"], [.control, .format, .surrogate, .privateUse, .unassigned]),
            (["cc", "control"], [.control]),
            (["cf", "format"], [.format]),
            (["cs", "surrogate"], [.surrogate]),
            (["co", "privateuse"], [.privateUse]),
            (["cn", "unassigned"], [.unassigned]),
        ]
        var masks: [String: UInt32] = [:]
        for (names, categories) in groups {
            for name in names { masks[name] = mask(categories) }
        }
        return masks
    }()

    /// A bit per general category, for `categories` masks.
    static func categoryBit(_ category: Unicode.GeneralCategory) -> UInt32 {
        switch category {
        case .uppercaseLetter: return 0
        case .lowercaseLetter: return 1
        case .titlecaseLetter: return 2
        case .modifierLetter: return 3
        case .otherLetter: return 4
        case .nonspacingMark: return 5
        case .spacingMark: return 6
        case .enclosingMark: return 7
        case .decimalNumber: return 8
        case .letterNumber: return 9
        case .otherNumber: return 10
        case .connectorPunctuation: return 11
        case .dashPunctuation: return 12
        case .openPunctuation: return 13
        case .closePunctuation: return 14
        case .initialPunctuation: return 15
        case .finalPunctuation: return 16
        case .otherPunctuation: return 17
        case .mathSymbol: return 18
        case .currencySymbol: return 19
        case .modifierSymbol: return 20
        case .otherSymbol: return 21
        case .spaceSeparator: return 22
        case .lineSeparator: return 23
        case .paragraphSeparator: return 24
        case .control: return 25
        case .format: return 26
        case .surrogate: return 27
        case .privateUse: return 28
        case .unassigned: return 29
        @unknown default: return 29
        }
    }
}
