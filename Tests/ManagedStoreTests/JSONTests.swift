import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite

/// The strict JSON parser, the writer, exact numbers, and JSON <-> attribute values.
@Suite("JSON parsing, writing and attribute values")
struct JSONTests {
    // MARK: Helpers

    static func parse(_ text: String) throws(JSONParseError) -> JSONValue { try JSONParser().parse(text) }

    /// The error a parse must throw; records an issue (and returns nil) when it parses.
    static func parseError(_ bytes: [UInt8], maxDepth: Int = 512, sourceLocation: SourceLocation = #_sourceLocation) -> JSONParseError? {
        do {
            let value = try JSONParser(maxDepth: maxDepth).parse(bytes)
            Issue.record("parsed but should have been refused: \(value)", sourceLocation: sourceLocation)
            return nil
        } catch {
            return error
        }
    }

    static func parseError(_ text: String, maxDepth: Int = 512, sourceLocation: SourceLocation = #_sourceLocation) -> JSONParseError? {
        parseError(Array(text.utf8), maxDepth: maxDepth, sourceLocation: sourceLocation)
    }

    /// The attribute value for `json`, or the type mismatch it raises.
    static func convert(_ json: JSONValue, _ type: AttributeType) -> Result<AttributeValue, AttributeJSONError> {
        do { return .success(try AttributeValue(json: json, type: type)) } catch { return .failure(error) }
    }

    static func isMismatch(_ json: JSONValue, _ type: AttributeType) -> Bool {
        if case .failure(.typeMismatch(let expected, _)) = convert(json, type) { return expected == type }
        return false
    }

    // MARK: Valid documents

    @Test("a document with every kind of value parses to the exact structure")
    func parsesEveryKind() throws {
        let value = try Self.parse(#" { "a" : [1, -2.5e3, true, false, null, "x"], "b": {}, "c": [] } "#)
        #expect(value == .object([
            ("a", .array([.number("1"), .number("-2.5e3"), .bool(true), .bool(false), .null, .string("x")])),
            ("b", .object([])),
            ("c", .array([])),
        ]))
        #expect(try Self.parse("42") == .number("42"))
        #expect(try Self.parse(#""s""#) == .string("s"))
        #expect(try Self.parse("\t\r\n null \n") == .null)
    }

    @Test("object members keep document order and the last duplicate key wins on lookup")
    func memberOrderAndDuplicates() throws {
        let value = try Self.parse(#"{"z": 1, "a": 2, "z": 3}"#)
        #expect(value.objectMembers?.map(\.0) == ["z", "a", "z"])
        #expect(value["z"] == .number("3"))
        #expect(value["a"] == .number("2"))
        #expect(value["missing"] == nil)
    }

    @Test("escapes, \\u escapes and surrogate pairs decode to the right characters")
    func escapesAndUnicode() throws {
        #expect(try Self.parse(#""\"\\\/\b\f\n\r\t""#) == .string("\"\\/\u{08}\u{0C}\n\r\t"))
        #expect(try Self.parse(#""\u00e9\u4E2D\u0000""#) == .string("é中\u{0}"))
        #expect(try Self.parse(#""\ud83d\ude00""#) == .string("😀"))
        #expect(try Self.parse(#""\uD834\uDD1E clef""#) == .string("𝄞 clef"))
        #expect(try Self.parse(#""\uDBFF\uDFFF""#) == .string("\u{10FFFF}"))
        // Raw UTF-8 of every length passes through unchanged.
        #expect(try Self.parse("\"aé中😀\u{7F}\"") == .string("aé中😀\u{7F}"))
        // Text before and after an escape, raw UTF-8 on both sides, is kept around it.
        #expect(try Self.parse("\"aé\\n中😀\\u00e9 end\"") == .string("aé\n中😀é end"))
        // An escaped key is decoded too.
        #expect(try Self.parse(#"{"\u0041b": 1}"#)["Ab"] == .number("1"))
    }

    @Test("combining characters are kept as written, not normalized")
    func noNormalization() throws {
        let decomposed = try Self.parse("\"e\u{301}\"")
        guard case .string(let s) = decomposed else { Issue.record("not a string"); return }
        #expect(Array(s.unicodeScalars) == ["e", "\u{301}"])
    }

    // MARK: Errors with offsets

    @Test("text after the value is refused at its offset")
    func trailingText() {
        #expect(Self.parseError("{} x")?.offset == 3)
        #expect(Self.parseError("1 2")?.offset == 2)
        #expect(Self.parseError("[1]]")?.offset == 3)
        #expect(Self.parseError(#"{"a":1}{"b":2}"#)?.offset == 7)
        #expect(Self.parseError("nullx")?.offset == 4)
        #expect(Self.parseError("{} x")?.message.contains("after the JSON value") == true)
    }

    @Test("leading zeros are refused")
    func leadingZeros() {
        #expect(Self.parseError("01")?.offset == 1)
        #expect(Self.parseError("[-012]")?.offset == 3)
        #expect(Self.parseError("00")?.message.contains("leading zero") == true)
        // 0, -0, 0.5 and 0e1 are fine.
        #expect(throws: Never.self) { try Self.parse("[0, -0, 0.5, 0e1, -0.0]") }
    }

    @Test("malformed numbers are refused", arguments: ["-", "1.", ".5", "+1", "1e", "1e+", "-a", "1.e3", "NaN", "Infinity", "-Infinity", "0x10"])
    func malformedNumbers(_ text: String) {
        #expect(Self.parseError(text) != nil)
    }

    @Test("lone surrogates in \\u escapes are refused at the escape")
    func loneSurrogates() {
        let high = Self.parseError(#""\ud800""#)
        #expect(high?.message.contains("surrogate") == true)
        #expect(high?.offset == 7)
        let low = Self.parseError(#""\udc00""#)
        #expect(low?.message.contains("surrogate") == true)
        #expect(low?.offset == 7)
        let highThenLetter = Self.parseError(#""\ud800\u0041""#)
        #expect(highThenLetter?.message.contains("surrogate") == true)
        #expect(highThenLetter?.offset == 13)
        let highThenText = Self.parseError(#""\ud83dx""#)
        #expect(highThenText?.message.contains("surrogate") == true)
        #expect(Self.parseError(#""\ude00\ud83d""#)?.message.contains("surrogate") == true, "a reversed pair is two lone surrogates")
        #expect(Self.parseError(#"["\udbff"]"#) != nil)
    }

    @Test("invalid UTF-8 is refused at the offending byte",
          arguments: [
            [0xC0, 0xAF],              // overlong "/"
            [0xC1, 0xBF],              // overlong
            [0xE0, 0x80, 0xAF],        // overlong 3-byte
            [0xED, 0xA0, 0x80],        // UTF-8 encoded surrogate U+D800
            [0xED, 0xBF, 0xBF],        // UTF-8 encoded surrogate U+DFFF
            [0xF0, 0x80, 0x80, 0xAF],  // overlong 4-byte
            [0xF4, 0x90, 0x80, 0x80],  // beyond U+10FFFF
            [0xF5, 0x80, 0x80, 0x80],  // invalid leading byte
            [0xFF],
            [0x80],                    // stray continuation byte
            [0xE2, 0x82],              // truncated sequence before the closing quote
            [0xE2, 0x28, 0xA1],        // bad continuation
          ] as [[UInt8]])
    func invalidUTF8(_ sequence: [UInt8]) {
        let bytes: [UInt8] = [UInt8(ascii: "\""), UInt8(ascii: "a")] + sequence + [UInt8(ascii: "\"")]
        let error = Self.parseError(bytes)
        #expect(error?.offset == 2)
        #expect(error?.message.contains("UTF-8") == true)
    }

    @Test("a truncated UTF-8 sequence at the end of input is refused, not read past the end")
    func truncatedUTF8AtEnd() {
        #expect(Self.parseError([UInt8(ascii: "\""), 0xF0, 0x9F]) != nil)
        #expect(Self.parseError([UInt8(ascii: "\""), 0xE2]) != nil)
    }

    @Test("valid multi-byte UTF-8 at the edges of each range is accepted")
    func validUTF8Edges() throws {
        for scalar in ["\u{80}", "\u{7FF}", "\u{800}", "\u{D7FF}", "\u{E000}", "\u{FFFF}", "\u{10000}", "\u{10FFFF}"] {
            #expect(try Self.parse("\"\(scalar)\"") == .string(scalar))
        }
    }

    @Test("control characters inside strings are refused at their offset")
    func controlCharacters() {
        for byte: UInt8 in [0x00, 0x01, 0x0A, 0x0D, 0x09, 0x1F] {
            let error = Self.parseError([UInt8(ascii: "\""), UInt8(ascii: "a"), byte, UInt8(ascii: "\"")])
            #expect(error?.offset == 2, "byte \(byte)")
            #expect(error?.message.contains("control character") == true)
        }
    }

    @Test("bad escapes and unterminated strings are refused")
    func badStrings() {
        #expect(Self.parseError(#""\x""#) != nil)
        #expect(Self.parseError(#""\u12G4""#) != nil)
        #expect(Self.parseError(#""\u12""#) != nil)
        #expect(Self.parseError(#""abc"#)?.message.contains("unterminated") == true)
        #expect(Self.parseError(#""abc\"#) != nil)
        #expect(Self.parseError("'single'") != nil)
    }

    @Test("structural mistakes are refused", arguments: [
        "", "   ", "[1,]", "[,1]", "[1 2]", #"{"a":1,}"#, #"{"a" 1}"#, #"{a:1}"#, #"{"a":}"#, "{1:2}", "[", "{", "]", "tru", "nul", "True", "[1,,2]",
    ])
    func structuralMistakes(_ text: String) {
        #expect(Self.parseError(text) != nil)
    }

    @Test("nesting up to maxDepth parses, one level more is an error at that bracket")
    func maxDepthBoundary() throws {
        #expect(throws: Never.self) { try JSONParser(maxDepth: 3).parse("[[[1]]]") }
        let error = Self.parseError("[[[[1]]]]", maxDepth: 3)
        #expect(error?.offset == 3)
        #expect(error?.message.contains("nesting") == true)
        let objects = Self.parseError(#"{"a":{"a":{"a":{"a":1}}}}"#, maxDepth: 3)
        #expect(objects?.message.contains("nesting") == true)
        #expect(objects?.offset == 15)
        let mixed = Self.parseError(#"[{"a":[{}]}]"#, maxDepth: 3)
        #expect(mixed?.message.contains("nesting") == true)
        // The default allows 512 levels.
        let deep512 = String(repeating: "[", count: 512) + String(repeating: "]", count: 512)
        #expect(throws: Never.self) { try JSONParser().parse(deep512) }
        #expect(JSONParser().maxDepth == 512)
    }

    @Test("10,000 opening brackets throw a nesting error instead of overflowing the stack")
    func deepNestingDoesNotCrash() {
        let error = Self.parseError(String(repeating: "[", count: 10_000))
        #expect(error?.message.contains("nesting") == true)
        #expect(error?.offset == 512)
        let objects = Self.parseError(String(repeating: #"{"a":"#, count: 10_000))
        #expect(objects?.message.contains("nesting") == true)
        let huge = Self.parseError(String(repeating: "[", count: 1_000_000))
        #expect(huge?.message.contains("nesting") == true)
    }

    @Test("JSONParseError describes message and byte offset")
    func parseErrorDescription() {
        let error = Self.parseError("[1,]")
        #expect(error?.description.hasSuffix("at byte 3") == true)
    }

    // MARK: Writing

    @Test("the writer escapes quotes, backslashes and control characters, and nothing else")
    func writerEscaping() {
        let text = JSONValue.string("q\"b\\n\nr\rt\t\u{0}\u{1}\u{8}\u{C}\u{1F}/é😀\u{7F}").serialized()
        #expect(text == #""q\"b\\n\nr\rt\t\u0000\u0001\u0008\u000c\u001f/é😀"# + "\u{7F}\"")
    }

    @Test("written text parses back to the same value, for every control character and non-ASCII text")
    func writerRoundTrip() throws {
        let all = String(String.UnicodeScalarView((0..<0x20).map { Unicode.Scalar(UInt8($0)) })) + "\"\\ e\u{301} 👨‍👩‍👧 \u{2028}\u{10FFFF}"
        let value = JSONValue.object([
            ("text", .string(all)),
            (all, .array([.number("-1.5e-7"), .bool(true), .null, .object([])])),
            ("n", .number("12345678901234567890123")),
        ])
        #expect(try Self.parse(value.serialized()) == value)
    }

    @Test("the writer is compact, keeps member order, and sorts keys bytewise only when asked")
    func writerLayoutAndKeyOrder() {
        let value = JSONValue.object([("b", .number("1")), ("é", .null), ("a", .array([.bool(true), .null])), ("B", .bool(false))])
        #expect(value.serialized() == #"{"b":1,"é":null,"a":[true,null],"B":false}"#)
        #expect(value.serialized(sortingKeys: true) == #"{"B":false,"a":[true,null],"b":1,"é":null}"#)
        var writer = JSONWriter(sortsKeys: true)
        writer.write(.array([value, .string("x")]))
        #expect(writer.string == #"[{"B":false,"a":[true,null],"b":1,"é":null},"x"]"#)
        #expect(writer.bytes == Array(writer.string.utf8))
    }

    @Test("attribute values written straight into the buffer read as their jsonValue", arguments: [
        AttributeValue.double(3), .double(-5), .double(-0.0), .double(0), .double(0.1), .double(-1e-7), .double(1e16),
        .double(9_007_199_254_740_991), .double(9_007_199_254_740_992), .double(4.5e15 + 0.5), .double(123_456.75),
        .float(2.5), .integer(-42), .boolean(true), .null, .string("say \"hi\"\n\u{1}é"),
        .date(Date(timeIntervalSince1970: 1_800_000_000.000001)), .uuid(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!),
    ])
    func attributeValuesWriteAsJSONValue(_ value: AttributeValue) {
        var direct = JSONWriter()
        direct.write(value)
        #expect(direct.string == value.jsonValue.serialized())
    }

    @Test("text written from bytes equals text written from the String those bytes decode to", arguments: [
        Array("plain ascii".utf8), Array("quote \" and \\ and \n".utf8), Array("é中😀".utf8), [0x61, 0xFF, 0x62], [0xED, 0xA0, 0x80], [],
    ])
    func stringsFromBytes(_ bytes: [UInt8]) {
        var fromBytes = JSONWriter()
        bytes.withUnsafeBufferPointer { fromBytes.writeString(utf8: $0) }
        var fromString = JSONWriter()
        fromString.writeString(String(decoding: bytes, as: UTF8.self))
        #expect(fromBytes.bytes == fromString.bytes)
    }

    @Test("numbers keep their exact source text through parse and write")
    func numbersKeepExactText() throws {
        let text = "[1.0,1e2,1E+2,-0,12345678901234567890123,0.1,1.5e-300,123456789.123456789123456789]"
        let value = try Self.parse(text)
        #expect(value.arrayValue?.first == .number("1.0"))
        #expect(value.arrayValue?[4] == .number("12345678901234567890123"))
        #expect(value.serialized() == text)
        #expect(JSONValue.number("1.0") != JSONValue.number("1"), "numbers compare by their text")
    }

    // MARK: Exact integers

    @Test("int64Value is exact", arguments: [
        ("9223372036854775807", Int64.max),
        ("-9223372036854775808", Int64.min),
        ("0", 0),
        ("-0", 0),
        ("42", 42),
        ("1e3", 1000),
        ("1E3", 1000),
        ("1e+3", 1000),
        ("2.0", 2),
        ("2.50e1", 25),
        ("100e-2", 1),
        ("-7.000", -7),
        ("9.223372036854775807e18", Int64.max),
    ] as [(String, Int64)])
    func int64ValueExact(_ text: String, _ expected: Int64) throws {
        let value = try Self.parse(text)
        #expect(value == .number(text))
        #expect(value.int64Value == expected)
    }

    @Test("int64Value is nil for fractions and values beyond Int64", arguments: [
        "9223372036854775808", "-9223372036854775809", "1e19", "18446744073709551616", "1.5", "0.1", "1e-2", "-2.25",
        "100000000000000000000000000000000000000000000000000",
        "9223372036854775807.5",
        "1.0000000000000000000000000000000000000001",
        "1e-400", "1e400", "123e-1", "-1e-50",
    ])
    func int64ValueNil(_ text: String) throws {
        let value = try Self.parse(text)
        #expect(value.int64Value == nil)
    }

    @Test("int64Value and doubleValue are nil for values that are not numbers")
    func int64ValueOfNonNumbers() {
        #expect(JSONValue.string("5").int64Value == nil)
        #expect(JSONValue.bool(true).int64Value == nil)
        #expect(JSONValue.null.int64Value == nil)
        #expect(JSONValue.string("5").doubleValue == nil)
        #expect(JSONValue.number("2.5e3").doubleValue == 2500)
    }

    // MARK: AttributeValue(json:type:)

    @Test("null is null for every attribute type", arguments: AttributeType.allCases)
    func nullForEveryType(_ type: AttributeType) throws {
        #expect(try AttributeValue(json: .null, type: type) == .null)
        #expect(AttributeValue.null.jsonValue == .null)
    }

    @Test("an array or object is a type mismatch for every attribute type", arguments: AttributeType.allCases)
    func containersAreMismatches(_ type: AttributeType) {
        #expect(Self.isMismatch(.array([]), type))
        #expect(Self.isMismatch(.object([("a", .null)]), type))
    }

    @Test("integer types take exact integers and keep out-of-type values for validation",
          arguments: [AttributeType.integer16, .integer32, .integer64])
    func integers(_ type: AttributeType) throws {
        #expect(try AttributeValue(json: .number("42"), type: type) == .integer(42))
        #expect(try AttributeValue(json: .number("-1e2"), type: type) == .integer(-100))
        #expect(try AttributeValue(json: .number("3.0"), type: type) == .integer(3))
        // Within Int64 but outside integer16/32: kept, validation reports its range.
        #expect(try AttributeValue(json: .number("40000"), type: type) == .integer(40000))
        #expect(try AttributeValue(json: .number("9223372036854775807"), type: type) == .integer(Int64.max))
        #expect(Self.isMismatch(.number("9223372036854775808"), type))
        #expect(Self.isMismatch(.number("-9223372036854775809"), type))
        #expect(Self.isMismatch(.number("1.5"), type))
        #expect(Self.isMismatch(.string("42"), type))
        #expect(Self.isMismatch(.bool(true), type))
        #expect(AttributeValue.integer(-42).jsonValue == .number("-42"))
    }

    @Test("an integer beyond Int64 names the attribute type and the JSON type in its mismatch")
    func integerMismatchDetails() {
        #expect(Self.convert(.number("99999999999999999999"), .integer64) == .failure(.typeMismatch(expected: .integer64, got: "number")))
        #expect(AttributeJSONError.typeMismatch(expected: .integer64, got: "number").description == "expected a integer64, got number")
    }

    @Test("a decimal keeps every digit through jsonValue", arguments: [
        "12345678901234567890.123456789", "0.1", "-0.000000001", "100", "99999999999999999999999999999999999999",
        "-12345678901234567890123456789.12345678",
    ])
    func decimalExact(_ text: String) throws {
        let value = try AttributeValue(json: .string(text), type: .decimal)
        #expect(value == .decimal(try #require(Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")))))
        #expect(value.jsonValue == .string(text))
        #expect(try AttributeValue(json: value.jsonValue, type: .decimal) == value)
    }

    @Test("a decimal may come as a JSON number and still keeps every digit")
    func decimalFromNumber() throws {
        let value = try AttributeValue(json: .number("12345678901234567890.123456789"), type: .decimal)
        #expect(value.jsonValue == .string("12345678901234567890.123456789"))
        #expect(try AttributeValue(json: .number("1.5e3"), type: .decimal).jsonValue == .string("1500"))
    }

    /// A decimal text reduced to sign, significant digits and exponent, so that equal numbers
    /// written differently ("1.50", "15e-1") compare equal, exactly.
    static func canonicalDecimal(_ text: String) -> String {
        var rest = Substring(text)
        var negative = false
        if rest.first == "-" { negative = true; rest = rest.dropFirst() } else if rest.first == "+" { rest = rest.dropFirst() }
        var exponent = 0
        if let e = rest.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            exponent = Int(rest[rest.index(after: e)...]) ?? 0
            rest = rest[..<e]
        }
        let parts = rest.split(separator: ".", omittingEmptySubsequences: false)
        let fraction = parts.count > 1 ? String(parts[1]) : ""
        var digits = Array(String(parts[0]) + fraction)
        exponent -= fraction.count
        while digits.first == "0" { digits.removeFirst() }
        if digits.isEmpty { return "0" }
        while digits.last == "0" { digits.removeLast(); exponent += 1 }
        return (negative ? "-" : "") + String(digits) + "e" + String(exponent)
    }

    @Test("canonicalDecimal, the helper of the next test, sees equal numbers as equal")
    func canonicalDecimalHelper() {
        #expect(Self.canonicalDecimal("1.50") == Self.canonicalDecimal("15e-1"))
        #expect(Self.canonicalDecimal("1500") == Self.canonicalDecimal("1.5e3"))
        #expect(Self.canonicalDecimal("-0.00") == "0")
        #expect(Self.canonicalDecimal("1") != Self.canonicalDecimal("1.0000000000000000000000000000000000000000001"))
        #expect(Self.canonicalDecimal("1e-200") != Self.canonicalDecimal("0"))
    }

    @Test("a decimal with more digits or a wider exponent than it can hold is refused or kept exactly, never rounded",
          arguments: [
            "1.00000000000000000000000000000000000000000001",
            "123456789012345678901234567890123456789012",
            "1e-200",
            "1e200",
          ])
    func decimalNeverRounds(_ text: String) {
        switch Self.convert(.string(text), .decimal) {
        case .failure(.typeMismatch(let expected, _)):
            #expect(expected == .decimal)
        case .success(let value):
            let written = value.jsonValue.stringValue ?? "not a string"
            #expect(Self.canonicalDecimal(written) == Self.canonicalDecimal(text), "the decimal \(text) was kept as \(written)")
        }
    }

    @Test("text that is not a whole decimal number is refused", arguments: [
        "12abc", "abc", "", " 1", "1 ", "1.", ".5", "1e", "1,5", "0x10", "NaN", "--1", "1..2", "١٢",
    ])
    func decimalRejects(_ text: String) {
        #expect(Self.isMismatch(.string(text), .decimal))
    }

    @Test("a decimal refuses booleans")
    func decimalRejectsBool() {
        #expect(Self.isMismatch(.bool(true), .decimal))
    }

    @Test("double and float take numbers; infinite results are refused")
    func doublesAndFloats() throws {
        #expect(try AttributeValue(json: .number("2.5"), type: .double) == .double(2.5))
        #expect(try AttributeValue(json: .number("-1e-7"), type: .double) == .double(-1e-7))
        #expect(try AttributeValue(json: .number("3"), type: .double) == .double(3))
        #expect(Self.isMismatch(.number("1e400"), .double))
        #expect(Self.isMismatch(.string("2.5"), .double))
        #expect(try AttributeValue(json: .number("0.5"), type: .float) == .float(0.5))
        #expect(try AttributeValue(json: .number("0.1"), type: .float) == .float(0.1))
        #expect(Self.isMismatch(.number("1e39"), .float))
        #expect(Self.isMismatch(.bool(false), .float))
        // jsonValue writes the shortest text that reads back to the same value.
        #expect(AttributeValue.double(2.5).jsonValue == .number("2.5"))
        #expect(AttributeValue.double(3).jsonValue == .number("3"))
        #expect(AttributeValue.double(0.1).jsonValue == .number("0.1"))
        #expect(AttributeValue.float(0.1).jsonValue == .number("0.1"))
        #expect(AttributeValue.double(.nan).jsonValue == .null)
        for v in [0.1, 1e300, -2.2250738585072014e-308, 123456.789] {
            #expect(try AttributeValue(json: AttributeValue.double(v).jsonValue, type: .double) == .double(v))
        }
    }

    @Test("strings and booleans take only their own JSON type")
    func stringsAndBooleans() throws {
        #expect(try AttributeValue(json: .string("héllo"), type: .string) == .string("héllo"))
        #expect(Self.isMismatch(.number("1"), .string))
        #expect(Self.isMismatch(.bool(true), .string))
        #expect(try AttributeValue(json: .bool(true), type: .boolean) == .boolean(true))
        #expect(try AttributeValue(json: .bool(false), type: .boolean) == .boolean(false))
        #expect(Self.isMismatch(.number("1"), .boolean))
        #expect(Self.isMismatch(.string("true"), .boolean))
        #expect(AttributeValue.boolean(true).jsonValue == .bool(true))
        #expect(AttributeValue.string("x").jsonValue == .string("x"))
    }

    // MARK: Dates

    @Test("a date parses RFC 3339 in UTC with fractional seconds")
    func dateUTC() throws {
        let value = try AttributeValue(json: .string("2024-02-29T12:34:56.123456Z"), type: .date)
        guard case .date(let date) = value else { Issue.record("not a date: \(value)"); return }
        #expect(abs(date.timeIntervalSince1970 - 1_709_210_096.123456) < 1e-6)
        #expect(value.jsonValue == .string("2024-02-29T12:34:56.123456Z"))
    }

    @Test("sub-millisecond precision survives RFC3339.string(from:)", arguments: [
        "2024-02-29T12:34:56.123456Z", "2026-01-01T00:00:00.000001Z", "2026-01-01T23:59:59.999999Z",
        "2001-01-01T00:00:00.000000Z", "1969-12-31T23:59:59.500000Z", "1900-03-01T08:00:00.250000Z",
    ])
    func datePrecisionRoundTrip(_ text: String) throws {
        let date = try #require(RFC3339.date(from: text))
        #expect(RFC3339.string(from: date) == text)
        let value = try AttributeValue(json: .string(text), type: .date)
        #expect(value.jsonValue == .string(text))
    }

    @Test("years at and past the ends of four digits")
    func dateYearEdges() throws {
        #expect(RFC3339.string(from: Date(timeIntervalSince1970: -62_135_596_800)) == "0001-01-01T00:00:00.000000Z")
        #expect(RFC3339.string(from: Date(timeIntervalSince1970: 253_402_300_799.5)) == "9999-12-31T23:59:59.500000Z")
        // Outside RFC 3339 the year is written as it is, the rest as usual.
        #expect(RFC3339.string(from: Date(timeIntervalSince1970: 253_402_300_800)) == "10000-01-01T00:00:00.000000Z")
    }

    @Test("dates a microsecond apart stay apart")
    func microsecondsDistinct() throws {
        let a = try #require(RFC3339.date(from: "2026-05-01T10:00:00.123456Z"))
        let b = try #require(RFC3339.date(from: "2026-05-01T10:00:00.123457Z"))
        #expect(a < b)
        #expect(abs(b.timeIntervalSince(a) - 0.000001) < 3e-7)
    }

    @Test("offsets are applied and the date is written back in UTC")
    func dateOffsets() throws {
        let utc = try #require(RFC3339.date(from: "2024-02-29T12:34:56.5Z"))
        let plus = try #require(RFC3339.date(from: "2024-02-29T14:34:56.5+02:00"))
        let minus = try #require(RFC3339.date(from: "2024-02-29T07:04:56.5-05:30"))
        let lower = try #require(RFC3339.date(from: "2024-02-29t12:34:56.5z"))
        #expect(plus == utc)
        #expect(minus == utc)
        #expect(lower == utc)
        #expect(try AttributeValue(json: .string("2024-02-29T14:34:56.5+02:00"), type: .date).jsonValue
                == .string("2024-02-29T12:34:56.500000Z"))
        // An offset that crosses midnight and a year boundary.
        #expect(RFC3339.string(from: try #require(RFC3339.date(from: "2025-01-01T01:00:00+03:00"))) == "2024-12-31T22:00:00.000000Z")
        // Without fraction, and with more than six fractional digits.
        #expect(RFC3339.string(from: try #require(RFC3339.date(from: "2024-02-29T12:34:56Z"))) == "2024-02-29T12:34:56.000000Z")
        #expect(RFC3339.string(from: try #require(RFC3339.date(from: "2024-02-29T12:34:56.1234564Z"))) == "2024-02-29T12:34:56.123456Z")
        // Rounding to microseconds carries into the seconds (and the day).
        #expect(RFC3339.string(from: try #require(RFC3339.date(from: "2024-02-29T12:34:56.9999996Z"))) == "2024-02-29T12:34:57.000000Z")
        #expect(RFC3339.string(from: try #require(RFC3339.date(from: "2024-12-31T23:59:59.9999999Z"))) == "2025-01-01T00:00:00.000000Z")
    }

    @Test("text that is not an RFC 3339 timestamp is refused", arguments: [
        "2024-02-30T00:00:00Z", "2023-02-29T00:00:00Z", "2024-13-01T00:00:00Z", "2024-00-10T00:00:00Z",
        "2024-02-29", "2024-02-29T12:34:56", "2024-02-29T24:00:00Z", "2024-02-29T12:60:00Z", "2024-02-29T12:34:56.Z",
        "2024-02-29T12:34:56+0200", "2024-02-29T12:34:56+02", "2024-02-29T12:34:56Zjunk", "24-02-29T12:34:56Z",
        "yesterday", "", "2024/02/29T12:34:56Z",
    ])
    func dateRejects(_ text: String) {
        #expect(RFC3339.date(from: text) == nil)
        #expect(Self.isMismatch(.string(text), .date))
    }

    @Test("a date refuses a JSON number")
    func dateRejectsNumber() {
        #expect(Self.isMismatch(.number("1709210096"), .date))
    }

    // MARK: Binary, UUID, URI

    @Test("binary is base64 both ways")
    func binary() throws {
        let value = try AttributeValue(json: .string("AAEC/w=="), type: .binary)
        #expect(value == .binary(Data([0, 1, 2, 0xFF])))
        #expect(value.jsonValue == .string("AAEC/w=="))
        #expect(try AttributeValue(json: .string(""), type: .binary) == .binary(Data()))
        #expect(Self.isMismatch(.string("not base64!"), .binary))
        #expect(Self.isMismatch(.string("AAE"), .binary))
        #expect(Self.isMismatch(.number("1"), .binary))
    }

    @Test("uuid takes its string form in any case and writes it in upper case")
    func uuid() throws {
        let upper = "E621E1F8-C36C-495A-93FC-0C247A3E6E5F"
        let value = try AttributeValue(json: .string(upper), type: .uuid)
        #expect(value == .uuid(try #require(UUID(uuidString: upper))))
        #expect(try AttributeValue(json: .string(upper.lowercased()), type: .uuid) == value)
        #expect(value.jsonValue == .string(upper))
        #expect(Self.isMismatch(.string("not-a-uuid"), .uuid))
        #expect(Self.isMismatch(.string("E621E1F8C36C495A93FC0C247A3E6E5F0"), .uuid))
        #expect(Self.isMismatch(.number("1"), .uuid))
    }

    @Test("uri takes a non-empty string and writes it back unchanged")
    func uri() throws {
        for text in ["https://example.com/a/b?c=d&e=%20f#frag", "urn:isbn:0451450523", "mailto:someone@example.com", "relative/path"] {
            let value = try AttributeValue(json: .string(text), type: .uri)
            #expect(value == .uri(try #require(URL(string: text))))
            #expect(value.jsonValue == .string(text))
        }
        #expect(Self.isMismatch(.string(""), .uri))
        #expect(Self.isMismatch(.number("1"), .uri))
        #expect(Self.isMismatch(.bool(true), .uri))
    }

    @Test("every type's JSON form converts back to the same value", arguments: AttributeType.allCases)
    func everyTypeRoundTrips(_ type: AttributeType) throws {
        let samples: [AttributeType: AttributeValue] = [
            .integer16: .integer(-32768), .integer32: .integer(2_147_483_647), .integer64: .integer(Int64.min),
            .decimal: .decimal(Decimal(string: "-98765432109876543210.0123456789")!), .double: .double(-0.000123),
            .float: .float(3.25), .string: .string("a \"b\" \\ c\n👨‍👩‍👧"), .boolean: .boolean(true),
            .date: .date(RFC3339.date(from: "2030-06-15T08:09:10.654321Z")!), .binary: .binary(Data((0...255).map(UInt8.init))),
            .uuid: .uuid(UUID(uuidString: "00000000-0000-0000-0000-0000000000FF")!), .uri: .uri(URL(string: "https://example.com/x")!),
        ]
        let value = try #require(samples[type])
        #expect(value.fits(type))
        let text = value.jsonValue.serialized()
        let back = try AttributeValue(json: try JSONParser().parse(text), type: type)
        #expect(back.jsonValue == value.jsonValue)
        if type != .date { #expect(back == value) }
    }
}
