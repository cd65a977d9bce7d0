import Foundation
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite

/// SplitMix64: a small, seedable generator, so a failing walk replays from its seed.
struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Makes random requests for the reference model's current state, over any model: valid and
/// invalid inserts, PATCH and PUT (with and without If-Match, some stale), deletes (often of
/// the highest key, then an insert of the same entity), transactions with refs, and reads of
/// missing objects. Every request's outcome is decided by the contract: requests whose answer
/// the contract leaves open are dropped and made again.
struct OperationGenerator {
    let schema: RefSchema
    /// Starts every string value: marks the owner of an object when several clients share a server.
    let owner: String
    /// Objects per entity above which inserts stop and deletes are preferred.
    let cap: Int
    /// Also make requests that crash today's server (they use an object deleted earlier in
    /// the same transaction, or a ref of the wrong entity), off unless asked for.
    let crashers: Bool
    /// Requests left out for triage (`WalkSettings.Relax`).
    let relax: Set<WalkSettings.Relax>
    var rng: SplitMix64
    private var serial = 0
    private var refSerial = 0
    /// Requests to make next (an insert after deleting the highest key).
    private var followUps: [(RefRequest, String)] = []
    /// Every key of every entity this client has seen, so deleted ones can be named.
    private var seen: [String: Set<Int64>] = [:]

    init(schema: RefSchema, seed: UInt64, owner: String = "", cap: Int = 60, crashers: Bool = false, relax: Set<WalkSettings.Relax> = []) {
        self.relax = relax
        self.schema = schema
        self.owner = owner
        self.cap = cap
        self.crashers = crashers
        self.rng = SplitMix64(seed: seed)
    }

    // MARK: Randomness

    mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &rng) < p }
    mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &rng) }
    mutating func pick<T>(_ items: [T]) -> T? { items.isEmpty ? nil : items[Int.random(in: 0..<items.count, using: &rng)] }
    mutating func subset<T>(_ items: [T], max: Int) -> [T] {
        var pool = items
        var result: [T] = []
        for _ in 0..<int(0...min(max, pool.count)) { result.append(pool.remove(at: int(0...(pool.count - 1)))) }
        return result
    }

    // MARK: Values

    private func isUnique(_ entity: String, _ attribute: String) -> Bool {
        schema.entity(entity).uniquenessConstraints.contains { $0.contains(attribute) }
    }

    /// A string of exactly `count` characters (grapheme clusters) starting with `start`, made
    /// of characters of several UTF-8 lengths and of several scalars.
    private mutating func padded(_ start: String, to count: Int) -> String {
        let pieces = ["x", "é", "e\u{301}", "👍🏽", "日", "🇫🇷"]
        var text = start
        while text.count < count { text += pick(pieces)! }
        while text.count > count { text.removeLast() }
        return text
    }

    mutating func validValue(_ entity: String, _ attribute: AttributeDescription) -> JSONValue {
        if attribute.isOptional && chance(0.1) { return .null }
        serial += 1
        switch attribute.type {
        case .string:
            var text = "\(owner)\(attribute.name.prefix(3))-\(serial)"
            if chance(0.15) { text += pick([" é", " 👍🏽", " e\u{301}", " \"q\"", " back\\slash", " 日本"])! }
            if let maxLength = attribute.maxLength, chance(0.05) { text = padded(text, to: maxLength) }
            if let minLength = attribute.minLength, text.count < minLength { text = padded(text, to: minLength) }
            if let maxLength = attribute.maxLength, text.count > maxLength { text = padded(text, to: maxLength) }
            return .string(text)
        case .integer16, .integer32, .integer64:
            let typeRange = attribute.type.integerRange!
            var lower = typeRange.lowerBound, upper = typeRange.upperBound
            if case .integer(let v)? = attribute.minValue { lower = Swift.max(lower, v) }
            if case .integer(let v)? = attribute.maxValue { upper = Swift.min(upper, v) }
            let value: Int64
            switch int(0...9) {
            case 0: value = lower
            case 1: value = upper
            default:
                let low = Swift.max(lower, -1000), high = Swift.min(upper, Swift.max(low, 1000))
                value = Int64.random(in: low...high, using: &rng)
            }
            return .number(String(value))
        case .double:
            switch int(0...3) {
            case 0: return .number(String(Double(int(-4000...4000)) / 16))
            case 1: return .number("\(Double.random(in: -1e6...1e6, using: &rng))")
            case 2: return .number("0")
            default: return .number("1e-7")
            }
        case .float:
            return .number(String(Double(int(-400...400)) / 4))
        case .decimal:
            return .string("\(int(-99999...99999)).\(String(format: "%02d", int(0...99)))")
        case .boolean:
            return .bool(chance(0.5))
        case .date:
            // 2000-01-01 to 2030-01-01, with microseconds.
            let micros = Int64.random(in: 946_684_800_000_000...1_893_456_000_000_000, using: &rng)
            return .string(RFC3339.string(from: Date(timeIntervalSince1970: Double(micros) / 1e6)))
        case .uuid:
            let bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &rng) }
            return .string(UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8],
                                       bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15])).uuidString)
        case .uri:
            return .string("https://example.com/\(owner)\(serial)")
        case .binary:
            return .string(Data((0..<int(0...12)).map { _ in UInt8.random(in: 0...255, using: &rng) }).base64EncodedString())
        }
    }

    /// A value that breaks one rule of the attribute (wrong kind, out of range, too short or
    /// long, null where required).
    mutating func invalidValue(_ attribute: AttributeDescription) -> JSONValue {
        var candidates: [JSONValue] = []
        switch attribute.type {
        case .string, .uri: candidates.append(.number("42"))
        case .boolean: candidates.append(.number("1"))
        case .decimal: candidates.append(.bool(true))
        default: candidates.append(.string("not a \(attribute.type.rawValue)"))
        }
        if attribute.type == .date { candidates.append(.number("12")) }
        if !attribute.isOptional { candidates.append(.null) }
        if let range = attribute.type.integerRange, range.upperBound < Int64.max {
            candidates.append(.number(String(range.upperBound + 1)))
            candidates.append(.number(String(range.lowerBound - 1)))
        }
        if case .integer(let v)? = attribute.minValue, v > Int64.min { candidates.append(.number(String(v - 1))) }
        if case .integer(let v)? = attribute.maxValue, v < Int64.max { candidates.append(.number(String(v + 1))) }
        if let minLength = attribute.minLength, minLength > 0 { candidates.append(.string(String(repeating: "x", count: minLength - 1))) }
        if let maxLength = attribute.maxLength { candidates.append(.string(padded(owner, to: maxLength + 1))) }
        return pick(candidates)!
    }

    // MARK: Objects to point at

    /// The objects a request may point at, and how to write each (an ID, or a ref).
    struct Pool {
        var ids: [String: [RefID]] = [:]
        var names: [RefID: String] = [:]
        func name(_ id: RefID) -> String { names[id] ?? id.description }
    }

    func pool(_ store: ReferenceStore) -> Pool {
        var pool = Pool()
        for entity in schema.entityNames { pool.ids[entity] = store.ids(entity) }
        return pool
    }

    func pool(_ working: Working) -> Pool {
        var pool = Pool()
        for id in working.live.keys.sorted() where !id.isTemporary || working.refNames[id] != nil { pool.ids[id.entity, default: []].append(id) }
        pool.names = working.refNames
        return pool
    }

    /// An ID of `entity` that names no object: a deleted key, or one never handed out.
    mutating func missingID(_ entity: String, _ store: ReferenceStore) -> String {
        let live = Set(store.ids(entity).map(\.pk))
        let deleted = (seen[entity] ?? []).subtracting(live).sorted()
        if !deleted.isEmpty && chance(0.6) { return "\(entity)/\(pick(deleted)!)" }
        return "\(entity)/\(Int64(9_000_000_000) + Int64(int(0...1_000_000)))"
    }

    /// A valid value for a relationship, pointing into `pool`.
    mutating func relationshipValue(_ relationship: RelationshipDescription, _ pool: Pool) -> JSONValue {
        let candidates = destinations(relationship, pool)
        if relationship.isToMany {
            if chance(0.03) { return .null }  // the same as []
            var items = subset(candidates, max: 3).sorted().map { JSONValue.string(pool.name($0)) }
            if let first = items.first, chance(0.05) { items.append(first) }  // an ID twice: a set holds it once
            return .array(items)
        }
        guard let target = pick(candidates), chance(0.85) else { return .null }
        return .string(pool.name(target))
    }

    /// The objects of `pool` that `relationship` can hold: its destination's, or with
    /// sub-entities every kind's.
    func destinations(_ relationship: RelationshipDescription, _ pool: Pool) -> [RefID] {
        schema.kinds(relationship.destination).flatMap { pool.ids[$0] ?? [] }
    }

    /// A broken relationship value: a missing or deleted object, one of another entity, or a
    /// JSON value of the wrong kind.
    mutating func invalidRelationshipValue(_ relationship: RelationshipDescription, _ pool: Pool, _ store: ReferenceStore) -> JSONValue {
        let kinds = schema.kinds(relationship.destination)
        var bad: [JSONValue] = [.string(missingID(pick(kinds) ?? relationship.destination, store))]
        let others = schema.entityNames.filter { !kinds.contains($0) }.flatMap { pool.ids[$0] ?? [] }
        if let wrong = pick(others) { bad.append(.string(pool.name(wrong))) }
        let chosen = pick(bad)!
        if relationship.isToMany {
            if chance(0.15) { return .string(pool.name(destinations(relationship, pool).first ?? RefID(kinds.first ?? relationship.destination, 1))) }
            if chance(0.1) { return pick([.array([.null]), .array([.number("5")]), .object([])])! }
            let valid = subset(destinations(relationship, pool), max: 2).map { JSONValue.string(pool.name($0)) }
            return .array(valid + [chosen])
        }
        return chance(0.15) ? .number("7") : chosen
    }

    // MARK: Bodies

    /// A valid body for a new object: every required attribute, some optional ones, some relationships.
    mutating func insertValues(_ entity: String, _ pool: Pool) -> Values {
        var values: Values = []
        let e = schema.entity(entity)
        for attribute in e.attributes where !attribute.isOptional || attribute.defaultValue != .null && chance(0.3) || chance(0.5) {
            values.append((attribute.name, validValue(entity, attribute)))
        }
        for relationship in e.relationships where chance(0.4) {
            values.append((relationship.name, relationshipValue(relationship, pool)))
        }
        return values
    }

    /// Some valid changes to an existing object.
    mutating func updateValues(_ entity: String, _ pool: Pool, atLeastOne: Bool = true) -> Values {
        let e = schema.entity(entity)
        var values: Values = []
        for attribute in e.attributes where chance(0.35) { values.append((attribute.name, validValue(entity, attribute))) }
        for relationship in e.relationships where chance(0.3) { values.append((relationship.name, relationshipValue(relationship, pool))) }
        if values.isEmpty && atLeastOne, let attribute = pick(e.attributes) { values.append((attribute.name, validValue(entity, attribute))) }
        return values
    }

    /// Breaks one to three rules of a valid body (of every kind at once, sometimes).
    mutating func breakValues(_ values: Values, _ entity: String, _ pool: Pool, _ store: ReferenceStore, insert: Bool) -> Values {
        var result = values
        let e = schema.entity(entity)
        func set(_ key: String, _ value: JSONValue) {
            result.removeAll { $0.0 == key }
            result.append((key, value))
        }
        for _ in 0..<int(1...3) {
            switch int(0...3) {
            case 0, 1:
                if let attribute = pick(e.attributes) { set(attribute.name, invalidValue(attribute)) }
            case 2:
                if let relationship = pick(e.relationships) { set(relationship.name, invalidRelationshipValue(relationship, pool, store)) }
            default:
                if insert, let attribute = pick(e.attributes.filter { !$0.isOptional && $0.defaultValue.isNull }) {
                    result.removeAll { $0.0 == attribute.name }
                } else if let attribute = pick(e.attributes.filter { !$0.isOptional }) {
                    set(attribute.name, .null)
                }
            }
        }
        return result
    }

    /// A value of a unique attribute that another object already holds, if any.
    mutating func takenUniqueValue(_ entity: String, _ store: ReferenceStore, except: RefID? = nil) -> (String, JSONValue)? {
        let e = schema.entity(entity)
        guard let constraint = pick(e.uniquenessConstraints.filter { $0.count == 1 }), let attribute = e.attribute(named: constraint[0]) else { return nil }
        let holders = store.ids(entity).filter { $0 != except && store[$0]!.attributes[attribute.name] != .null }
        guard let holder = pick(holders) else { return nil }
        return (attribute.name, json(store[holder]!.attributes[attribute.name]!, attribute.type))
    }

    /// The JSON a client sends for a value.
    func json(_ value: RValue, _ type: AttributeType) -> JSONValue {
        switch value {
        case .null: return .null
        case .integer(let v): return .number(String(v))
        case .double(let v): return .number("\(v)")
        case .boolean(let b): return .bool(b)
        case .string(let s), .text(let s), .decimal(let s): return .string(s)
        case .date(let micros): return .string(RFC3339.string(from: Date(timeIntervalSince1970: Double(micros) / 1e6)))
        }
    }

    /// Relationship values that would change other objects (move them here), for a write that
    /// must fail anyway: the failure must leave them as they were.
    mutating func movingRelationships(_ entity: String, _ pool: Pool) -> Values {
        var values: Values = []
        for relationship in schema.entity(entity).relationships {
            let candidates = destinations(relationship, pool)
            guard !candidates.isEmpty else { continue }
            if relationship.isToMany {
                values.append((relationship.name, .array(subset(candidates, max: 3).sorted().map { .string(pool.name($0)) })))
            } else if let target = pick(candidates) {
                values.append((relationship.name, .string(pool.name(target))))
            }
        }
        return values
    }

    // MARK: Requests

    mutating func note(_ store: ReferenceStore) {
        for entity in schema.entityNames { seen[entity, default: []].formUnion(store.ids(entity).map(\.pk)) }
    }

    /// The next request and a short label of what it tests.
    mutating func next(_ store: ReferenceStore) -> (RefRequest, String) {
        note(store)
        // A follow-up was made for the state before the request it follows: one whose answer
        // the contract now leaves open (a unique value taken meanwhile beside a broken rule) is
        // dropped, and a fresh request made instead.
        while !followUps.isEmpty {
            let followUp = followUps.removeFirst()
            if case .ambiguous = store.predict(followUp.0).outcome { continue }
            return followUp
        }
        for _ in 0..<30 {
            let (request, label) = candidate(store)
            let prediction = store.predict(request)
            if case .ambiguous = prediction.outcome { continue }
            if prediction.working.crashesToday && !crashers { continue }
            if prediction.working.deniesInserted && relax.contains(.denyThroughRef) { continue }
            if prediction.working.denyEmptiedAfterDelete && relax.contains(.denyUnlinkAfter) { continue }
            return (request, label)
        }
        let entity = pick(schema.entityNames)!
        return (.insert(entity: entity, values: insertValues(entity, pool(store))), "insert")
    }

    private mutating func candidate(_ store: ReferenceStore) -> (RefRequest, String) {
        let entities = schema.entityNames
        let full = entities.filter { store.count($0) >= cap }
        let roomy = entities.filter { store.count($0) < cap }
        let populated = entities.filter { store.count($0) > 0 }
        let total = entities.reduce(0) { $0 + store.count($1) }
        let crowded = total > cap * entities.count / 2
        let p = pool(store)
        let roll = int(0...99)

        // Full entities shrink first: a deny relationship is emptied before the delete.
        if let entity = pick(full), chance(0.5) {
            return deleteRequest(entity, store, p, emptyDenyFirst: true)
        }
        switch roll {
        case 0..<22:
            guard let entity = pick(roomy) else { break }
            return (.insert(entity: entity, values: insertValues(entity, p)), "insert")
        case 22..<28:
            guard let entity = pick(entities) else { break }
            return (.insert(entity: entity, values: breakValues(insertValues(entity, p), entity, p, store, insert: true)), "insert, invalid")
        case 28..<31:
            guard let entity = pick(entities.filter { !schema.entity($0).uniquenessConstraints.isEmpty }),
                  let taken = takenUniqueValue(entity, store) else { break }
            var values = insertValues(entity, p).filter { $0.0 != taken.0 && schema.relationship(entity, $0.0) == nil }
            values.append(taken)
            values += movingRelationships(entity, p)
            return (.insert(entity: entity, values: values), "insert, taken unique value, moving others")
        case 31..<45, 45..<52:
            guard let entity = pick(populated), let id = pick(store.ids(entity)) else { break }
            let replace = roll >= 45
            var values = replace ? insertValues(entity, p) : updateValues(entity, p)
            var label = replace ? "PUT" : "PATCH"
            if chance(0.15) {
                values = breakValues(values, entity, p, store, insert: false)
                label += ", invalid"
            } else if chance(0.08), let taken = takenUniqueValue(entity, store, except: id) {
                values.removeAll { $0.0 == taken.0 }
                values.append(taken)
                values += movingRelationships(entity, p).filter { pair in !values.contains { $0.0 == pair.0 } }
                label += ", taken unique value"
            }
            let version: Int64? = chance(0.4) ? store[id]!.version : nil
            return (.update(id: id, values: values, replace: replace, version: version, versionInBody: chance(0.3)), label + (version != nil ? ", If-Match" : ""))
        case 52..<56:
            // A stale base version: 409, nothing written.
            let stale = populated.flatMap { store.ids($0) }.filter { store[$0]!.version > 1 }
            guard let id = pick(stale) else { break }
            let version = Int64(int(1...Int(store[id]!.version - 1)))
            if chance(0.3) { return (.delete(id: id, version: version), "DELETE, stale If-Match") }
            let replace = chance(0.3)
            var values = replace ? insertValues(id.entity, p) : updateValues(id.entity, p)
            if chance(0.3), let taken = takenUniqueValue(id.entity, store, except: id) {
                values.removeAll { $0.0 == taken.0 }
                values.append(taken)
            }
            return (.update(id: id, values: values, replace: replace, version: version, versionInBody: chance(0.3)), "\(replace ? "PUT" : "PATCH"), stale If-Match")
        case 56..<(crowded ? 72 : 64):
            guard let entity = pick(populated) else { break }
            return deleteRequest(entity, store, p, emptyDenyFirst: chance(0.3))
        case 72..<75, 64..<67:
            guard let entity = pick(entities) else { break }
            let missing = RefID(text: missingID(entity, store))!
            switch int(0...3) {
            case 0: return (.get(id: missing), "GET missing")
            case 1: return (.delete(id: missing, version: nil), "DELETE missing")
            default: return (.update(id: missing, values: updateValues(entity, p), replace: chance(0.5), version: nil, versionInBody: false), "PATCH/PUT missing")
            }
        default:
            return transaction(store)
        }
        guard let entity = pick(roomy) ?? pick(entities) else { preconditionFailure("a model without entities") }
        return (.insert(entity: entity, values: insertValues(entity, p)), "insert")
    }

    /// Deletes an object of `entity` (the highest key two times in five, followed by an insert
    /// of the same entity); with `emptyDenyFirst`, a transaction first removes it from the
    /// objects its deny relationships hold, so the delete is allowed.
    private mutating func deleteRequest(_ entity: String, _ store: ReferenceStore, _ p: Pool, emptyDenyFirst: Bool) -> (RefRequest, String) {
        let ids = store.ids(entity)
        guard let id = chance(0.4) ? ids.last : pick(ids) else { return (.get(id: RefID(entity, 1)), "GET") }
        let object = store[id]!
        let deny = schema.entity(entity).relationships.filter { $0.deleteRule == .deny }
        let holders = deny.flatMap { r in (r.isToMany ? Array(object.toMany[r.name] ?? []) : [object.toOne[r.name]].compactMap { $0 }).map { (r, $0) } }
        if emptyDenyFirst && !holders.isEmpty {
            var operations: [TxOp] = []
            for (relationship, holder) in holders {
                let inverse = schema.inverse(of: relationship)
                let value: JSONValue = inverse.isToMany
                    ? .array(store[holder]!.toMany[inverse.name]!.subtracting([id]).sorted().map { .string($0.description) })
                    : .null
                operations.append(.update(target: .id(holder), version: chance(0.5) ? store[holder]!.version : nil, values: [(inverse.name, value)]))
            }
            let delete = TxOp.delete(target: .id(id), version: chance(0.5) ? object.version : nil)
            // Deny is decided by the state the transaction ends in: emptying after the delete works too.
            if !relax.contains(.denyUnlinkAfter) && chance(0.4) {
                return (.transaction([delete] + operations), "transaction: delete, then empty its deny relationship")
            }
            return (.transaction(operations + [delete]), "transaction: empty deny relationship, then delete")
        }
        if id == ids.last && chance(0.8) {
            followUps.append((.insert(entity: entity, values: insertValues(entity, p)), "insert after deleting the highest key"))
        }
        return (.delete(id: id, version: chance(0.4) ? object.version : nil), id == ids.last ? "DELETE highest key" : "DELETE")
    }

    // MARK: Transactions

    private mutating func newRef() -> String {
        refSerial += 1
        return "r\(refSerial)"
    }

    private mutating func transaction(_ store: ReferenceStore) -> (RefRequest, String) {
        switch int(0...9) {
        case 0: if let t = denyThroughRef(store) { return t }
        case 1: if let t = takenUniqueInTransaction(store) { return t }
        case 2: if let t = cascadeInTransaction(store) { return t }
        case 3: if !relax.contains(.uniqueShuffle), let t = uniqueShuffle(store) { return t }
        default: break
        }
        return randomTransaction(store)
    }

    /// The working state after `operations` (what later operations may point at).
    private func scratch(_ store: ReferenceStore, _ operations: [TxOp]) -> Working {
        store.predict(.transaction(operations)).working
    }

    /// 2 to 6 operations: inserts with refs used by later ones, updates, deletes (of inserted
    /// objects too), a stale version or a broken value now and then.
    private mutating func randomTransaction(_ store: ReferenceStore) -> (RefRequest, String) {
        var operations: [TxOp] = []
        var labels: [String] = []
        let broken = chance(0.15)
        let stale = !broken && chance(0.1)
        for _ in 0..<int(2...6) {
            let w = scratch(store, operations)
            let p = pool(w)
            let live = p.ids.values.flatMap { $0 }
            switch int(0...9) {
            case 0..<4:
                let entity = pick(schema.entityNames.filter { (p.ids[$0]?.count ?? 0) < cap + 5 }) ?? pick(schema.entityNames)!
                operations.append(.insert(entity: entity, ref: newRef(), values: insertValues(entity, p)))
                labels.append("insert")
            case 4..<7:
                guard let id = pick(live) else { continue }
                var version: Int64?
                if !id.isTemporary, let v = store[id]?.version, chance(0.3) { version = stale && v > 1 ? v - 1 : v }
                let target: RefTarget = id.isTemporary ? .ref(w.refNames[id]!) : .id(id)
                operations.append(.update(target: target, version: version, values: updateValues(id.entity, p)))
                labels.append(id.isTemporary ? "update of a ref" : "update")
            default:
                // Deleting what was inserted earlier in this transaction is preferred, then anything.
                let inserted = live.filter(\.isTemporary)
                guard let id = chance(0.5) ? pick(inserted) ?? pick(live) : pick(live) else { continue }
                var version: Int64?
                if !id.isTemporary, let v = store[id]?.version, chance(0.3) { version = stale && v > 1 ? v - 1 : v }
                let target: RefTarget = id.isTemporary ? .ref(w.refNames[id]!) : .id(id)
                operations.append(.delete(target: target, version: version))
                labels.append(id.isTemporary ? "delete of a ref" : "delete")
            }
        }
        if broken, !operations.isEmpty {
            // One operation gets broken values (a missing, deleted or wrong-entity target among them).
            let index = int(0...(operations.count - 1))
            let p = pool(scratch(store, Array(operations[..<index])))
            switch operations[index] {
            case let .insert(entity, ref, values):
                operations[index] = .insert(entity: entity, ref: ref, values: breakValues(values, entity, p, store, insert: true))
                labels[index] += " (invalid)"
            case let .update(target, version, values):
                let entity: String
                switch target {
                case .id(let id): entity = id.entity
                case .ref(let name): entity = scratch(store, Array(operations[..<index])).refs[name]!.entity
                }
                operations[index] = .update(target: target, version: version, values: breakValues(values, entity, p, store, insert: false))
                labels[index] += " (invalid)"
            case .delete:
                break
            }
        }
        if chance(0.15), let (entity, pk) = deletedEarlier(store, operations) {
            // Point at an object the transaction deleted earlier (by its ID): invalid-relationship.
            let w = scratch(store, operations)
            if let relationship = schema.entityNames.flatMap({ schema.entity($0).relationships }).first(where: { schema.holds($0, entity) }),
               let owner = pick(schema.kinds(schema.inverse(of: relationship).destination).flatMap { pool(w).ids[$0] ?? [] }) {
                let value: JSONValue = relationship.isToMany ? .array([.string("\(entity)/\(pk)")]) : .string("\(entity)/\(pk)")
                let target: RefTarget = owner.isTemporary ? .ref(w.refNames[owner]!) : .id(owner)
                operations.append(.update(target: target, version: nil, values: [(relationship.name, value)]))
                labels.append("point at an object deleted earlier")
            }
        }
        if crashers, chance(0.1), let ref = scratch(store, operations).refs.first(where: { scratch(store, operations).dead[$0.value] != nil }),
           // (An entity no relationship points at cannot be pointed at.)
           let relationship = schema.entityNames.flatMap({ schema.entity($0).relationships }).first(where: { schema.holds($0, ref.value.entity) }),
           let holder = pick(schema.kinds(schema.inverse(of: relationship).destination)) {
            // Point at a ref deleted earlier: crashes today's server. (The holder is a concrete
            // kind of the entity that declares the relationship.)
            var values = insertValues(holder, pool(scratch(store, operations))).filter { $0.0 != relationship.name }
            values.append((relationship.name, relationship.isToMany ? .array([.string(ref.key)]) : .string(ref.key)))
            operations.append(.insert(entity: holder, ref: newRef(), values: values))
            labels.append("point at a ref deleted earlier")
        }
        return (.transaction(operations), "transaction: " + labels.joined(separator: ", "))
    }

    /// A saved object the operations delete (directly or by cascade), if any.
    private func deletedEarlier(_ store: ReferenceStore, _ operations: [TxOp]) -> (String, Int64)? {
        let w = scratch(store, operations)
        return w.dead.keys.filter { !$0.isTemporary }.sorted().first.map { ($0.entity, $0.pk) }
    }

    /// Insert X `a`, insert Y `b` linked to `a` through the inverse of X's deny relationship,
    /// delete `a`: 422 delete-denied naming `a` (never a temporary ID), nothing written. Now and
    /// then `b` is deleted too first, and then the delete is allowed.
    private mutating func denyThroughRef(_ store: ReferenceStore) -> (RefRequest, String)? {
        let denies = schema.entities.flatMap { e in e.relationships.filter { $0.deleteRule == .deny }.map { (e.name, $0) } }
        guard let (entity, relationship) = pick(denies) else { return nil }
        let inverse = schema.inverse(of: relationship)
        let p = pool(store)
        var operations: [TxOp] = []
        // Something valid first, which must not be written either.
        if let id = pick(p.ids.values.flatMap { $0 }), chance(0.7) {
            operations.append(.update(target: .id(id), version: nil, values: updateValues(id.entity, p)))
        }
        let a = newRef(), b = newRef()
        operations.append(.insert(entity: entity, ref: a, values: insertValues(entity, p).filter { $0.0 != relationship.name }))
        // A concrete kind of the destination (a parent entity may be abstract).
        let kind = pick(schema.kinds(relationship.destination)) ?? relationship.destination
        var values = insertValues(kind, p).filter { $0.0 != inverse.name }
        values.append((inverse.name, inverse.isToMany ? .array([.string(a)]) : .string(a)))
        operations.append(.insert(entity: kind, ref: b, values: values))
        let allowed = chance(0.2) || relax.contains(.denyThroughRef)
        if allowed { operations.append(.delete(target: .ref(b), version: nil)) }
        operations.append(.delete(target: .ref(a), version: nil))
        return (.transaction(operations), allowed ? "transaction: insert, link, delete the linker, delete (allowed)" : "transaction: deny reached through a ref")
    }

    /// Valid changes, then an insert with a unique value already taken and relationship values
    /// that would move other objects: 409, nothing written.
    private mutating func takenUniqueInTransaction(_ store: ReferenceStore) -> (RefRequest, String)? {
        guard let entity = pick(schema.entityNames.filter { !schema.entity($0).uniquenessConstraints.isEmpty }),
              let taken = takenUniqueValue(entity, store) else { return nil }
        let p = pool(store)
        var operations: [TxOp] = []
        for _ in 0..<int(1...2) {
            guard let id = pick(p.ids.values.flatMap { $0 }) else { break }
            operations.append(.update(target: .id(id), version: nil, values: updateValues(id.entity, p).filter { $0.0 != taken.0 }))
        }
        var values = insertValues(entity, p).filter { $0.0 != taken.0 && schema.relationship(entity, $0.0) == nil }
        values.append(taken)
        values += movingRelationships(entity, p)
        operations.append(.insert(entity: entity, ref: newRef(), values: values))
        return (.transaction(operations), "transaction: changes, then an insert of a taken unique value")
    }

    /// Unique values passed between objects in one transaction: a swap, or one object taking
    /// the value another gives up (in either order). The final state is valid: 200.
    private mutating func uniqueShuffle(_ store: ReferenceStore) -> (RefRequest, String)? {
        // Typed out: inferred, this expression took the compiler 1.5 s.
        let single: [(String, String)] = schema.entities.flatMap { e -> [(String, String)] in
            e.uniquenessConstraints.filter { $0.count == 1 }.map { (e.name, $0[0]) }
        }
        let candidates = single.filter { (entity: String, attribute: String) -> Bool in
            store.ids(entity).filter { (id: RefID) -> Bool in store[id]!.attributes[attribute] != RValue.null }.count >= 2
        }
        guard let (entity, attribute) = pick(candidates), let type = schema.attribute(entity, attribute)?.type else { return nil }
        let holders = store.ids(entity).filter { store[$0]!.attributes[attribute] != .null }
        let a = pick(holders)!
        let b = pick(holders.filter { $0 != a })!
        let valueA = json(store[a]!.attributes[attribute]!, type), valueB = json(store[b]!.attributes[attribute]!, type)
        if chance(0.5) {
            return (.transaction([.update(target: .id(a), version: nil, values: [(attribute, valueB)]),
                                  .update(target: .id(b), version: nil, values: [(attribute, valueA)])]),
                    "transaction: swap two unique values")
        }
        let fresh = validValue(entity, schema.attribute(entity, attribute)!)
        var operations: [TxOp] = [.update(target: .id(b), version: nil, values: [(attribute, valueA)]),
                                  .update(target: .id(a), version: nil, values: [(attribute, fresh)])]
        if chance(0.5) { operations.reverse() }
        return (.transaction(operations), "transaction: a unique value passed from one object to another")
    }

    /// Deletes an object whose cascade relationships hold objects, among other operations.
    private mutating func cascadeInTransaction(_ store: ReferenceStore) -> (RefRequest, String)? {
        let parents = schema.entityNames.flatMap { store.ids($0) }.filter { id in
            schema.entity(id.entity).relationships.contains { $0.deleteRule == .cascade && $0.isToMany && !(store[id]!.toMany[$0.name] ?? []).isEmpty }
        }
        guard let parent = pick(parents) else { return nil }
        let p = pool(store)
        var operations: [TxOp] = []
        let entity = pick(schema.entityNames)!
        operations.append(.insert(entity: entity, ref: newRef(), values: insertValues(entity, p)))
        operations.append(.delete(target: .id(parent), version: chance(0.5) ? store[parent]!.version : nil))
        return (.transaction(operations), "transaction: insert, delete with cascade")
    }
}
