import ManagedStoreCore

/// The schemas of the query parameters whose valid values the model decides (`fields`,
/// `include`, `sort`, an aggregate's `select`, the change feed's `entity`), as patterns that
/// list the model's own names: a client generated from the served document refuses, before
/// sending it, what the server would refuse with 400.
///
/// Each pattern follows the server's parser exactly where a pattern can (items separated by
/// commas, spaces and tabs around them, empty items skipped where the parser skips them), and
/// stays on the safe side where it cannot: key paths through at most three relationships,
/// which the server takes deeper for sorts and aggregates. A model whose names would make a
/// pattern of more than `maxAlternatives` key paths keeps the generic schema instead.
struct ModelParameterSchemas {
    let model: ManagedObjectModel

    /// The most key paths one pattern lists.
    static let maxAlternatives = 1_000
    /// How many relationships a key path in a pattern goes through at most.
    static let maxHops = 3

    // MARK: Schemas

    /// `fields`: the entity's attributes and relationships.
    func propertyNames(_ entity: EntityDescription) -> JSONValue? {
        let names = entity.attributes.map(\.name) + entity.relationships.map(\.name)
        return schema("Comma-separated properties of \(entity.name).", pattern: Self.list(names, skipsEmptyItems: true))
    }

    /// `include`: relationship key paths, at most three relationships deep (the server's limit).
    func includePaths(_ entity: EntityDescription) -> JSONValue? {
        let paths = relationshipPaths(from: entity, toManyToo: true)
        guard paths.count <= Self.maxAlternatives else { return nil }
        return schema("Comma-separated relationship key paths of \(entity.name), each at most \(Self.maxHops) relationships deep.",
                      pattern: Self.list(paths, skipsEmptyItems: true))
    }

    /// `sort` of a fetch: attributes, or key paths through to-one relationships to one, each
    /// with `-` (or `+`) and `[c]`, `[d]` or `[cd]`.
    func sortKeys(_ entity: EntityDescription) -> JSONValue? {
        let paths = attributePaths(from: entity)
        guard paths.count <= Self.maxAlternatives else { return nil }
        let item = "[+-]?" + Self.alternation(paths) + #"(?:\[[cd]*\])?"#
        return schema("Comma-separated sort keys of \(entity.name) (at most \(ManagedObjectContext.maxSortDescriptors)): attributes, "
                      + "or key paths through to-one relationships to one, `-` for descending, `[c]`/`[d]`/`[cd]` for folded order.",
                      pattern: Self.list(item: item, skipsEmptyItems: true, maxItems: ManagedObjectContext.maxSortDescriptors))
    }

    /// An aggregate's `select`: group keys (attributes and to-one relationships, directly or
    /// through to-one relationships), `count()`, a key path's `count()`, `min()` and `max()`
    /// of attributes, `sum()` and `avg()` of numbers; each may be named (`total:pages.sum()`).
    func aggregateSelect(_ entity: EntityDescription) -> JSONValue? {
        let attributes = attributePaths(from: entity)
        let keys = attributes + relationshipPaths(from: entity, toManyToo: false)
        let numeric = attributePaths(from: entity) { Self.numericTypes.contains($0.type) }
        guard keys.count <= Self.maxAlternatives else { return nil }
        var choices = [#"count\(\)"#, Self.alternation(keys) + #"(?:\.count\(\))?"#]
        if !attributes.isEmpty { choices.append(Self.alternation(attributes) + #"\.(?:min|max)\(\)"#) }
        if !numeric.isEmpty { choices.append(Self.alternation(numeric) + #"\.(?:sum|avg)\(\)"#) }
        let item = #"(?:[A-Za-z0-9_]+[ \t]*:[ \t]*)?(?:"# + choices.joined(separator: "|") + ")"
        return schema("At most \(PreparedAggregate.maxProperties) comma-separated items over \(entity.name): `[name:]keyPath` (a group key) "
                      + "or `[name:][keyPath.]function()`. Two items with the same name are 400, which no schema can say.",
                      pattern: Self.list(item: item, skipsEmptyItems: false, maxItems: PreparedAggregate.maxProperties))
    }

    /// The change feed's `entity`: the model's entities.
    var entityNames: JSONValue? {
        schema("Comma-separated entities of \(model.name).", pattern: Self.list(model.entities.map(\.name), skipsEmptyItems: true))
    }

    private func schema(_ description: String, pattern: String) -> JSONValue {
        .object([("type", .string("string")), ("description", .string(description)), ("pattern", .string(pattern))])
    }

    // MARK: Key paths

    private static let numericTypes: Set<AttributeType> = [.integer16, .integer32, .integer64, .decimal, .double, .float]

    /// Attribute key paths of `entity`: its attributes, then those reached through to-one
    /// relationships (at most `maxHops` of them), each once.
    private func attributePaths(from entity: EntityDescription, where keep: (AttributeDescription) -> Bool = { _ in true }) -> [String] {
        var paths: [String] = []
        walkToOne(from: entity, prefix: "", hops: 0) { prefix, current in
            paths += current.attributes.filter(keep).map { prefix + $0.name }
        }
        return paths
    }

    /// Relationship key paths of `entity` up to `maxHops` relationships, through to-many ones
    /// too or through to-one ones only.
    private func relationshipPaths(from entity: EntityDescription, toManyToo: Bool) -> [String] {
        var paths: [String] = []
        func walk(_ current: EntityDescription, _ prefix: String, _ depth: Int) {
            guard depth < Self.maxHops, paths.count <= Self.maxAlternatives else { return }
            for relationship in current.relationships where toManyToo || !relationship.isToMany {
                let path = prefix + relationship.name
                paths.append(path)
                if let destination = model.entity(named: relationship.destination) { walk(destination, path + ".", depth + 1) }
            }
        }
        walk(entity, "", 0)
        return paths
    }

    private func walkToOne(from entity: EntityDescription, prefix: String, hops: Int, _ visit: (String, EntityDescription) -> Void) {
        visit(prefix, entity)
        guard hops < Self.maxHops else { return }
        for relationship in entity.relationships where !relationship.isToMany {
            guard let destination = model.entity(named: relationship.destination) else { continue }
            walkToOne(from: destination, prefix: prefix + relationship.name + ".", hops: hops + 1, visit)
        }
    }

    // MARK: Patterns

    /// `(?:a|b\.c)`: one of `names`, each taken literally.
    static func alternation(_ names: [String]) -> String {
        "(?:" + names.map(escaped).joined(separator: "|") + ")"
    }

    /// A comma-separated list of `names`, whole.
    static func list(_ names: [String], skipsEmptyItems: Bool) -> String {
        // No name at all: only empty items (or nothing) match.
        list(item: names.isEmpty ? "(?!)" : alternation(names), skipsEmptyItems: skipsEmptyItems, maxItems: nil)
    }

    /// A comma-separated list of items matching `item`, with spaces and tabs around each (the
    /// server trims them); empty items are allowed where the parser skips them; at most
    /// `maxItems` items when given (counting empty ones: on the safe side).
    static func list(item: String, skipsEmptyItems: Bool, maxItems: Int?) -> String {
        let one = skipsEmptyItems ? "[ \\t]*(?:\(item)[ \\t]*)?" : "[ \\t]*\(item)[ \\t]*"
        let more = maxItems.map { "{0,\($0 - 1)}" } ?? "*"
        return "^" + one + "(?:," + one + ")" + more + "$"
    }

    /// `text` with every character that means something in a regular expression escaped.
    static func escaped(_ text: String) -> String {
        var result = ""
        for character in text {
            if "\\^$.|?*+()[]{}".contains(character) { result.append("\\") }
            result.append(character)
        }
        return result
    }
}
