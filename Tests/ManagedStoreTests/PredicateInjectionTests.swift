import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite

/// "Values are always bound as SQL parameters, never pasted into SQL": no value in a predicate,
/// whether passed as a format argument or written as a quoted literal, can change the SQL that
/// a fetch runs; the values come back only as bindings, and fetches with them find exactly the
/// objects that hold them.
@Suite("Predicate injection")
struct PredicateInjectionTests {
    static let benign = "x"

    /// Quotes, SQL comment and statement syntax, LIKE and parameter metacharacters, predicate
    /// syntax, and unicode (no NUL).
    static let hostile: [String] = [
        "'", "\"", "'; DROP TABLE \"Task\"; --", "\"); DELETE FROM \"Task\"; --", "/* */", "*/", "--",
        "%", "_", "*", "?", "\\", "?1", "$1", ":name", "@x", "' OR '1'='1", "x' OR 1=1 --", ") OR (1=1",
        "%@", "%K", "$X", "NOT", "ms_fold(", "t0.\"title\"", "é", "ß", "🚀", "Ünïcödé 🚀 \u{202E}rtl",
        "line\nbreak\ttab", "\u{7F}\u{1}", "'' \"\" \\\\ ''", "100%_done*?",
    ]

    enum Binding: Sendable {
        /// The value is bound as it is.
        case raw
        /// The value is bound folded with these options (`==[c]` compares folded columns).
        case folded(ComparisonOptions)
        /// String operators may bind the value as it is or folded (they fold inside ms_strop).
        case rawOrFolded(ComparisonOptions)
    }

    /// The rows of the store the fetches run against.
    struct Row: Sendable {
        let title: String
        let project: String?
        let labels: [String]
    }

    struct Template: Sendable, CustomStringConvertible {
        /// The format with `%@` standing for the value (`%K` takes "title").
        let format: String
        /// The same predicate with VALUE where a quoted literal goes.
        let literal: String
        let binding: Binding
        /// Whether the value must be a valid regular expression.
        var needsRegex = false
        /// Whether the value is passed as a one-element array (IN).
        var asList = false
        /// Whether %K takes "title" before the value.
        var keyFirst = false
        /// Whether the value is used twice (BETWEEN {v, v}).
        var twice = false
        /// Which rows match, by the contract's semantics.
        let matches: @Sendable (Row, String) -> Bool

        var description: String { format }

        func arguments(_ value: String) -> [Any] {
            var arguments: [Any] = keyFirst ? ["title"] : []
            arguments.append(asList ? [value] as [Any] : value)
            if twice { arguments.append(value) }
            return arguments
        }
    }

    // MARK: Reference semantics (written here, independently of the library)

    static func same(_ a: String, _ b: String) -> Bool { Array(a.unicodeScalars) == Array(b.unicodeScalars) }

    static func fold(_ text: String, _ options: ComparisonOptions) -> String {
        var foldOptions: String.CompareOptions = []
        if options.contains(.caseInsensitive) { foldOptions.insert(.caseInsensitive) }
        if options.contains(.diacriticInsensitive) { foldOptions.insert(.diacriticInsensitive) }
        return text.folding(options: foldOptions, locale: nil).precomposedStringWithCanonicalMapping
    }

    static func hasPrefix(_ s: String, _ p: String) -> Bool { Array(s.utf8).starts(with: Array(p.utf8)) }
    static func hasSuffix(_ s: String, _ p: String) -> Bool { Array(s.utf8.reversed()).starts(with: Array(p.utf8.reversed())) }
    static func contains(_ s: String, _ p: String) -> Bool {
        let h = Array(s.utf8), n = Array(p.utf8)
        if n.isEmpty { return true }
        guard n.count <= h.count else { return false }
        return (0...(h.count - n.count)).contains { h[$0..<($0 + n.count)].elementsEqual(n) }
    }

    /// LIKE: `*` any run of characters, `?` exactly one, everything else (`%` and `_` too) itself.
    static func like(_ s: String, _ p: String) -> Bool {
        let s = Array(s.unicodeScalars), p = Array(p.unicodeScalars)
        // matches[i][j]: s[i...] matches p[j...]
        var matches = Array(repeating: Array(repeating: false, count: p.count + 1), count: s.count + 1)
        matches[s.count][p.count] = true
        for i in stride(from: s.count, through: 0, by: -1) {
            for j in stride(from: p.count - 1, through: 0, by: -1) {
                if p[j] == "*" {
                    matches[i][j] = matches[i][j + 1] || (i < s.count && matches[i + 1][j])
                } else if i < s.count && (p[j] == "?" || p[j] == s[i]) {
                    matches[i][j] = matches[i + 1][j + 1]
                }
            }
        }
        return matches[0][0]
    }

    static func isRegex(_ pattern: String) -> Bool { (try? NSRegularExpression(pattern: "\\A(?:" + pattern + ")\\z")) != nil && (try? NSRegularExpression(pattern: pattern)) != nil }

    static func matchesWhole(_ s: String, _ pattern: String) -> Bool {
        guard let regex = try? NSRegularExpression(pattern: "\\A(?:" + pattern + ")\\z") else { return false }
        return regex.firstMatch(in: s, range: NSRange(s.startIndex..., in: s)) != nil
    }

    // MARK: Templates

    static let cd: ComparisonOptions = [.caseInsensitive, .diacriticInsensitive]

    static let templates: [Template] = [
        Template(format: "title == %@", literal: "title == VALUE", binding: .raw) { row, v in same(row.title, v) },
        Template(format: "title = %@", literal: "title = VALUE", binding: .raw) { row, v in same(row.title, v) },
        Template(format: "title != %@", literal: "title != VALUE", binding: .raw) { row, v in !same(row.title, v) },
        Template(format: "title ==[c] %@", literal: "title ==[c] VALUE", binding: .folded(.caseInsensitive)) { row, v in
            same(fold(row.title, .caseInsensitive), fold(v, .caseInsensitive))
        },
        Template(format: "title BEGINSWITH %@", literal: "title BEGINSWITH VALUE", binding: .raw) { row, v in hasPrefix(row.title, v) },
        Template(format: "title BEGINSWITH[c] %@", literal: "title BEGINSWITH[c] VALUE", binding: .rawOrFolded(.caseInsensitive)) { row, v in
            hasPrefix(fold(row.title, .caseInsensitive), fold(v, .caseInsensitive))
        },
        Template(format: "title ENDSWITH %@", literal: "title ENDSWITH VALUE", binding: .raw) { row, v in hasSuffix(row.title, v) },
        Template(format: "title CONTAINS[cd] %@", literal: "title CONTAINS[cd] VALUE", binding: .rawOrFolded(cd)) { row, v in
            contains(fold(row.title, cd), fold(v, cd))
        },
        Template(format: "title LIKE %@", literal: "title LIKE VALUE", binding: .raw) { row, v in like(row.title, v) },
        Template(format: "title LIKE[c] %@", literal: "title LIKE[c] VALUE", binding: .rawOrFolded(.caseInsensitive)) { row, v in
            like(fold(row.title, .caseInsensitive), fold(v, .caseInsensitive))
        },
        Template(format: "title MATCHES %@", literal: "title MATCHES VALUE", binding: .raw, needsRegex: true) { row, v in matchesWhole(row.title, v) },
        Template(format: "title IN %@", literal: "title IN {VALUE}", binding: .raw, asList: true) { row, v in same(row.title, v) },
        Template(format: "title BETWEEN {%@, %@}", literal: "title BETWEEN {VALUE, VALUE}", binding: .raw, twice: true) { row, v in same(row.title, v) },
        Template(format: "%K == %@", literal: "title == VALUE", binding: .raw, keyFirst: true) { row, v in same(row.title, v) },
        Template(format: "project.name == %@", literal: "project.name == VALUE", binding: .raw) { row, v in row.project.map { same($0, v) } ?? false },
        Template(format: "tags.label CONTAINS %@", literal: "tags.label CONTAINS VALUE", binding: .raw) { row, v in
            row.labels.contains { contains($0, v) }
        },
        Template(format: "ANY tags.label ==[c] %@", literal: "ANY tags.label ==[c] VALUE", binding: .folded(.caseInsensitive)) { row, v in
            row.labels.contains { same(fold($0, .caseInsensitive), fold(v, .caseInsensitive)) }
        },
        Template(format: "NONE tags.label == %@", literal: "NONE tags.label == VALUE", binding: .raw) { row, v in
            !row.labels.contains { same($0, v) }
        },
        Template(format: "SUBQUERY(tags, $t, $t.label == %@).@count > 0", literal: "SUBQUERY(tags, $t, $t.label == VALUE).@count > 0",
                 binding: .raw) { row, v in row.labels.contains { same($0, v) } },
    ]

    static func values(for template: Template) -> [String] {
        template.needsRegex ? hostile.filter(isRegex) : hostile
    }

    // MARK: Literal quoting

    /// `value` as a double-quoted literal: backslash and double quote escaped.
    static func doubleQuoted(_ value: String) -> String {
        "\"" + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }

    /// `value` as a single-quoted literal: backslash and single quote escaped.
    static func singleQuoted(_ value: String) -> String {
        "'" + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'") + "'"
    }

    /// `value` double-quoted with every character outside printable ASCII (in the BMP) as \uXXXX.
    static func unicodeEscaped(_ value: String) -> String {
        var text = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\\": text += "\\\\"
            case "\"": text += "\\\""
            case " "..."~": text.unicodeScalars.append(scalar)
            default:
                if scalar.value <= 0xFFFF { text += String(format: "\\u%04x", scalar.value) } else { text.unicodeScalars.append(scalar) }
            }
        }
        return text + "\""
    }

    // MARK: Helpers

    static func compile(_ context: ManagedObjectContext, _ predicate: ObjectPredicate) throws -> (sql: String, bindings: [AttributeValue]) {
        try context.compiledSQL(FetchRequest(entityName: "Task", predicate: predicate))
    }

    /// The bindings expected for `value`: those of the benign value with it replaced.
    static func expectedBindings(_ benign: [AttributeValue], _ value: String, _ binding: Binding) -> [[AttributeValue]] {
        func replaced(_ transform: (String) -> String) -> [AttributeValue] {
            benign.map { $0 == .string(Self.benign) ? .string(transform(value)) : $0 }
        }
        switch binding {
        case .raw: return [replaced { $0 }]
        case .folded(let options): return [replaced { fold($0, options) }]
        case .rawOrFolded(let options): return [replaced { $0 }, replaced { fold($0, options) }]
        }
    }

    // MARK: Tests

    @Test("a hostile value passed with %@ leaves the SQL byte-identical and travels only as a binding")
    func argumentsNeverChangeTheSQL() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            for template in Self.templates {
                let benign = try Self.compile(context, try ObjectPredicate(format: template.format, argumentArray: template.arguments(Self.benign)))
                #expect(benign.bindings.contains(.string(Self.benign)), "\(template): benign bindings \(benign.bindings)")
                #expect(!benign.sql.contains("'"), "\(template): the SQL has a string literal: \(benign.sql)")
                for value in Self.values(for: template) {
                    let predicate = try ObjectPredicate(format: template.format, argumentArray: template.arguments(value))
                    let compiled: (sql: String, bindings: [AttributeValue])
                    do { compiled = try Self.compile(context, predicate) } catch {
                        Issue.record("\(template) with \(String(reflecting: value)): \(error)")
                        continue
                    }
                    #expect(compiled.sql == benign.sql, "\(template) with \(String(reflecting: value)) changed the SQL")
                    let expected = Self.expectedBindings(benign.bindings, value, template.binding)
                    #expect(expected.contains(compiled.bindings),
                            "\(template) with \(String(reflecting: value)): bindings \(compiled.bindings), expected one of \(expected)")
                    if !benign.sql.contains(value) {
                        #expect(!compiled.sql.contains(value), "\(template): \(String(reflecting: value)) appears in the SQL")
                    }
                }
            }
        }
    }

    @Test("a hostile value written as a quoted literal gives the same SQL and bindings as the %@ form")
    func literalsNeverChangeTheSQL() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            for template in Self.templates {
                let benign = try Self.compile(context, try ObjectPredicate(format: template.format, argumentArray: template.arguments(Self.benign)))
                for value in Self.values(for: template) {
                    let viaArgument = try Self.compile(context, try ObjectPredicate(format: template.format, argumentArray: template.arguments(value)))
                    for (quoting, quoted) in [("double", Self.doubleQuoted(value)), ("single", Self.singleQuoted(value)), ("\\u", Self.unicodeEscaped(value))] {
                        let format = template.literal.replacingOccurrences(of: "VALUE", with: quoted)
                        let predicate: ObjectPredicate
                        do { predicate = try ObjectPredicate(format: format) } catch {
                            Issue.record("\(quoting)-quoted \(String(reflecting: value)) in \(template) did not parse: \(String(reflecting: format)): \(error)")
                            continue
                        }
                        // The literal reads back as exactly the value.
                        #expect(predicate == (try ObjectPredicate(format: template.format, argumentArray: template.arguments(value))),
                                "\(String(reflecting: format))")
                        let compiled = try Self.compile(context, predicate)
                        #expect(compiled.sql == benign.sql, "\(String(reflecting: format)) changed the SQL")
                        #expect(compiled.bindings == viaArgument.bindings, "\(String(reflecting: format)): bindings \(compiled.bindings)")
                    }
                }
            }
        }
    }

    @Test("hostile key paths (%K, #-escaped) are refused as unknown key paths, never written into SQL")
    func hostileKeyPaths() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        context.performAndWait {
            for key in ["title\" OR 1=1 --", "title; DROP TABLE \"Task\"", "t0.\"_pk\"", "title) OR (1", "_pk", "Z_OPT", "*", "project.name\"--"] {
                do {
                    let predicate = try ObjectPredicate(format: "%K == %@", "\(key)", "x")
                    _ = try context.compiledSQL(FetchRequest(entityName: "Task", predicate: predicate))
                    Issue.record("the key path \(String(reflecting: key)) compiled")
                } catch let error as FetchError {
                    guard case .unknownKeyPath(let path, entity: "Task") = error else {
                        Issue.record("\(String(reflecting: key)): \(error)")
                        continue
                    }
                    #expect(path == key)
                } catch {
                    Issue.record("\(String(reflecting: key)): \(type(of: error)) \(error)")
                }
            }
            // A `#`-escaped key is a name (letters, digits, _), and still only a key to look up.
            for (format, key) in [("#_pk == 1", "_pk"), ("#_version == 1", "_version"), ("#Z_OPT == 1", "Z_OPT"), ("project.#_pk == 1", "project._pk")] {
                do {
                    let predicate = try ObjectPredicate(format: format)
                    _ = try context.compiledSQL(FetchRequest(entityName: "Task", predicate: predicate))
                    Issue.record("\(format) compiled")
                } catch let error as FetchError {
                    #expect(error == .unknownKeyPath(key, entity: "Task"), "\(format)")
                } catch {
                    Issue.record("\(format): \(type(of: error)) \(error)")
                }
            }
        }
    }

    // MARK: Fetching

    /// The rows: one task per hostile value, titled with it, in a project named with it and
    /// tagged with a tag labelled with it; plus a few benign tasks.
    static let rows: [Row] = hostile.map { Row(title: $0, project: $0, labels: [$0]) } + [
        Row(title: "x", project: nil, labels: ["x"]),
        Row(title: "X", project: "benign", labels: []),
        Row(title: "plain title", project: "benign", labels: ["x", "plain"]),
        Row(title: "a%b_c", project: nil, labels: []),
        Row(title: "abc", project: nil, labels: []),
    ]

    static func seeded() throws -> PersistentContainer {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            var projects: [String: ManagedObject] = [:]
            var tags: [String: ManagedObject] = [:]
            for row in rows {
                let task = context.insertNewObject(forEntityName: "Task")
                task.setValue(row.title, forKey: "title")
                if let name = row.project {
                    let project = projects[name] ?? {
                        let p = context.insertNewObject(forEntityName: "Project")
                        p.setValue(name, forKey: "name")
                        projects[name] = p
                        return p
                    }()
                    task.setObject(project, forKey: "project")
                }
                task.setObjects(row.labels.map { label in
                    tags[label] ?? {
                        let t = context.insertNewObject(forEntityName: "Tag")
                        t.setValue(label, forKey: "label")
                        tags[label] = t
                        return t
                    }()
                }, forKey: "tags")
            }
            try context.save()
        }
        return container
    }

    static func counts(_ context: ManagedObjectContext) throws -> [String: Int] {
        var result: [String: Int] = [:]
        for entity in ["Task", "Project", "Tag"] { result[entity] = try context.count(for: FetchRequest(entityName: entity)) }
        return result
    }

    @Test("fetches with hostile values find exactly the objects that hold them, and change nothing")
    func fetchesFindExactlyTheHostileValues() throws {
        let container = try Self.seeded()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let before = try Self.counts(context)
            #expect(before == ["Task": Self.rows.count, "Project": Self.hostile.count + 1, "Tag": Self.hostile.count + 2])
            var checked = 0
            for template in Self.templates {
                for value in Self.values(for: template) + [Self.benign] {
                    let predicate = try ObjectPredicate(format: template.format, argumentArray: template.arguments(value))
                    let found: [String]
                    do {
                        found = try context.fetch(FetchRequest(entityName: "Task", predicate: predicate)).map { $0.value("title", as: String.self) ?? "<nil>" }
                    } catch {
                        Issue.record("\(template) with \(String(reflecting: value)): \(error)")
                        continue
                    }
                    let expected = Self.rows.filter { template.matches($0, value) }.map(\.title)
                    #expect(found.map { Array($0.unicodeScalars) } == expected.map { Array($0.unicodeScalars) },
                            "\(template) with \(String(reflecting: value)): found \(found), expected \(expected)")
                    checked += 1
                }
            }
            #expect(checked > 500)
            #expect(try Self.counts(context) == before)
            // Every title is still there, as it was.
            let titles = try context.fetch(FetchRequest(entityName: "Task")).compactMap { $0.value("title", as: String.self) }
            #expect(titles.map { Array($0.unicodeScalars) } == Self.rows.map { Array($0.title.unicodeScalars) })
        }
    }

    @Test("LIKE's wildcards are * and ? only: % and _ match themselves")
    func likeWildcards() throws {
        let container = try Self.seeded()
        let context = container.newBackgroundContext()
        try context.performAndWait { () throws in
            func titles(_ format: String, _ arguments: Any...) throws -> Set<String> {
                Set(try context.fetch(FetchRequest(entityName: "Task", predicate: try ObjectPredicate(format: format, argumentArray: arguments)))
                    .compactMap { $0.value("title", as: String.self) })
            }
            #expect(try titles("title LIKE %@", "%") == ["%"])
            #expect(try titles("title LIKE %@", "_") == ["_"])
            #expect(try titles("title LIKE %@", "a%b_c") == ["a%b_c"])
            #expect(try titles("title LIKE 'a%b_c'") == ["a%b_c"])
            #expect(try titles("title LIKE %@", "a?b?c") == ["a%b_c"])
            #expect(try titles("title LIKE %@", "a*c") == ["a%b_c", "abc"])
            #expect(try titles("title LIKE %@", "%%") == [])
            #expect(try titles("title LIKE %@", "100%_done*?") == ["100%_done*?"])
            #expect(try titles("title LIKE %@", "100%_done*") == ["100%_done*?"])
            #expect(try titles("title LIKE %@", "100?_done??") == ["100%_done*?"])
            #expect(try titles("title LIKE %@", "?") == Set(Self.rows.map(\.title).filter { $0.unicodeScalars.count == 1 }))
            #expect(try titles("title LIKE %@", "*") == Set(Self.rows.map(\.title)))
            #expect(try titles("title LIKE[c] %@", "A%B_C") == ["a%b_c"])
            #expect(try titles("title LIKE %@", "\\") == ["\\"])
            #expect(try titles("tags.label LIKE %@", "%") == ["%"])
            #expect(try titles("ANY tags.label LIKE %@", "_") == ["_"])
        }
    }
}
