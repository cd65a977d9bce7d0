import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite

/// The NSPredicate format parser on its own: every construct of the language parsed into the
/// exact `ObjectPredicate` value it stands for, and every refusal with its exact column.
@Suite("Predicate parser")
struct PredicateParserTests {
    // MARK: Helpers

    private static func parse(_ format: String, _ arguments: [Any] = [],
                              sourceLocation: SourceLocation = #_sourceLocation) -> ObjectPredicate? {
        do {
            return try ObjectPredicate(format: format, argumentArray: arguments)
        } catch {
            Issue.record("'\(format)' did not parse: \(error)", sourceLocation: sourceLocation)
            return nil
        }
    }

    /// Parses `format` (without arguments) and expects exactly `expected`.
    private static func expectParse(_ format: String, _ expected: ObjectPredicate,
                                    sourceLocation: SourceLocation = #_sourceLocation) {
        expectParse(format, [], expected, sourceLocation: sourceLocation)
    }

    /// Parses `format` with `arguments` and expects exactly `expected`.
    private static func expectParse(_ format: String, _ arguments: [Any], _ expected: ObjectPredicate,
                                    sourceLocation: SourceLocation = #_sourceLocation) {
        guard let parsed = parse(format, arguments, sourceLocation: sourceLocation) else { return }
        #expect(parsed == expected, "format: \(format)", sourceLocation: sourceLocation)
    }

    /// Expects `format` to be refused at `column` with a message containing `message`.
    private static func expectError(_ format: String, _ arguments: [Any] = [], column: Int, message: String,
                                    sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            let parsed = try ObjectPredicate(format: format, argumentArray: arguments)
            Issue.record("'\(format)' parsed as \(parsed), expected an error at column \(column)", sourceLocation: sourceLocation)
        } catch {
            #expect(error.column == column, "column of the error for '\(format)': \(error)", sourceLocation: sourceLocation)
            #expect(error.message.contains(message), "message for '\(format)': '\(error.message)' lacks '\(message)'",
                    sourceLocation: sourceLocation)
        }
    }

    private static func compare(_ key: String, _ op: ComparisonOperator, _ value: AttributeValue,
                                modifier: ComparisonModifier = .direct, options: ComparisonOptions = []) -> ObjectPredicate {
        .comparison(ComparisonPredicate(.keyPath(key), op, .constant(.attribute(value)), modifier: modifier, options: options))
    }

    private static func int(_ key: String, _ op: ComparisonOperator, _ value: Int64) -> ObjectPredicate {
        compare(key, op, .integer(value))
    }

    private static func str(_ key: String, _ op: ComparisonOperator, _ value: String,
                            modifier: ComparisonModifier = .direct, options: ComparisonOptions = []) -> ObjectPredicate {
        compare(key, op, .string(value), modifier: modifier, options: options)
    }

    private static let isDone = compare("done", .equal, .boolean(true))

    // MARK: Comparison operators

    @Test("every spelling of the comparison operators")
    func comparisonOperatorSpellings() {
        let spellings: [(String, ComparisonOperator)] = [
            ("==", .equal), ("=", .equal), ("!=", .notEqual), ("<>", .notEqual),
            ("<", .lessThan), ("<=", .lessThanOrEqual), ("=<", .lessThanOrEqual),
            (">", .greaterThan), (">=", .greaterThanOrEqual), ("=>", .greaterThanOrEqual),
        ]
        for (spelling, op) in spellings {
            Self.expectParse("priority \(spelling) 3", Self.int("priority", op, 3))
            // Without spaces too.
            Self.expectParse("priority\(spelling)3", Self.int("priority", op, 3))
        }
        // And the same values as the builder makes.
        Self.expectParse("priority >= 2", .key("priority") >= 2)
        Self.expectParse("priority => 2", .key("priority") >= 2)
        Self.expectParse("priority =< 2", .key("priority") <= 2)
        Self.expectParse("priority <> 2", .key("priority") != 2)
        Self.expectParse("priority = 2", .key("priority") == 2)
        Self.expectParse("priority < 2", .key("priority") < 2)
        Self.expectParse("priority > 2", .key("priority") > 2)
    }

    @Test("string operators with [c], [d] and [cd]")
    func stringOperatorsWithOptions() {
        let operators: [(String, ComparisonOperator)] = [
            ("BEGINSWITH", .beginsWith), ("ENDSWITH", .endsWith), ("CONTAINS", .contains), ("LIKE", .like), ("MATCHES", .matches),
        ]
        let options: [(String, ComparisonOptions)] = [
            ("", []), ("[c]", .caseInsensitive), ("[d]", .diacriticInsensitive), ("[cd]", [.caseInsensitive, .diacriticInsensitive]),
            ("[dc]", [.caseInsensitive, .diacriticInsensitive]), ("[C]", .caseInsensitive), ("[CD]", [.caseInsensitive, .diacriticInsensitive]),
        ]
        for (word, op) in operators {
            for (suffix, option) in options {
                Self.expectParse("title \(word)\(suffix) \"ab\"", Self.str("title", op, "ab", options: option))
                Self.expectParse("title \(word) \(suffix) 'ab'", Self.str("title", op, "ab", options: option))
            }
        }
        Self.expectParse("title BEGINSWITH[c] \"re\"", PredicateKey.key("title").beginsWith("re", options: .caseInsensitive))
        Self.expectParse("title ENDSWITH[d] \"é\"", PredicateKey.key("title").endsWith("é", options: .diacriticInsensitive))
        Self.expectParse("title CONTAINS[cd] \"x\"", PredicateKey.key("title").contains("x", options: [.caseInsensitive, .diacriticInsensitive]))
        Self.expectParse("title LIKE \"a*b?\"", PredicateKey.key("title").like("a*b?"))
        Self.expectParse("title MATCHES \"^[A-Z].*\"", PredicateKey.key("title").matches("^[A-Z].*"))
        // Options on the other comparison operators.
        Self.expectParse("title ==[c] \"Ab\"", Self.str("title", .equal, "Ab", options: .caseInsensitive))
        Self.expectParse("title !=[cd] \"Ab\"", Self.str("title", .notEqual, "Ab", options: [.caseInsensitive, .diacriticInsensitive]))
        Self.expectParse("title <[d] \"Ab\"", Self.str("title", .lessThan, "Ab", options: .diacriticInsensitive))
    }

    @Test("IN with a {list}, and BETWEEN {low, high}")
    func inAndBetween() {
        Self.expectParse("priority IN {1, 2, 3}", PredicateKey.key("priority").isIn([1, 2, 3]))
        Self.expectParse("priority IN {1,2,3}", PredicateKey.key("priority").isIn([1, 2, 3]))
        Self.expectParse("title IN {\"a\", 'b'}", PredicateKey.key("title").isIn(["a", "b"]))
        Self.expectParse("title in {}", .comparison(ComparisonPredicate(.keyPath("title"), .in, .list([]))))
        Self.expectParse("due IN {nil, 1.5}", .comparison(ComparisonPredicate(.keyPath("due"), .in,
                                                                                .list([.constant(.null), .constant(.attribute(.double(1.5)))]))))
        Self.expectParse("estimate BETWEEN {1, 5}", PredicateKey.key("estimate").between(1, 5))
        Self.expectParse("estimate BETWEEN {1.5, 2.25}", PredicateKey.key("estimate").between(1.5, 2.25))
        Self.expectParse("title between {'a', 'm'}", PredicateKey.key("title").between("a", "m"))
        // The builder's values.
        Self.expectParse("priority IN {1, 2}", .comparison(ComparisonPredicate(.keyPath("priority"), .in,
                                                                                 .list([.constant(.attribute(.integer(1))), .constant(.attribute(.integer(2)))]))))
        // A constant on the left of IN.
        Self.expectParse("2 IN {1, 2}", .comparison(ComparisonPredicate(.constant(.attribute(.integer(2))), .in,
                                                                          .list([.constant(.attribute(.integer(1))), .constant(.attribute(.integer(2)))]))))
    }

    // MARK: Compound predicates

    @Test("AND && OR || NOT ! and their builder equivalents")
    func compoundSpellings() {
        let a = Self.int("priority", .greaterThan, 1), b = Self.isDone, c = Self.str("title", .equal, "x")
        Self.expectParse("priority > 1 AND done", .and([a, b]))
        Self.expectParse("priority > 1 && done", .and([a, b]))
        Self.expectParse("priority > 1 OR done", .or([a, b]))
        Self.expectParse("priority > 1 || done", .or([a, b]))
        Self.expectParse("NOT priority > 1", .not(a))
        Self.expectParse("! priority > 1", .not(a))
        Self.expectParse("!(priority > 1)", .not(a))
        Self.expectParse("priority > 1 AND done AND title == \"x\"", .and([a, b, c]))
        Self.expectParse("priority > 1 OR done || title == 'x'", .or([a, b, c]))
        Self.expectParse("priority > 1 AND done", .key("priority") > 1 && .key("done") == true)
        Self.expectParse("priority > 1 AND done AND title == \"x\"", .key("priority") > 1 && .key("done") == true && .key("title") == "x")
        Self.expectParse("priority > 1 OR done", .key("priority") > 1 || .key("done") == true)
        Self.expectParse("NOT (priority > 1)", !(.key("priority") > 1))
    }

    @Test("parentheses and precedence: NOT binds tighter than AND, AND tighter than OR")
    func precedence() {
        let a = Self.int("priority", .equal, 1), b = Self.int("priority", .equal, 2), c = Self.int("priority", .equal, 3)
        Self.expectParse("priority == 1 OR priority == 2 AND priority == 3", .or([a, .and([b, c])]))
        Self.expectParse("priority == 1 AND priority == 2 OR priority == 3", .or([.and([a, b]), c]))
        Self.expectParse("(priority == 1 OR priority == 2) AND priority == 3", .and([.or([a, b]), c]))
        Self.expectParse("priority == 1 AND (priority == 2 OR priority == 3)", .and([a, .or([b, c])]))
        Self.expectParse("NOT priority == 1 AND priority == 2", .and([.not(a), b]))
        Self.expectParse("NOT priority == 1 OR priority == 2", .or([.not(a), b]))
        Self.expectParse("NOT (priority == 1 AND priority == 2)", .not(.and([a, b])))
        Self.expectParse("NOT NOT priority == 1", .not(.not(a)))
        Self.expectParse("!priority == 1 || priority == 2 && !priority == 3", .or([.not(a), .and([b, .not(c)])]))
        Self.expectParse("((priority == 1))", a)
        Self.expectParse("( priority == 1 ) AND ((priority == 2) OR (priority == 3))", .and([a, .or([b, c])]))
        Self.expectParse("priority == 1 OR priority == 2 OR priority == 3", .or([a, b, c]))
        Self.expectParse("priority == 1 OR (priority == 2 OR priority == 3)", .or([a, .or([b, c])]))
    }

    @Test("TRUEPREDICATE and FALSEPREDICATE")
    func constantPredicates() {
        Self.expectParse("TRUEPREDICATE", .constant(true))
        Self.expectParse("FALSEPREDICATE", .constant(false))
        Self.expectParse("truepredicate", .constant(true))
        Self.expectParse("TRUEPREDICATE AND FALSEPREDICATE", .and([.constant(true), .constant(false)]))
        Self.expectParse("NOT FALSEPREDICATE OR done", .or([.not(.constant(false)), Self.isDone]))
        Self.expectParse("(TRUEPREDICATE)", .constant(true))
    }

    // MARK: Values

    @Test("nil and NULL; YES, NO, TRUE and FALSE")
    func nilAndBooleans() {
        Self.expectParse("due == nil", .key("due") == nil)
        Self.expectParse("due == NULL", .key("due") == nil)
        Self.expectParse("due != nil", .key("due") != nil)
        Self.expectParse("due == Nil", .key("due") == nil)
        Self.expectParse("project == null", .key("project") == nil)
        Self.expectParse("nil == due", .comparison(ComparisonPredicate(.constant(.null), .equal, .keyPath("due"))))
        Self.expectParse("done == YES", .key("done") == true)
        Self.expectParse("done == NO", .key("done") == false)
        Self.expectParse("done == TRUE", .key("done") == true)
        Self.expectParse("done == FALSE", .key("done") == false)
        Self.expectParse("done == yes", .key("done") == true)
        Self.expectParse("done != false", .key("done") != false)
    }

    @Test("integers, reals, exponents and hexadecimal numbers")
    func numbers() {
        Self.expectParse("priority == 42", Self.int("priority", .equal, 42))
        Self.expectParse("priority == 0", Self.int("priority", .equal, 0))
        Self.expectParse("priority == 9223372036854775807", Self.int("priority", .equal, Int64.max))
        Self.expectParse("estimate == 1.5", Self.compare("estimate", .equal, .double(1.5)))
        Self.expectParse("estimate == .5", Self.compare("estimate", .equal, .double(0.5)))
        Self.expectParse("estimate == 0.25", Self.compare("estimate", .equal, .double(0.25)))
        Self.expectParse("estimate == 1e3", Self.compare("estimate", .equal, .double(1000)))
        Self.expectParse("estimate == 1E3", Self.compare("estimate", .equal, .double(1000)))
        Self.expectParse("estimate == 2.5e-3", Self.compare("estimate", .equal, .double(0.0025)))
        Self.expectParse("estimate == 1e+2", Self.compare("estimate", .equal, .double(100)))
        Self.expectParse("priority == 0x1F", Self.int("priority", .equal, 31))
        Self.expectParse("priority == 0XfF", Self.int("priority", .equal, 255))
        Self.expectParse("priority == 0x0", Self.int("priority", .equal, 0))
    }

    @Test("negative numbers")
    func negativeNumbers() {
        Self.expectParse("priority > -1", Self.int("priority", .greaterThan, -1))
        Self.expectParse("priority >= -42", Self.int("priority", .greaterThanOrEqual, -42))
        Self.expectParse("estimate < -2.5", Self.compare("estimate", .lessThan, .double(-2.5)))
        Self.expectParse("estimate < -1e2", Self.compare("estimate", .lessThan, .double(-100)))
        Self.expectParse("priority IN {-1, 2}", PredicateKey.key("priority").isIn([-1, 2]))
        Self.expectParse("estimate BETWEEN {-1.5, 2}", .comparison(ComparisonPredicate(
            .keyPath("estimate"), .between, .list([.constant(.attribute(.double(-1.5))), .constant(.attribute(.integer(2)))]))))
    }

    @Test("single- and double-quoted strings with escapes")
    func strings() {
        Self.expectParse(#"title == "plain""#, .key("title") == "plain")
        Self.expectParse(#"title == 'plain'"#, .key("title") == "plain")
        Self.expectParse(#"title == """#, .key("title") == "")
        Self.expectParse(#"title == ''"#, .key("title") == "")
        Self.expectParse(#"title == "a\"b""#, .key("title") == "a\"b")
        Self.expectParse(#"title == 'it\'s'"#, .key("title") == "it's")
        Self.expectParse(#"title == "it's""#, .key("title") == "it's")
        Self.expectParse(#"title == 'say "hi"'"#, .key("title") == "say \"hi\"")
        Self.expectParse(#"title == "back\\slash""#, .key("title") == "back\\slash")
        Self.expectParse(#"title == "\\""#, .key("title") == "\\")
        Self.expectParse(#"title == "line\nbreak""#, .key("title") == "line\nbreak")
        Self.expectParse(#"title == "tab\there\r""#, .key("title") == "tab\there\r")
        Self.expectParse(#"title == "caf\u00e9""#, .key("title") == "café")
        Self.expectParse(#"title == "\u00C9T\u00c9""#, .key("title") == "ÉTÉ")
        Self.expectParse(#"title == "é ß 🚀""#, .key("title") == "é ß 🚀")
        Self.expectParse(#"title == "AND OR ) ( %@ $x""#, .key("title") == "AND OR ) ( %@ $x")
        Self.expectParse(#"title == 'semi; -- /* */'"#, .key("title") == "semi; -- /* */")
    }

    // MARK: Key paths

    @Test("dotted key paths, escaped reserved words and bare boolean key paths")
    func keyPaths() {
        Self.expectParse("project.name == \"Apollo\"", .key("project.name") == "Apollo")
        Self.expectParse("project.archived == NO", .key("project.archived") == false)
        Self.expectParse("tags.label == \"x\"", .key("tags.label") == "x")
        Self.expectParse("title == project.name", .key("title") == .key("project.name"))
        Self.expectParse("_private_1 == 1", .key("_private_1") == 1)
        // `#` lets a reserved word be a key.
        Self.expectParse("#contains == \"x\"", .key("contains") == "x")
        Self.expectParse("#AND == 1", .key("AND") == 1)
        Self.expectParse("#in.#like == 1", .key("in.like") == 1)
        Self.expectParse("project.#name == 'a'", .key("project.name") == "a")
        // A bare key path is a test for YES.
        Self.expectParse("done", Self.isDone)
        Self.expectParse("NOT done", .not(Self.isDone))
        Self.expectParse("!done", .not(Self.isDone))
        Self.expectParse("done AND NOT project.archived", .and([Self.isDone, .not(Self.compare("project.archived", .equal, .boolean(true)))]))
        Self.expectParse("(done)", Self.isDone)
    }

    @Test("keywords are case-insensitive")
    func caseInsensitiveKeywords() {
        let a = Self.int("priority", .greaterThan, 1)
        Self.expectParse("priority > 1 and done", .and([a, Self.isDone]))
        Self.expectParse("priority > 1 And done", .and([a, Self.isDone]))
        Self.expectParse("priority > 1 Or done", .or([a, Self.isDone]))
        Self.expectParse("not done", .not(Self.isDone))
        Self.expectParse("title beginswith 'a'", .key("title").beginsWith("a"))
        Self.expectParse("title BeginsWith[C] 'a'", .key("title").beginsWith("a", options: .caseInsensitive))
        Self.expectParse("title like 'a'", .key("title").like("a"))
        Self.expectParse("title Matches 'a'", .key("title").matches("a"))
        Self.expectParse("priority in {1}", .key("priority").isIn([1]))
        Self.expectParse("any tags.label == 'a'", Self.str("tags.label", .equal, "a", modifier: .any))
        Self.expectParse("falsepredicate or TruePredicate", .or([.constant(false), .constant(true)]))
        Self.expectParse("done == Yes", .key("done") == true)
    }

    @Test("ANY, SOME, ALL and NONE")
    func modifiers() {
        Self.expectParse("ANY tags.label == \"x\"", Self.str("tags.label", .equal, "x", modifier: .any))
        Self.expectParse("SOME tags.label == \"x\"", Self.str("tags.label", .equal, "x", modifier: .any))
        Self.expectParse("ALL tags.label BEGINSWITH[c] \"x\"", Self.str("tags.label", .beginsWith, "x", modifier: .all, options: .caseInsensitive))
        Self.expectParse("NONE tags.label == \"x\"", Self.str("tags.label", .equal, "x", modifier: .none))
        Self.expectParse("tags.label == \"x\"", Self.str("tags.label", .equal, "x", modifier: .direct))
        Self.expectParse("NOT ANY tags.label == \"x\"", .not(Self.str("tags.label", .equal, "x", modifier: .any)))
        Self.expectParse("ANY tasks.priority IN {1, 2}", .comparison(ComparisonPredicate(
            .keyPath("tasks.priority"), .in, .list([.constant(.attribute(.integer(1))), .constant(.attribute(.integer(2)))]), modifier: .any)))
    }

    @Test("@count, @sum, @avg, @min and @max")
    func aggregates() {
        func agg(_ f: AggregateFunction, _ collection: String, _ attribute: String?, _ op: ComparisonOperator, _ v: AttributeValue) -> ObjectPredicate {
            .comparison(ComparisonPredicate(.aggregate(f, collection: collection, attribute: attribute), op, .constant(.attribute(v))))
        }
        Self.expectParse("tags.@count > 0", agg(.count, "tags", nil, .greaterThan, .integer(0)))
        Self.expectParse("tags.@COUNT == 2", agg(.count, "tags", nil, .equal, .integer(2)))
        Self.expectParse("tasks.@sum.priority >= 3", agg(.sum, "tasks", "priority", .greaterThanOrEqual, .integer(3)))
        Self.expectParse("tasks.@avg.estimate < 2.5", agg(.avg, "tasks", "estimate", .lessThan, .double(2.5)))
        Self.expectParse("tasks.@min.priority == 1", agg(.min, "tasks", "priority", .equal, .integer(1)))
        Self.expectParse("tasks.@max.due != nil", agg(.max, "tasks", "due", .notEqual, .null))
        Self.expectParse("project.tasks.@count > 1", agg(.count, "project.tasks", nil, .greaterThan, .integer(1)))
        Self.expectParse("tasks.@max.project.name == 'a'", agg(.max, "tasks", "project.name", .equal, .string("a")))
        Self.expectParse("tags.@count == tasks.@count", .comparison(ComparisonPredicate(
            .aggregate(.count, collection: "tags", attribute: nil), .equal, .aggregate(.count, collection: "tasks", attribute: nil))))
    }

    @Test("SUBQUERY(collection, $var, predicate).@count")
    func subquery() {
        let inner = Self.str("$t.label", .beginsWith, "a")
        Self.expectParse("SUBQUERY(tags, $t, $t.label BEGINSWITH \"a\").@count > 0", .comparison(ComparisonPredicate(
            .subqueryCount(collection: "tags", variable: "t", predicate: inner), .greaterThan, .constant(.attribute(.integer(0))))))
        Self.expectParse("subquery(tags, $tag, $tag.label == 'x' OR $tag.label == 'y').@count == 2", .comparison(ComparisonPredicate(
            .subqueryCount(collection: "tags", variable: "tag",
                           predicate: .or([Self.str("$tag.label", .equal, "x"), Self.str("$tag.label", .equal, "y")])),
            .equal, .constant(.attribute(.integer(2))))))
        Self.expectParse("project.tasks.@count > 1 AND SUBQUERY(project.tasks, $x, $x.done == YES).@count == 0", .and([
            .comparison(ComparisonPredicate(.aggregate(.count, collection: "project.tasks", attribute: nil), .greaterThan, .constant(.attribute(.integer(1))))),
            .comparison(ComparisonPredicate(.subqueryCount(collection: "project.tasks", variable: "x", predicate: Self.compare("$x.done", .equal, .boolean(true))),
                                            .equal, .constant(.attribute(.integer(0))))),
        ]))
        // The bare variable inside stays a variable.
        Self.expectParse("SUBQUERY(tags, $t, $t == nil).@count > 0", .comparison(ComparisonPredicate(
            .subqueryCount(collection: "tags", variable: "t",
                           predicate: .comparison(ComparisonPredicate(.variable("t"), .equal, .constant(.null)))),
            .greaterThan, .constant(.attribute(.integer(0))))))
    }

    @Test("CAST to NSDate: RFC 3339 strings and seconds since 2001-01-01")
    func casts() {
        let ymd2026 = Date(timeIntervalSince1970: 1_767_225_600)  // 2026-01-01T00:00:00Z
        let reference = Date(timeIntervalSince1970: 978_307_200)  // 2001-01-01T00:00:00Z
        Self.expectParse("due > CAST(\"2026-01-01T00:00:00Z\", \"NSDate\")", Self.compare("due", .greaterThan, .date(ymd2026)))
        Self.expectParse("due == CAST(0, \"NSDate\")", Self.compare("due", .equal, .date(reference)))
        Self.expectParse("due == CAST(0, 'NSDate')", Self.compare("due", .equal, .date(Date(timeIntervalSinceReferenceDate: 0))))
        Self.expectParse("due < CAST(86400.5, \"NSDate\")", Self.compare("due", .lessThan, .date(Date(timeIntervalSince1970: 978_307_200 + 86_400.5))))
        Self.expectParse("due >= cast(\"2026-01-01T00:00:00.500Z\", \"NSDate\")", Self.compare("due", .greaterThanOrEqual, .date(ymd2026.addingTimeInterval(0.5))))
        Self.expectParse("priority == CAST(\"5\", \"NSNumber\")", Self.int("priority", .equal, 5))
        Self.expectParse("due BETWEEN {CAST(0, \"NSDate\"), CAST(\"2026-01-01T00:00:00Z\", \"NSDate\")}", .comparison(ComparisonPredicate(
            .keyPath("due"), .between, .list([.constant(.attribute(.date(reference))), .constant(.attribute(.date(ymd2026)))]))))
    }

    // MARK: Format arguments

    @Test("%@ with strings, numbers, booleans, dates, object IDs, arrays, sets, nil and NSNull")
    func formatObjectArguments() throws {
        let date = Date(timeIntervalSince1970: 1_700_000_000.25)
        let id = ManagedObjectID(storeIdentifier: UUID(), entityName: "Project", key: .permanent(7))
        Self.expectParse("title == %@", ["x'\"y"], .key("title") == "x'\"y")
        Self.expectParse("priority == %@", [3], Self.int("priority", .equal, 3))
        Self.expectParse("priority == %@", [Int64(-4)], Self.int("priority", .equal, -4))
        Self.expectParse("estimate == %@", [2.5], Self.compare("estimate", .equal, .double(2.5)))
        Self.expectParse("done == %@", [true], Self.compare("done", .equal, .boolean(true)))
        Self.expectParse("done == %@", [false], Self.compare("done", .equal, .boolean(false)))
        Self.expectParse("due < %@", [date], Self.compare("due", .lessThan, .date(date)))
        Self.expectParse("project == %@", [id], .comparison(ComparisonPredicate(.keyPath("project"), .equal, .constant(.object(id)))))
        Self.expectParse("project == %@", [id], .key("project") == id)
        Self.expectParse("priority IN %@", [[1, 2, 3]], PredicateKey.key("priority").isIn([1, 2, 3]))
        Self.expectParse("title IN %@", [["a", "b"] as [Any]], PredicateKey.key("title").isIn(["a", "b"]))
        Self.expectParse("title IN %@", [[] as [Any]], .comparison(ComparisonPredicate(.keyPath("title"), .in, .list([]))))
        Self.expectParse("estimate BETWEEN %@", [[1, 2.5] as [Any]], .comparison(ComparisonPredicate(
            .keyPath("estimate"), .between, .list([.constant(.attribute(.integer(1))), .constant(.attribute(.double(2.5)))]))))
        Self.expectParse("due == %@", [Optional<Date>.none as Any], .key("due") == nil)
        Self.expectParse("due == %@", [Optional<Any>.none as Any], .key("due") == nil)
        Self.expectParse("due == %@", [NSNull()], .key("due") == nil)
        Self.expectParse("title IN %@", [Set(["b", "a"])], PredicateKey.key("title").isIn(["a", "b"]))
        Self.expectParse("priority IN %@", [Set([3])], PredicateKey.key("priority").isIn([3]))
        Self.expectParse("project IN %@", [Set([id])], .comparison(ComparisonPredicate(.keyPath("project"), .in, .list([.constant(.object(id))]))))
        // Format specifiers inside quotes are plain text.
        Self.expectParse("title == \"%@\"", [], .key("title") == "%@")
        // Arguments are consumed left to right.
        Self.expectParse("title == %@ AND priority > %@", ["a", 2], .and([.key("title") == "a", .key("priority") > 2]))
    }

    @Test("%K key paths, %d integers and %f doubles")
    func formatKeyAndNumberArguments() {
        Self.expectParse("%K == %@", ["title", "x"], .key("title") == "x")
        Self.expectParse("%K == %@", ["project.name", "x"], .key("project.name") == "x")
        Self.expectParse("%K.name == %@", ["project", "x"], .key("project.name") == "x")
        Self.expectParse("project.%K == %@", ["name", "x"], .key("project.name") == "x")
        Self.expectParse("%K.@count > %d", ["tags", 1], .comparison(ComparisonPredicate(
            .aggregate(.count, collection: "tags", attribute: nil), .greaterThan, .constant(.attribute(.integer(1))))))
        Self.expectParse("%K", ["done"], Self.isDone)
        Self.expectParse("priority > %d", [3], Self.int("priority", .greaterThan, 3))
        Self.expectParse("priority > %i", [Int32(3)], Self.int("priority", .greaterThan, 3))
        Self.expectParse("priority > %ld", [Int64(3)], Self.int("priority", .greaterThan, 3))
        Self.expectParse("priority > %lld", [-3], Self.int("priority", .greaterThan, -3))
        Self.expectParse("priority > %u", [UInt8(3)], Self.int("priority", .greaterThan, 3))
        Self.expectParse("estimate > %f", [1.5], Self.compare("estimate", .greaterThan, .double(1.5)))
        Self.expectParse("estimate > %lf", [Float(0.5)], Self.compare("estimate", .greaterThan, .double(0.5)))
        Self.expectParse("estimate > %f", [2], Self.compare("estimate", .greaterThan, .double(2)))
        Self.expectParse("estimate > %g", [1e-3], Self.compare("estimate", .greaterThan, .double(0.001)))
        Self.expectParse("%K == %d AND %K == %@", ["priority", 1, "title", "t"], .and([.key("priority") == 1, .key("title") == "t"]))
    }

    @Test("too few and too many format arguments, and arguments of the wrong type, are errors")
    func formatArgumentErrors() {
        Self.expectError("priority == %d", [], column: 13, message: "%d has no argument (0 given)")
        Self.expectError("priority == %d AND title == %@", [1], column: 29, message: "%@ has no argument (1 given)")
        Self.expectError("priority == %d", [1, 2], column: 15, message: "1 format argument(s) left unused")
        Self.expectError("title == 'x'", ["extra", "args"], column: 13, message: "2 format argument(s) left unused")
        Self.expectError("%K == 1", [5], column: 1, message: "%K needs a key path string")
        Self.expectError("%K == 1", [""], column: 1, message: "%K needs a key path string")
        Self.expectError("project.%K == 1", [5], column: 9, message: "%K needs a key path string argument")
        Self.expectError("priority == %d", ["3"], column: 13, message: "%d needs an integer argument")
        Self.expectError("priority == %d", [2.5], column: 13, message: "%d needs an integer argument")
        Self.expectError("estimate == %f", ["x"], column: 13, message: "%f needs a floating-point argument")
        Self.expectError("title == %@", [NSObject()], column: 10, message: "%@ cannot take a value of type")
        Self.expectError("priority == %z", [1], column: 13, message: "unknown format specifier")
        Self.expectError("priority == %", [1], column: 13, message: "unknown format specifier")
    }

    // MARK: Substitution variables

    @Test("withSubstitutionVariables replaces $NAME, refuses unknown variables and leaves SUBQUERY variables alone")
    func substitutionVariables() throws {
        let template = try ObjectPredicate(format: "priority == $P AND title BEGINSWITH[c] $T")
        #expect(template == .and([
            .comparison(ComparisonPredicate(.keyPath("priority"), .equal, .variable("P"))),
            .comparison(ComparisonPredicate(.keyPath("title"), .beginsWith, .variable("T"), options: .caseInsensitive)),
        ]))
        let filled = try template.withSubstitutionVariables(["P": 2, "T": "re", "UNUSED": 1])
        #expect(filled == (try ObjectPredicate(format: "priority == 2 AND title BEGINSWITH[c] 're'")))

        let list = try ObjectPredicate(format: "priority IN $LIST OR priority IN {$A, 5}").withSubstitutionVariables(["LIST": [1, 2], "A": 4])
        #expect(list == .or([.key("priority").isIn([1, 2]), .key("priority").isIn([4, 5])]))

        let nilled = try ObjectPredicate(format: "due == $D").withSubstitutionVariables(["D": Optional<Date>.none as Any])
        #expect(nilled == (PredicateKey.key("due") == nil))

        do {
            let unknown = try ObjectPredicate(format: "priority == $X").withSubstitutionVariables(["Y": 1])
            Issue.record("an unknown variable was accepted: \(unknown)")
        } catch {
            #expect(error.message.contains("no value for the variable $X"))
        }

        // The SUBQUERY's own variable is bound inside it and never substituted, even when a
        // value of the same name is given; other variables inside it are.
        let id = ManagedObjectID(storeIdentifier: UUID(), entityName: "Tag", key: .permanent(3))
        let subquery = try ObjectPredicate(format: "SUBQUERY(tags, $t, $t == $TAG OR $t.label == $L).@count > 0")
            .withSubstitutionVariables(["TAG": id, "L": "urgent", "t": "must not be used"])
        #expect(subquery == .comparison(ComparisonPredicate(
            .subqueryCount(collection: "tags", variable: "t", predicate: .or([
                .comparison(ComparisonPredicate(.variable("t"), .equal, .constant(.object(id)))),
                Self.str("$t.label", .equal, "urgent"),
            ])),
            .greaterThan, .constant(.attribute(.integer(0))))))
        // ... and outside the SUBQUERY the same name is an ordinary variable.
        let outside = try ObjectPredicate(format: "SUBQUERY(tags, $t, $t.label == 'a').@count > 0 AND title == $t")
            .withSubstitutionVariables(["t": "b"])
        #expect(outside == .and([
            .comparison(ComparisonPredicate(.subqueryCount(collection: "tags", variable: "t", predicate: Self.str("$t.label", .equal, "a")),
                                            .greaterThan, .constant(.attribute(.integer(0))))),
            .key("title") == "b",
        ]))
    }

    // MARK: Errors

    @Test("malformed predicates are refused with the exact column and what was expected")
    func errorsWithColumns() {
        Self.expectError("priority >= ", column: 13, message: "expected a value after '>='")
        Self.expectError("priority ==", column: 12, message: "expected a value after '=='")
        Self.expectError("title BEGINSWITH[c] ", column: 21, message: "expected a value after 'BEGINSWITH'")
        Self.expectError("title == \"abc", column: 10, message: "unterminated string")
        Self.expectError("title == 'abc\\'", column: 10, message: "unterminated string")
        Self.expectError("title == 'abc\\", column: 10, message: "unterminated string")
        Self.expectError("(priority > 1", column: 14, message: "expected ')'")
        Self.expectError("((priority > 1)", column: 16, message: "expected ')'")
        Self.expectError("priority > 1)", column: 13, message: "expected AND, OR or the end, found ')'")
        Self.expectError(")", column: 1, message: "expected a predicate, found ')'")
        Self.expectError("()", column: 2, message: "expected a predicate, found ')'")
        Self.expectError("title BEGINSWITH[x] \"a\"", column: 17, message: "unknown comparison option 'x'")
        Self.expectError("title ==[cx] \"a\"", column: 9, message: "unknown comparison option 'x'")
        Self.expectError("title ==[c \"a\"", column: 12, message: "expected ']' after the comparison options")
        Self.expectError("priority BETWEEN {1}", column: 20, message: "BETWEEN takes a list of two values")
        Self.expectError("priority BETWEEN {1, 2, 3}", column: 26, message: "BETWEEN takes a list of two values")
        Self.expectError("priority BETWEEN 1", column: 18, message: "BETWEEN takes a list of two values")
        Self.expectError("tags.@count.label > 1", column: 1, message: "@count ends a key path")
        Self.expectError("tags.@avg > 1", column: 1, message: "@avg needs a key after it")
        Self.expectError("tags.@foo > 1", column: 6, message: "unknown or repeated aggregate '@foo'")
        Self.expectError("tasks.@count.@count > 1", column: 14, message: "unknown or repeated aggregate '@count'")
        Self.expectError("@count > 1", column: 1, message: "expected a predicate, found '@count'")
        Self.expectError("title == @", column: 10, message: "expected an aggregate after '@'")
        Self.expectError("priority == %z", column: 13, message: "unknown format specifier")
        Self.expectError("%K == 1", [42], column: 1, message: "%K needs a key path string")
        Self.expectError("priority > 1 2", column: 14, message: "expected AND, OR or the end, found '2'")
        Self.expectError("priority > 1 title", column: 14, message: "expected AND, OR or the end, found 'title'")
        Self.expectError("priority == 1 AND", column: 18, message: "expected a predicate, found the end")
        Self.expectError("priority ~ 1", column: 10, message: "unexpected character '~'")
        Self.expectError("priority > 1e", column: 13, message: "unexpected 'e' after a number")
        Self.expectError("priority > 12abc", column: 14, message: "unexpected 'a' after a number")
        Self.expectError("priority > 0x", column: 12, message: "invalid hexadecimal number")
        Self.expectError("title == \"\\u00zz\"", column: 15, message: "expected four hex digits after \\u")
        Self.expectError("priority == $", column: 13, message: "expected a variable name after '$'")
        Self.expectError("# == 1", column: 1, message: "expected a name after '#'")
        Self.expectError("priority IN {1, 2", column: 18, message: "expected ',' or '}' in the list opened at column 13")
        Self.expectError("priority IN {1 2}", column: 16, message: "expected ',' or '}' in the list opened at column 13")
        Self.expectError("ANY tags.label", column: 15, message: "expected a comparison operator")
        Self.expectError("SUBQUERY(tags, t, t.label == 'a').@count > 0", column: 16, message: "expected a $variable")
        Self.expectError("SUBQUERY(tags, $t, $t.label == 'a') > 0", column: 37, message: "expected .@count after SUBQUERY(...)")
        Self.expectError("SUBQUERY(tags, $t, $t.label == 'a').@sum > 0", column: 37, message: "expected @count after SUBQUERY(...).")
        Self.expectError("due == CAST(1, \"NSFoo\")", column: 8, message: "to NSFoo")
        Self.expectError("due == CAST(\"soon\", \"NSDate\")", column: 8, message: "not an RFC 3339 date or a number of seconds")
        Self.expectError("due == CAST(1, NSDate)", column: 16, message: "expected a type name string")
        // Columns count Unicode scalars, not bytes or UTF-16 units.
        Self.expectError("title == \"é🚀\" AND ~", column: 19, message: "unexpected character '~'")
        Self.expectError("title == 'ß' OR", column: 16, message: "expected a predicate, found the end")
    }
}
