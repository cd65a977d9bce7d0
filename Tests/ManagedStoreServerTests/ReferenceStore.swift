import Foundation
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite

// The reference model of the model-based HTTP test: the contract's semantics of writes
// (inverse maintenance, delete rules, validation, uniqueness, optimistic locking) over plain
// values, for any ManagedObjectModel. It predicts the outcome of each request; the test
// compares the server with the prediction.

// MARK: Identity and values

/// An object's identity: entity and primary key. A negative key is temporary: an object
/// inserted by the request being predicted, before the server names it.
struct RefID: Hashable, Comparable, CustomStringConvertible, Sendable {
    let entity: String
    let pk: Int64

    init(_ entity: String, _ pk: Int64) {
        self.entity = entity
        self.pk = pk
    }

    /// Parses `Entity/pk` with a positive key.
    init?(text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, let pk = Int64(parts[1]), pk > 0, String(pk) == parts[1] else { return nil }
        self.init(String(parts[0]), pk)
    }

    var isTemporary: Bool { pk < 0 }
    var description: String { "\(entity)/\(pk)" }
    static func < (a: RefID, b: RefID) -> Bool { a.entity == b.entity ? a.pk < b.pk : a.entity < b.entity }
}

/// An attribute value in a canonical form, so that what a client sent and what the server
/// answers compare equal when they mean the same value.
enum RValue: Hashable, CustomStringConvertible, Sendable {
    case null
    case integer(Int64)
    case double(Double)
    case boolean(Bool)
    case string(String)
    /// Microseconds since 1970, rounded: the precision the contract promises.
    case date(Int64)
    /// The canonical text of a Decimal (`12.5` for `12.50`).
    case decimal(String)
    /// uuid (upper case), uri, binary (base64): compared as text.
    case text(String)

    var description: String {
        switch self {
        case .null: return "null"
        case .integer(let v): return "\(v)"
        case .double(let v): return "\(v)"
        case .boolean(let v): return "\(v)"
        case .string(let v): return "\"\(v)\""
        case .date(let v): return RFC3339.string(from: Date(timeIntervalSince1970: Double(v) / 1e6))
        case .decimal(let v): return "decimal(\(v))"
        case .text(let v): return "\"\(v)\""
        }
    }

    var isNull: Bool { self == .null }

    /// The value a JSON value means for an attribute of `type`; nil when the JSON is of the
    /// wrong kind for it (the contract's `invalid-type`). Reads client bodies and server answers alike.
    init?(json: JSONValue, type: AttributeType) {
        if json.isNull { self = .null; return }
        switch type {
        case .integer16, .integer32, .integer64:
            guard case .number(let text) = json, let v = Int64(text) else { return nil }
            self = .integer(v)
        case .double:
            guard case .number(let text) = json, let v = Double(text) else { return nil }
            self = .double(v)
        case .float:
            guard case .number(let text) = json, let v = Float(text) else { return nil }
            self = .double(Double(v))
        case .decimal:
            let text: String
            switch json {
            case .string(let s), .number(let s): text = s
            default: return nil
            }
            guard AttributeValue.isDecimalText(text), let d = Decimal(string: text) else { return nil }
            self = .decimal(d.description)
        case .string:
            guard case .string(let s) = json else { return nil }
            self = .string(s)
        case .boolean:
            guard case .bool(let b) = json else { return nil }
            self = .boolean(b)
        case .date:
            guard case .string(let s) = json, let d = RFC3339.date(from: s) else { return nil }
            self = .date(Int64((d.timeIntervalSince1970 * 1e6).rounded()))
        case .uuid:
            guard case .string(let s) = json, let u = UUID(uuidString: s) else { return nil }
            self = .text(u.uuidString)
        case .uri:
            guard case .string(let s) = json, !s.isEmpty else { return nil }
            self = .text(s)
        case .binary:
            guard case .string(let s) = json, let d = Data(base64Encoded: s) else { return nil }
            self = .text(d.base64EncodedString())
        }
    }

    /// A model's value (a default, a min or a max).
    init(_ value: AttributeValue) {
        switch value {
        case .null: self = .null
        case .integer(let v): self = .integer(v)
        case .decimal(let d): self = .decimal(d.description)
        case .double(let v): self = .double(v)
        case .float(let v): self = .double(Double(v))
        case .string(let s): self = .string(s)
        case .boolean(let b): self = .boolean(b)
        case .date(let d): self = .date(Int64((d.timeIntervalSince1970 * 1e6).rounded()))
        case .binary(let d): self = .text(d.base64EncodedString())
        case .uuid(let u): self = .text(u.uuidString)
        case .uri(let u): self = .text(u.absoluteString)
        }
    }

    /// Order of numbers and dates (for min and max); nil for values without one.
    static func compare(_ a: RValue, _ b: RValue) -> ComparisonResult? {
        func order<T: Comparable>(_ x: T, _ y: T) -> ComparisonResult { x < y ? .orderedAscending : x > y ? .orderedDescending : .orderedSame }
        switch (a, b) {
        case let (.integer(x), .integer(y)): return order(x, y)
        case let (.integer(x), .double(y)): return order(Double(x), y)
        case let (.double(x), .integer(y)): return order(x, Double(y))
        case let (.double(x), .double(y)): return order(x, y)
        case let (.date(x), .date(y)): return order(x, y)
        case let (.decimal(x), .decimal(y)):
            guard let dx = Decimal(string: x), let dy = Decimal(string: y) else { return nil }
            return order(dx, dy)
        default: return nil
        }
    }
}

// MARK: The model's description

/// What the reference needs of a model: entities, attributes with their rules,
/// relationships with destination, inverse and delete rule, uniqueness constraints.
struct RefSchema: Sendable {
    /// The entities objects are made of: every one but the abstract ones.
    let entities: [EntityDescription]
    /// Every entity, abstract ones too: what is listed.
    let listedEntities: [EntityDescription]
    private let byName: [String: EntityDescription]
    /// Per entity: the entities whose objects a list of it answers (itself unless abstract,
    /// and every concrete entity below it).
    private let kindsByName: [String: [String]]
    /// Each uniqueness constraint with the entity that declared it: its values are unique
    /// across every kind of that entity.
    let constraints: [(owner: String, attributes: [String], kinds: [String])]

    init(_ model: ManagedObjectModel) {
        entities = model.entities.filter { !$0.isAbstract }
        listedEntities = model.entities
        byName = Dictionary(uniqueKeysWithValues: model.entities.map { ($0.name, $0) })
        let kinds = Dictionary(uniqueKeysWithValues: model.entities.map { ($0.name, model.kindNames(of: $0.name)) })
        kindsByName = kinds
        constraints = model.authoredEntities.flatMap { entity in entity.uniquenessConstraints.map { (entity.name, $0, kinds[entity.name]!) } }
    }

    var entityNames: [String] { entities.map(\.name) }
    func kinds(_ entity: String) -> [String] { kindsByName[entity] ?? [entity] }
    /// Whether `relationship` can hold an object of `entity`: one of its destination's kinds
    /// (a relationship to a parent entity holds its sub-entities' objects).
    func holds(_ relationship: RelationshipDescription, _ entity: String) -> Bool { kinds(relationship.destination).contains(entity) }
    func entity(_ name: String) -> EntityDescription { byName[name]! }
    func attribute(_ entity: String, _ name: String) -> AttributeDescription? { byName[entity]?.attribute(named: name) }
    func relationship(_ entity: String, _ name: String) -> RelationshipDescription? { byName[entity]?.relationship(named: name) }
    func inverse(of relationship: RelationshipDescription) -> RelationshipDescription {
        byName[relationship.destination]!.relationship(named: relationship.inverse!)!  // the test models have no one-way relationship
    }

    /// The first string attribute of an entity: where the concurrent test marks an object's owner.
    func ownerAttribute(_ entity: String) -> String? { byName[entity]?.attributes.first { $0.type == .string }?.name }

    /// The broken rule of one attribute value, if any (one code per attribute).
    func violation(_ value: RValue, _ attribute: AttributeDescription) -> String? {
        if value.isNull { return attribute.isOptional ? nil : "missing-mandatory-property" }
        if case .integer(let v) = value, let range = attribute.type.integerRange, !range.contains(v) {
            return v < range.lowerBound ? "too-small" : "too-large"
        }
        if let min = attribute.minValue, RValue.compare(value, RValue(min)) == .orderedAscending { return "too-small" }
        if let max = attribute.maxValue, RValue.compare(value, RValue(max)) == .orderedDescending { return "too-large" }
        if case .string(let text) = value {
            let length = text.count  // grapheme clusters
            if let minLength = attribute.minLength, length < minLength { return "too-short" }
            if let maxLength = attribute.maxLength, length > maxLength { return "too-long" }
            if let pattern = attribute.pattern,
               let regex = try? NSRegularExpression(pattern: "^(?:\(pattern))$"),
               regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) == nil {
                return "pattern-mismatch"
            }
        }
        return nil
    }
}

// MARK: Objects

/// One object as plain values. A to-one that is null is absent from `toOne`.
struct RefObject: Equatable, Sendable {
    var attributes: [String: RValue]
    var toOne: [String: RefID]
    var toMany: [String: Set<RefID>]
    var version: Int64

    /// Same attribute and relationship values (the version aside).
    func sameValues(as other: RefObject) -> Bool {
        attributes == other.attributes && toOne == other.toOne && toMany == other.toMany
    }

    /// Same attribute and to-one values: what decides a version bump.
    func sameRow(as other: RefObject) -> Bool { attributes == other.attributes && toOne == other.toOne }
}

// MARK: Requests

/// Where an operation of a transaction points: a saved object, or a ref of an earlier insert.
enum RefTarget: Hashable, Sendable, CustomStringConvertible {
    case id(RefID)
    case ref(String)

    var description: String {
        switch self {
        case .id(let id): return id.description
        case .ref(let name): return name
        }
    }
}

typealias Values = [(String, JSONValue)]

enum TxOp: Sendable {
    case insert(entity: String, ref: String?, values: Values)
    case update(target: RefTarget, version: Int64?, values: Values)
    case delete(target: RefTarget, version: Int64?)
}

/// A request the reference predicts. Relationship values are JSON strings: object IDs, or
/// (in transactions) refs of earlier inserts.
enum RefRequest: Sendable {
    case insert(entity: String, values: Values)
    /// PATCH (`replace` false) or PUT; `version` goes in If-Match, or in the body's `_version`.
    case update(id: RefID, values: Values, replace: Bool, version: Int64?, versionInBody: Bool)
    case delete(id: RefID, version: Int64?)
    case transaction([TxOp])
    /// A read of an object that does not exist (404).
    case get(id: RefID)
}

// MARK: Predictions

/// A validation error the server must report: `objects` are the names it may use for the
/// object (nil: any name without an internal temporary ID, for a single insert).
struct ExpectedError: CustomStringConvertible, Sendable {
    let objects: Set<String>?
    let property: String?
    let code: String

    var description: String { "\(objects.map { $0.sorted().joined(separator: "|") } ?? "*").\(property ?? "-"): \(code)" }
}

enum ExpectedConflict: CustomStringConvertible, Sendable {
    case locking(object: String, oldVersion: Int64, newVersion: Int64)
    /// `holders`: the saved objects that hold the value; `exact`: the conflict must name them all.
    case uniqueness(entity: String, constraint: [String], values: [String: RValue], holders: Set<String>, exact: Bool)

    var description: String {
        switch self {
        case let .locking(object, old, new): return "optimistic-locking \(object) \(old) -> \(new)"
        case let .uniqueness(entity, constraint, values, holders, exact):
            return "uniqueness \(entity)\(constraint) \(values) held by \(holders.sorted())\(exact ? "" : " (or fewer)")"
        }
    }
}

/// The state of a request being applied: live objects, objects it deleted (kept, as their
/// relationships still matter to `deny`), refs, and everything that went wrong.
struct Working: Sendable {
    var live: [RefID: RefObject]
    var dead: [RefID: RefObject] = [:]
    var refs: [String: RefID] = [:]
    var refNames: [RefID: String] = [:]
    var nextTemporary: Int64 = -1
    /// Temporary IDs of inserted objects, in order (some may be dead again).
    var inserted: [RefID] = []
    /// Saved objects an update operation addressed.
    var addressed: Set<RefID> = []
    var errors: [ExpectedError] = []
    var lockConflicts: [ExpectedConflict] = []
    var notFound: String?
    /// The request uses an object it deleted itself earlier: today's server traps on that.
    var usesDeadObject = false
    /// A relationship value is a ref of an object of another entity: today's server traps on that.
    var wrongEntityRef = false
    /// A later operation emptied a deny relationship of an object deleted earlier (today's
    /// server refuses that delete).
    var denyEmptiedAfterDelete = false
    /// Why the contract leaves the answer open, if it does.
    var ambiguity: String?
    /// Whether today's server would stop the process on this request.
    var crashesToday: Bool { usesDeadObject || wrongEntityRef }
    /// Properties given a value of the wrong kind, per object: not also "missing".
    var wrongKind: Set<String> = []
    /// A deny rule refuses the delete of an object the request inserted itself.
    var deniesInserted = false
    /// The request is a single insert (POST of one object): its object has no name in errors.
    var singleInsert = false
}

struct Prediction: Sendable {
    enum Outcome: Sendable {
        case success
        case notFound(String)
        case validation(expected: [ExpectedError], tolerated: [ExpectedError])
        case conflict([ExpectedConflict])
        /// The contract does not decide between two answers: the generator avoids these.
        case ambiguous(String)
    }
    var outcome: Outcome
    var working: Working
    /// For success: the versions each saved or inserted object may have afterwards (by working ID).
    var allowedVersions: [RefID: ClosedRange<Int64>] = [:]
}

// MARK: The store

struct ReferenceStore: Sendable {
    let schema: RefSchema
    private(set) var objects: [RefID: RefObject] = [:]

    init(schema: RefSchema) { self.schema = schema }

    func ids(_ entity: String) -> [RefID] { objects.keys.filter { $0.entity == entity }.sorted() }
    func count(_ entity: String) -> Int { objects.keys.reduce(0) { $0 + ($1.entity == entity ? 1 : 0) } }
    /// What a list of `entity` holds: its objects and those of every entity below it.
    func listedIDs(_ entity: String) -> [RefID] {
        let kinds = Set(schema.kinds(entity))
        return objects.keys.filter { kinds.contains($0.entity) }.sorted()
    }
    func listedCount(_ entity: String) -> Int { listedIDs(entity).count }
    subscript(id: RefID) -> RefObject? { objects[id] }

    /// A new object of `entity` with the model's defaults and no relationships.
    func newObject(_ entity: String) -> RefObject {
        let e = schema.entity(entity)
        var attributes: [String: RValue] = [:]
        for a in e.attributes { attributes[a.name] = RValue(a.defaultValue) }
        var toMany: [String: Set<RefID>] = [:]
        for r in e.relationships where r.isToMany { toMany[r.name] = [] }
        return RefObject(attributes: attributes, toOne: [:], toMany: toMany, version: 1)
    }

    // MARK: Predicting

    func predict(_ request: RefRequest) -> Prediction {
        var w = Working(live: objects)
        if case .insert = request { w.singleInsert = true }
        switch request {
        case .get(let id):
            return Prediction(outcome: .notFound("\(id)"), working: w)
        case let .insert(entity, values):
            insert(&w, entity: entity, ref: nil, values: values)
        case let .update(id, values, replace, version, _):
            update(&w, target: .id(id), version: version, values: values, replace: replace)
        case let .delete(id, version):
            delete(&w, target: .id(id), version: version)
        case .transaction(let operations):
            for operation in operations {
                switch operation {
                case let .insert(entity, ref, values): insert(&w, entity: entity, ref: ref, values: values)
                case let .update(target, version, values): update(&w, target: target, version: version, values: values, replace: false)
                case let .delete(target, version): delete(&w, target: target, version: version)
                }
                if w.notFound != nil { break }
            }
        }
        return finish(w, singleWrite: { if case .transaction = request { return false } else { return true } }())
    }

    private func finish(_ input: Working, singleWrite: Bool) -> Prediction {
        var w = input
        if let why = w.ambiguity { return Prediction(outcome: .ambiguous(why), working: w) }
        if let missing = w.notFound {
            if !w.errors.isEmpty || !w.lockConflicts.isEmpty { return Prediction(outcome: .ambiguous("404 beside other failures"), working: w) }
            return Prediction(outcome: .notFound(missing), working: w)
        }
        // Every object the request inserted or updated is checked against the model.
        let written = w.inserted.filter { w.live[$0] != nil } + w.addressed.filter { w.live[$0] != nil }.sorted()
        for id in written {
            let object = w.live[id]!
            for attribute in schema.entity(id.entity).attributes {
                guard let code = schema.violation(object.attributes[attribute.name] ?? .null, attribute) else { continue }
                if code == "missing-mandatory-property" && w.wrongKind.contains("\(id).\(attribute.name)") { continue }
                w.errors.append(ExpectedError(objects: names(w, id), property: attribute.name, code: code))
            }
        }
        // Deny: a deleted object's deny relationship must be empty of surviving objects.
        var tolerated: [ExpectedError] = []
        for id in w.dead.keys.sorted() {
            let object = w.dead[id]!
            for relationship in schema.entity(id.entity).relationships where relationship.deleteRule == .deny {
                let targets = relationship.isToMany ? object.toMany[relationship.name] ?? [] : Set([object.toOne[relationship.name]].compactMap { $0 })
                let surviving = targets.filter { w.live[$0] != nil }
                guard !surviving.isEmpty else { continue }
                w.errors.append(ExpectedError(objects: names(w, id), property: relationship.name, code: "delete-denied"))
                if id.isTemporary { w.deniesInserted = true }
                // The objects still pointing at it may be reported too.
                let inverse = schema.inverse(of: relationship)
                for holder in surviving {
                    tolerated.append(ExpectedError(objects: names(w, holder), property: inverse.name, code: "invalid-relationship"))
                }
            }
        }
        var conflicts = w.lockConflicts
        conflicts += uniquenessConflicts(w, exact: singleWrite)
        if !w.errors.isEmpty {
            if !conflicts.isEmpty { return Prediction(outcome: .ambiguous("validation errors beside conflicts"), working: w) }
            return Prediction(outcome: .validation(expected: w.errors, tolerated: tolerated), working: w)
        }
        if !conflicts.isEmpty { return Prediction(outcome: .conflict(conflicts), working: w) }
        var prediction = Prediction(outcome: .success, working: w)
        for (id, object) in w.live {
            if id.isTemporary { prediction.allowedVersions[id] = 1...1; continue }
            let before = objects[id]!
            let v = before.version
            if !object.sameRow(as: before) {
                prediction.allowedVersions[id] = (v + 1)...(v + 1)
            } else if !object.sameValues(as: before) || w.addressed.contains(id) {
                // A change of to-many relationships only, or a write that changed nothing:
                // the contract leaves the version bump open.
                prediction.allowedVersions[id] = v...(v + 1)
            }
        }
        return prediction
    }

    /// How the server may name an object in an error: a saved object by its ID, an inserted one
    /// by its ref or a permanent ID of its entity (`Entity/*`); the object of a single insert
    /// has no name yet (nil: any name without an internal temporary ID).
    private func names(_ w: Working, _ id: RefID) -> Set<String>? {
        guard id.isTemporary else { return [id.description] }
        if w.singleInsert { return nil }
        return w.refNames[id].map { [$0, "\(id.entity)/*"] } ?? ["\(id.entity)/*"]
    }

    private func uniquenessConflicts(_ w: Working, exact: Bool) -> [ExpectedConflict] {
        var result: [ExpectedConflict] = []
        for (owner, constraint, kinds) in schema.constraints {
            do {
                var groups: [[RValue]: [RefID]] = [:]
                for (id, object) in w.live where kinds.contains(id.entity) {
                    let values = constraint.map { object.attributes[$0] ?? .null }
                    if values.contains(where: \.isNull) { continue }
                    groups[values, default: []].append(id)
                }
                // Only groups of two or more are conflicts: sorting those alone, not every
                // object's group, is what keeps a long walk's predictions cheap.
                let shared = groups.filter { $0.value.count > 1 }
                for (values, members) in shared.sorted(by: { $0.value.min()! < $1.value.min()! }) {
                    // Saved objects that held the value before and still do.
                    let holders = members.filter { !$0.isTemporary && objects[$0].map { o in constraint.map { o.attributes[$0] ?? .null } == values } == true }
                    result.append(.uniqueness(entity: owner, constraint: constraint,
                                              values: Dictionary(uniqueKeysWithValues: zip(constraint, values)),
                                              holders: Set(holders.map(\.description)), exact: exact))
                }
            }
        }
        return result
    }

    // MARK: Operations

    private func resolve(_ w: Working, _ target: RefTarget) -> RefID? {
        switch target {
        case .id(let id): return id
        case .ref(let name): return w.refs[name]
        }
    }

    private func insert(_ w: inout Working, entity: String, ref: String?, values: Values) {
        let id = RefID(entity, w.nextTemporary)
        w.nextTemporary -= 1
        w.live[id] = newObject(entity)
        w.inserted.append(id)
        // Its errors already name it by its ref; its own values cannot refer to it yet.
        if let ref { w.refNames[id] = ref }
        apply(&w, values, to: id, replace: false)
        if let ref { w.refs[ref] = id }
    }

    private func update(_ w: inout Working, target: RefTarget, version: Int64?, values: Values, replace: Bool) {
        guard let id = resolve(w, target) else { w.notFound = target.description; return }
        guard w.live[id] != nil else {
            if w.dead[id] != nil { w.usesDeadObject = true }
            w.notFound = target.description
            return
        }
        if !id.isTemporary {
            if let version, let stored = objects[id]?.version, version != stored { noteStale(&w, id, version, stored) }
            w.addressed.insert(id)
        }
        apply(&w, values, to: id, replace: replace)
    }

    private func delete(_ w: inout Working, target: RefTarget, version: Int64?) {
        guard let id = resolve(w, target) else { w.notFound = target.description; return }
        guard w.live[id] != nil else {
            // A no-op or a 404: the contract does not say.
            if w.dead[id] != nil { w.ambiguity = "deletes an object the request deleted already" }
            w.notFound = target.description
            return
        }
        if !id.isTemporary, let version, let stored = objects[id]?.version, version != stored { noteStale(&w, id, version, stored) }
        cascadeDelete(&w, id)
    }

    /// One conflict per object, however many of the request's operations were based on a stale
    /// version of it: the first such version is the one reported.
    private func noteStale(_ w: inout Working, _ id: RefID, _ version: Int64, _ stored: Int64) {
        let already = w.lockConflicts.contains { if case .locking(id.description, _, _) = $0 { return true } else { return false } }
        if !already { w.lockConflicts.append(.locking(object: id.description, oldVersion: version, newVersion: stored)) }
    }

    /// Deletes `id` and applies its delete rules: cascade deletes the destinations (recursively),
    /// nullify removes it from their inverse, deny is checked when the request ends.
    private func cascadeDelete(_ w: inout Working, _ id: RefID) {
        guard let object = w.live.removeValue(forKey: id) else { return }
        w.dead[id] = object
        for relationship in schema.entity(id.entity).relationships {
            let targets = relationship.isToMany ? (object.toMany[relationship.name] ?? []).sorted() : [object.toOne[relationship.name]].compactMap { $0 }
            switch relationship.deleteRule {
            case .cascade:
                for target in targets where w.live[target] != nil { cascadeDelete(&w, target) }
            case .nullify:
                let inverse = schema.inverse(of: relationship)
                for target in targets { unlink(&w, target, inverse, member: id) }
            case .deny, .noAction:
                break
            }
        }
    }

    /// Applies a body: with `replace`, what it leaves out goes back to the default (attributes)
    /// or to nothing (relationships); then attributes, to-one and to-many values, in body order.
    private func apply(_ w: inout Working, _ values: Values, to id: RefID, replace: Bool) {
        let entity = schema.entity(id.entity)
        var namedErrors: [(String, String)] = []
        if replace {
            let given = Set(values.map(\.0))
            for attribute in entity.attributes where !given.contains(attribute.name) {
                w.live[id]!.attributes[attribute.name] = RValue(attribute.defaultValue)
            }
            for relationship in entity.relationships where !given.contains(relationship.name) {
                if relationship.isToMany { setToMany(&w, id, relationship, []) } else { setToOne(&w, id, relationship, nil) }
            }
        }
        for (key, json) in values {
            guard let attribute = entity.attribute(named: key) else { continue }
            if let value = RValue(json: json, type: attribute.type) {
                w.live[id]!.attributes[key] = value
            } else {
                namedErrors.append((key, "invalid-type"))
                w.wrongKind.insert("\(id).\(key)")
            }
        }
        for (key, json) in values {
            guard let relationship = entity.relationship(named: key), !relationship.isToMany else { continue }
            switch json {
            case .null:
                setToOne(&w, id, relationship, nil)
            case .string(let text):
                switch target(&w, text, relationship) {
                case .success(let destination): setToOne(&w, id, relationship, destination)
                case .failure(let code): namedErrors.append((key, code.rawValue))
                }
            default:
                namedErrors.append((key, "invalid-type"))
            }
        }
        for (key, json) in values {
            guard let relationship = entity.relationship(named: key), relationship.isToMany else { continue }
            let items: [JSONValue]
            switch json {
            case .null: items = []
            case .array(let a): items = a
            default:
                namedErrors.append((key, "invalid-type"))
                continue
            }
            var destinations: Set<RefID> = []
            var failed = false
            for item in items {
                guard case .string(let text) = item else {
                    namedErrors.append((key, "invalid-type"))
                    failed = true
                    continue
                }
                switch target(&w, text, relationship) {
                case .success(let destination): destinations.insert(destination)
                case .failure(let code):
                    namedErrors.append((key, code.rawValue))
                    failed = true
                }
            }
            if !failed { setToMany(&w, id, relationship, destinations) }
        }
        for (property, code) in namedErrors {
            w.errors.append(ExpectedError(objects: names(w, id), property: property, code: code))
        }
    }

    enum TargetFailure: String, Error { case invalidType = "invalid-type", invalidRelationship = "invalid-relationship" }

    /// A relationship value: an earlier ref, else an object ID that must name a live object of
    /// the destination entity.
    private func target(_ w: inout Working, _ text: String, _ relationship: RelationshipDescription) -> Result<RefID, TargetFailure> {
        let id: RefID
        if let ref = w.refs[text] {
            id = ref
        } else if let parsed = RefID(text: text), schema.entities.contains(where: { $0.name == parsed.entity }) {
            id = parsed
        } else {
            return .failure(.invalidType)
        }
        if w.dead[id] != nil && id.isTemporary { w.usesDeadObject = true }
        if id.isTemporary && !schema.holds(relationship, id.entity) { w.wrongEntityRef = true }
        guard schema.holds(relationship, id.entity), w.live[id] != nil else { return .failure(.invalidRelationship) }
        return .success(id)
    }

    // MARK: Inverse maintenance

    private func mutate(_ w: inout Working, _ id: RefID, _ body: (inout RefObject) -> Void) {
        if w.live[id] != nil { body(&w.live[id]!) } else if w.dead[id] != nil { body(&w.dead[id]!) }
    }

    private func object(_ w: Working, _ id: RefID) -> RefObject? { w.live[id] ?? w.dead[id] }

    private func setToOne(_ w: inout Working, _ owner: RefID, _ relationship: RelationshipDescription, _ target: RefID?) {
        let old = object(w, owner)?.toOne[relationship.name]
        guard old != target else { return }
        mutate(&w, owner) { $0.toOne[relationship.name] = target }
        let inverse = schema.inverse(of: relationship)
        if let old { unlink(&w, old, inverse, member: owner) }
        if let target { link(&w, target, inverse, member: owner) }
    }

    private func setToMany(_ w: inout Working, _ owner: RefID, _ relationship: RelationshipDescription, _ targets: Set<RefID>) {
        let old = object(w, owner)?.toMany[relationship.name] ?? []
        guard old != targets else { return }
        mutate(&w, owner) { $0.toMany[relationship.name] = targets }
        let inverse = schema.inverse(of: relationship)
        for removed in old.subtracting(targets).sorted() { unlink(&w, removed, inverse, member: owner) }
        for added in targets.subtracting(old).sorted() { link(&w, added, inverse, member: owner) }
    }

    /// `member` no longer relates to `target` through `target`'s relationship `relationship`.
    private func unlink(_ w: inout Working, _ target: RefID, _ relationship: RelationshipDescription, member: RefID) {
        if relationship.deleteRule == .deny && w.dead[target] != nil && w.live[member] != nil { w.denyEmptiedAfterDelete = true }
        mutate(&w, target) { object in
            if relationship.isToMany {
                object.toMany[relationship.name, default: []].remove(member)
            } else if object.toOne[relationship.name] == member {
                object.toOne[relationship.name] = nil
            }
        }
    }

    /// `member` now relates to `target` through `target`'s relationship `relationship`; a
    /// to-one leaves its previous partner, whose side forgets `target`.
    private func link(_ w: inout Working, _ target: RefID, _ relationship: RelationshipDescription, member: RefID) {
        if relationship.isToMany {
            mutate(&w, target) { $0.toMany[relationship.name, default: []].insert(member) }
            return
        }
        let previous = object(w, target)?.toOne[relationship.name]
        guard previous != member else { return }
        if let previous { unlink(&w, previous, schema.inverse(of: relationship), member: target) }
        mutate(&w, target) { $0.toOne[relationship.name] = member }
    }

    // MARK: Committing

    /// Takes in a successful request: `mapping` names each inserted object (temporary ID to the
    /// server's), `versions` are the versions read back from the server for the objects whose
    /// version the prediction left open.
    mutating func commit(_ prediction: Prediction, mapping: [RefID: RefID], versions: [RefID: Int64]) {
        func map(_ id: RefID) -> RefID { mapping[id] ?? id }
        var result: [RefID: RefObject] = [:]
        for (id, object) in prediction.working.live {
            var copy = object
            copy.toOne = copy.toOne.mapValues(map)
            copy.toMany = copy.toMany.mapValues { Set($0.map(map)) }
            let final = map(id)
            if let version = versions[final] {
                copy.version = version
            } else if let allowed = prediction.allowedVersions[id], allowed.count == 1 {
                copy.version = allowed.lowerBound
            } else if let before = objects[id] {
                copy.version = before.version
            }
            result[final] = copy
        }
        objects = result
    }

    /// The objects whose state a working state changed (temporary IDs included), and the saved
    /// objects it deleted.
    func differences(_ w: Working) -> (changed: Set<RefID>, deleted: Set<RefID>) {
        var changed: Set<RefID> = []
        for (id, object) in w.live where objects[id].map({ !$0.sameValues(as: object) }) ?? true { changed.insert(id) }
        let deleted = Set(w.dead.keys.filter { !$0.isTemporary })
        return (changed, deleted)
    }
}
