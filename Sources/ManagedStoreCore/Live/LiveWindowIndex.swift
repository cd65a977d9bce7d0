import Foundation

/// `attribute == constant`, required by a window's predicate (alone or in its top-level AND):
/// an object whose attribute holds another value is not in the answer, whatever else it holds.
struct LiveEqualityGuard: Hashable {
    let attribute: String
    let value: AttributeValue

    /// The guard of `predicate`, if it has one the index can use: an own attribute compared
    /// with `==` and no options to a string, integer, boolean or UUID of the attribute's own
    /// type (so that equal values are equal as Swift values, and hash alike). The index only
    /// narrows which windows look at an object; each window still evaluates its predicate.
    static func of(_ predicate: CheckedPredicate?, in schema: [Entity]) -> LiveEqualityGuard? {
        switch predicate {
        case .comparison(let comparison)?: return of(comparison, schema)
        case .and(let parts)?:
            for part in parts { if case .comparison(let comparison) = part, let found = of(comparison, schema) { return found } }
            return nil
        default: return nil
        }
    }

    private static func of(_ comparison: CheckedComparison, _ schema: [Entity]) -> LiveEqualityGuard? {
        guard comparison.quantifier == .scalar, comparison.op == .equal, comparison.options.isEmpty,
              case .keyPath(let keyPath) = comparison.lhs, case .object = keyPath.root, keyPath.steps.isEmpty,
              case let .attribute(entity, index) = keyPath.terminal,
              case .value(.attribute(let value)) = comparison.rhs else { return nil }
        let attribute = schema[entity].attributes[index]
        switch (attribute.type, value) {
        case (.string, .string), (.boolean, .boolean), (.uuid, .uuid): break
        case (let type, .integer) where type.isInteger: break
        default: return nil
        }
        return LiveEqualityGuard(attribute: attribute.name, value: value)
    }
}

/// Which windows a commit's changed objects can concern, so that an advance does not ask every
/// window about every object (10,000 idle live queries `title == "x-i"` must cost a POST
/// nearly nothing). Windows with an equality guard are found by the value the object holds
/// now and the value it held before the commits (from the history's previous values): an
/// object that held neither was not in the answer and is not now. Other windows of the
/// object's entity see every object. Windows whose predicate or sort follows relationships are
/// not indexed: the engine fetches them again when their entities change.
///
/// Touched only on the engine's queue.
final class LiveWindowIndex {
    /// Windows of each entity (by kind name) without a guard.
    private var unguarded: [String: [ObjectIdentifier: LiveWindow]] = [:]
    /// Windows of each entity (by kind name) by their guard's attribute and value.
    private var guarded: [String: [String: [AttributeValue: [ObjectIdentifier: LiveWindow]]]] = [:]
    /// Windows fetched again when a commit touches their `pathEntities`.
    private(set) var following: [ObjectIdentifier: LiveWindow] = [:]

    func add(_ window: LiveWindow) {
        let id = ObjectIdentifier(window)
        if window.followsRelationships { following[id] = window; return }
        for kind in window.kinds {
            if let equality = window.equalityGuard {
                guarded[kind, default: [:]][equality.attribute, default: [:]][equality.value, default: [:]][id] = window
            } else {
                unguarded[kind, default: [:]][id] = window
            }
        }
    }

    func remove(_ window: LiveWindow) {
        let id = ObjectIdentifier(window)
        if window.followsRelationships { following[id] = nil; return }
        for kind in window.kinds {
            if let equality = window.equalityGuard {
                guarded[kind]?[equality.attribute]?[equality.value]?[id] = nil
                if guarded[kind]?[equality.attribute]?[equality.value]?.isEmpty == true { guarded[kind]?[equality.attribute]?[equality.value] = nil }
            } else {
                unguarded[kind]?[id] = nil
            }
        }
    }

    /// What a window is asked after a run of commits: the objects that concern it, and whether
    /// one of them may have matched before without being held (past a full window's last
    /// member): then whether more matches exist must be asked of the store.
    struct Route {
        let window: LiveWindow
        var objects: [ManagedObjectID] = []
        var mayHaveLeft = false
    }

    /// The windows `changed` concerns. `context` is the advance's snapshot: objects are read
    /// from it (once, for every window).
    func routes(_ changed: [ManagedObjectID: ChangedObject], in context: ManagedObjectContext) -> [ObjectIdentifier: Route] {
        var routes: [ObjectIdentifier: Route] = [:]
        func visit(_ windows: [ObjectIdentifier: LiveWindow]?, _ id: ManagedObjectID, _ change: ChangedObject) {
            guard let windows else { return }
            for (key, window) in windows {
                routes[key, default: Route(window: window)].objects.append(id)
                if !change.inserted { routes[key]?.mayHaveLeft = true }
            }
        }
        for (id, change) in changed {
            let kind = id.entityName
            visit(unguarded[kind], id, change)
            guard let byAttribute = guarded[kind] else { continue }
            let object = context.object(with: id)
            object.fireFaultIfNeeded()
            let exists = !object.isInaccessible
            for (attribute, byValue) in byAttribute {
                var values: [AttributeValue] = []
                if exists, case .attribute(let index)? = object.entity.property(named: attribute) { values.append(object.attributes[index]) }
                switch change.valueBefore(attribute, now: exists ? values.first : nil) {
                case .known(let before?): if before != values.first { values.append(before) }
                case .known(nil): break
                case .unknown:
                    // The history does not say what it held: every window on the attribute looks.
                    for windows in byValue.values { visit(windows, id, change) }
                    continue
                }
                for value in values { visit(byValue[value], id, change) }
            }
        }
        return routes
    }
}

/// What the history says of one object over a run of commits.
struct ChangedObject {
    /// Its first change in the run made it: it held nothing before.
    var inserted: Bool
    /// Attribute values before the run, from the first change that overwrote each.
    var previous: [String: AttributeValue] = [:]
    /// Attributes some change in the run overwrote (or every one, for a delete).
    var overwritten: Set<String> = []
    var deleted = false

    enum Before { case known(AttributeValue?), unknown }

    /// `attribute`'s value before the run: nil for an object the run made.
    func valueBefore(_ attribute: String, now: AttributeValue?) -> Before {
        if inserted { return .known(nil) }
        if let value = previous[attribute] { return .known(value) }
        if deleted || overwritten.contains(attribute) || now == nil { return .unknown }
        return .known(now)
    }

    mutating func add(_ change: PersistentHistoryChange) {
        switch change.changeType {
        case .insert: break
        case .update:
            for name in change.updatedProperties where !overwritten.contains(name) {
                if case .attribute(let value)? = change.previousValues[name] { previous[name] = value }
                overwritten.insert(name)
            }
        case .delete:
            for (name, value) in change.previousValues where !overwritten.contains(name) {
                if case .attribute(let value) = value { previous[name] = value }
                overwritten.insert(name)
            }
            deleted = true
        }
    }
}
