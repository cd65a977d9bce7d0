import Foundation
import Testing

/// The layers are targets, so the compiler refuses a core file that uses a store (the core
/// depends on none). What the compiler cannot see is text: SQL written into a string, or a
/// layer above the library reaching for a store's types. This reads the sources and fails on
/// either.
@Suite("Layering: SQL, SQLite and PostgreSQL only in their stores")
struct LayeringTests {
    /// The package's `Sources` folder, found from this file.
    static let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources")

    /// Statements and clauses only SQL has (in code, comments stripped).
    static let sqlPatterns = [
        #"\bSELECT\b[^"\n]*\bFROM\b"#, #"\bINSERT\s+(OR\s+\w+\s+)?INTO\b"#, #"\bUPDATE\s+\S+\s+SET\b"#, #"\bDELETE\s+FROM\b"#,
        #"\bCREATE\s+(UNIQUE\s+)?(TABLE|INDEX|TRIGGER)\b"#, #"\bPRAGMA\s+\w"#, #"\bBEGIN\s+(IMMEDIATE|DEFERRED)\b"#, #"\bSAVEPOINT\b"#,
    ]
    /// SQLite's own names: its C API, its module, and the SQLite store's types.
    static let sqliteNames = [#"\bsqlite3_\w+"#, #"\bCSQLite\b"#, #"\bSQLite[A-Z]\w*"#, #"\bimport\s+ManagedStoreSQLite\b"#]
    /// The PostgreSQL store's: libpq's C API, its module, and the store's types.
    static let postgresNames = [#"\bPQ[a-z]\w*\("#, #"\bCPostgreSQL\b"#, #"\bPG[A-Z][a-z]\w*"#, #"\bimport\s+ManagedStorePostgreSQL\b"#]

    @Test("the core, the server and the command line hold no SQL and name nothing of SQLite's or PostgreSQL's")
    func noSQLOutsideTheSQLiteStore() throws {
        var found: [String] = []
        for target in ["ManagedStoreCore", "ManagedStoreServer", "managedstore"] {
            for (path, lines) in try Self.codeLines(of: target) {
                for (number, line) in lines {
                    for pattern in Self.sqlPatterns + Self.sqliteNames + Self.postgresNames where line.range(of: pattern, options: .regularExpression) != nil {
                        found.append("\(path):\(number): \(line.trimmingCharacters(in: .whitespaces).prefix(120))")
                    }
                }
            }
        }
        #expect(found.isEmpty, "SQL, SQLite or PostgreSQL outside the stores:\n\(found.joined(separator: "\n"))")
    }

    @Test("the umbrella module only re-exports the layers and opens a store from its description")
    func umbrellaNamesOnlyTheStore() throws {
        var found: [String] = []
        for (path, lines) in try Self.codeLines(of: "ManagedStore") {
            for (number, line) in lines {
                let names = line.matches(of: /\b(?:SQLite|PG(?=[A-Z][a-z])|PostgreSQL)[A-Z]\w*/).map { String($0.output) }
                if names.contains(where: { $0 != "SQLiteStore" && $0 != "PostgreSQLStore" }) || Self.sqlPatterns.contains(where: { line.range(of: $0, options: .regularExpression) != nil }) {
                    found.append("\(path):\(number): \(line)")
                }
            }
        }
        #expect(found.isEmpty, "\(found.joined(separator: "\n"))")
    }

    @Test("the checks find what they look for (the stores themselves are full of it)")
    func checksSeeTheSQLiteStore() throws {
        let lines = try Self.codeLines(of: "ManagedStoreSQLite").flatMap(\.lines).map(\.text)
        for pattern in [Self.sqlPatterns[0], Self.sqlPatterns[1], Self.sqliteNames[0], Self.sqliteNames[2]] {
            #expect(lines.contains { $0.range(of: pattern, options: .regularExpression) != nil }, "\(pattern)")
        }
        let postgres = try Self.codeLines(of: "ManagedStorePostgreSQL").flatMap(\.lines).map(\.text)
        for pattern in [Self.sqlPatterns[0], Self.postgresNames[0], Self.postgresNames[2]] {
            #expect(postgres.contains { $0.range(of: pattern, options: .regularExpression) != nil }, "\(pattern)")
        }
        // Comments are not code: a doc comment that names SQLite is allowed anywhere.
        #expect(Self.stripComments("let a = 1 // SELECT x FROM t") == "let a = 1 ")
        #expect(Self.stripComments(#"let s = "// not a comment""#) == #"let s = "// not a comment""#)
    }

    /// The code lines of every Swift file of `target`, comments stripped, blank lines dropped.
    static func codeLines(of target: String) throws -> [(path: String, lines: [(number: Int, text: String)])] {
        let folder = sources.appendingPathComponent(target)
        guard let walker = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil) else { return [] }
        var files: [(String, [(Int, String)])] = []
        for case let url as URL in walker where url.pathExtension == "swift" {
            let text = try String(contentsOf: url, encoding: .utf8)
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false).enumerated().compactMap { index, line -> (Int, String)? in
                let code = stripComments(String(line))
                return code.trimmingCharacters(in: .whitespaces).isEmpty ? nil : (index + 1, code)
            }
            files.append((url.path.replacingOccurrences(of: sources.path + "/", with: ""), lines))
        }
        #expect(!files.isEmpty, "no sources found for \(target) under \(folder.path)")
        return files.sorted { $0.0 < $1.0 }
    }

    /// `line` without its `//` comment (a `//` inside a string literal is kept).
    static func stripComments(_ line: String) -> String {
        var inString = false
        var previous: Character = " "
        var index = line.startIndex
        while index < line.endIndex {
            let character = line[index]
            if character == "\"" && previous != "\\" { inString.toggle() }
            if !inString, character == "/", previous == "/" { return String(line[..<line.index(before: index)]) }
            previous = character
            index = line.index(after: index)
        }
        return line
    }
}
