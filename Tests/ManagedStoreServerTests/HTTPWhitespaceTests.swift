import Testing
@testable import ManagedStoreHTTP
@testable import ManagedStoreOpenAPI
@testable import ManagedStoreServer

/// Header values lose the spaces and tabs around them (HTTP's optional whitespace) and nothing
/// else: If-Match, Content-Length and Author are read through this.
@Suite("HTTP optional whitespace")
struct HTTPWhitespaceTests {
    @Test("spaces and tabs around a value go, inside ones and other characters stay",
          arguments: [("\"3\"", "\"3\""), ("  \"3\"\t ", "\"3\""), ("\t\t", ""), ("", ""), (" a b ", "a b"),
                      ("\u{00A0}x\u{00A0}", "\u{00A0}x\u{00A0}"), (" élan ", "élan"), ("\r\n1", "\r\n1")])
    func trims(_ value: String, _ expected: String) {
        #expect(String(value.trimmingHTTPWhitespace) == expected)
    }
}
