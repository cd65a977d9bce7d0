/// The five merge policies, property by property, as one table that the library's tests
/// (MergePolicyTests, through contexts) and the server's (MergePolicyHTTPTests, over HTTP) both
/// run: a task read at version 1, a change C another writer saves first, and a change R saved
/// after it under each policy. Every row states the exact task afterwards.
package enum MergePolicyTable {
    /// A property value in the table: an attribute's, a project's name (nil: none), or tag labels.
    package enum Value: Sendable, Equatable, CustomStringConvertible {
        case text(String), number(Int64), flag(Bool), project(String?), tags([String])

        package var description: String {
            switch self {
            case .text(let s): return "\"\(s)\""
            case .number(let n): return "\(n)"
            case .flag(let b): return "\(b)"
            case .project(let p): return "project \(p ?? "none")"
            case .tags(let t): return "tags \(t)"
            }
        }
    }

    package typealias Values = [String: Value]

    /// One scenario: C (the store's change), R (this writer's; nil: it deletes the task), and per
    /// policy name the task afterwards (nil: deleted). `error` always fails and leaves C.
    package struct Case: Sendable, CustomStringConvertible {
        package let name: String
        package let store: Values
        package let mine: Values?
        package let expected: [String: Values?]
        package var description: String { name }

        /// R ∩ C: the properties a conflict names. A delete sets no property, so it names none.
        package var conflicting: Set<String> { Set(mine?.keys.map { $0 } ?? []).intersection(store.keys) }
    }

    /// The task as first saved: version 1. Projects P1-P3 and tags G1-G3 exist.
    package static let base: Values = ["title": .text("t0"), "priority": .number(1), "done": .flag(false), "project": .project("P1"), "tags": .tags(["G1"])]

    package static func with(_ changes: Values) -> Values? { base.merging(changes) { _, new in new } }

    /// The task is gone.
    package static let deleted: Values? = nil

    package static let cases: [Case] = [
        Case(name: "disjoint attributes", store: ["title": .text("store"), "priority": .number(2)], mine: ["done": .flag(true)], expected: [
            "store-trump": with(["title": .text("store"), "priority": .number(2), "done": .flag(true)]),
            "object-trump": with(["title": .text("store"), "priority": .number(2), "done": .flag(true)]),
            "overwrite": with(["done": .flag(true)]),
            "rollback": with(["title": .text("store"), "priority": .number(2)]),
        ]),
        Case(name: "overlapping attributes", store: ["title": .text("store"), "priority": .number(2)], mine: ["title": .text("mine"), "done": .flag(true)], expected: [
            "store-trump": with(["title": .text("store"), "priority": .number(2), "done": .flag(true)]),
            "object-trump": with(["title": .text("mine"), "priority": .number(2), "done": .flag(true)]),
            "overwrite": with(["title": .text("mine"), "done": .flag(true)]),
            "rollback": with(["title": .text("store"), "priority": .number(2)]),
        ]),
        Case(name: "equal attribute sets", store: ["title": .text("store"), "priority": .number(2)], mine: ["title": .text("mine"), "priority": .number(3)], expected: [
            "store-trump": with(["title": .text("store"), "priority": .number(2)]),
            "object-trump": with(["title": .text("mine"), "priority": .number(3)]),
            "overwrite": with(["title": .text("mine"), "priority": .number(3)]),
            "rollback": with(["title": .text("store"), "priority": .number(2)]),
        ]),
        Case(name: "a to-one changed on both sides", store: ["project": .project("P2")], mine: ["project": .project("P3"), "done": .flag(true)], expected: [
            "store-trump": with(["project": .project("P2"), "done": .flag(true)]),
            "object-trump": with(["project": .project("P3"), "done": .flag(true)]),
            "overwrite": with(["project": .project("P3"), "done": .flag(true)]),
            "rollback": with(["project": .project("P2")]),
        ]),
        Case(name: "a to-one changed by the store, an attribute by this writer", store: ["project": .project("P2")], mine: ["title": .text("mine")], expected: [
            "store-trump": with(["project": .project("P2"), "title": .text("mine")]),
            "object-trump": with(["project": .project("P2"), "title": .text("mine")]),
            "overwrite": with(["title": .text("mine")]),
            "rollback": with(["project": .project("P2")]),
        ]),
        Case(name: "a to-many changed on both sides", store: ["tags": .tags(["G1", "G2"])], mine: ["tags": .tags(["G3"])], expected: [
            "store-trump": with(["tags": .tags(["G1", "G2"])]),
            "object-trump": with(["tags": .tags(["G3"])]),
            "overwrite": with(["tags": .tags(["G3"])]),
            "rollback": with(["tags": .tags(["G1", "G2"])]),
        ]),
        Case(name: "a delete based on a version the store changed", store: ["title": .text("store")], mine: nil, expected: [
            "store-trump": with(["title": .text("store")]),
            "object-trump": deleted,
            "overwrite": deleted,
            "rollback": with(["title": .text("store")]),
        ]),
        // The store moved both relationships: the inverses of the deleted (or kept) task are checked too.
        Case(name: "a delete based on a version whose relationships the store changed", store: ["project": .project("P2"), "tags": .tags(["G2", "G3"])], mine: nil, expected: [
            "store-trump": with(["project": .project("P2"), "tags": .tags(["G2", "G3"])]),
            "object-trump": deleted,
            "overwrite": deleted,
            "rollback": with(["project": .project("P2"), "tags": .tags(["G2", "G3"])]),
        ]),
        // R is what this writer sets, also to the value the store holds now: overwrite keeps it
        // (it does not go back to the base version as "C minus R").
        Case(name: "a property set to the value the store changed it to", store: ["title": .text("store"), "project": .project("P2")],
             mine: ["title": .text("store"), "project": .project("P2"), "done": .flag(true)], expected: [
            "store-trump": with(["title": .text("store"), "project": .project("P2"), "done": .flag(true)]),
            "object-trump": with(["title": .text("store"), "project": .project("P2"), "done": .flag(true)]),
            "overwrite": with(["title": .text("store"), "project": .project("P2"), "done": .flag(true)]),
            "rollback": with(["title": .text("store"), "project": .project("P2")]),
        ]),
    ]
}
