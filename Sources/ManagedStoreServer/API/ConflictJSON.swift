import ManagedStoreCore

/// The one mapping from the library's conflict records to what a client reads: the 409 body,
/// the `resolved` list of a transaction and the `Merge-Conflicts` header.
struct ConflictJSON {
    let model: ManagedObjectModel
    /// How the request names objects (its refs for objects it inserts).
    let names: ObjectNames

    /// The properties to report as conflicting: R ∩ C, with R what the request set (a value
    /// equal to the store's counts: the client set it) and C what the store changed after the
    /// base version; all of R when C is not known.
    func properties(_ conflict: MergeConflict) -> [String] {
        let requested = names.propertiesSet(on: conflict.objectID)
        let set = requested.isEmpty ? conflict.changedProperties : requested
        return (conflict.storeChangedProperties.map { set.intersection($0) } ?? set).sorted()
    }

    /// An optimistic-locking conflict as the contract writes it; snapshots as objects (`_id`,
    /// `_version`, properties in the entity's order).
    func json(_ conflict: MergeConflict) -> JSONValue {
        .object([
            ("kind", .string("optimistic-locking")), ("object", .string(conflict.objectID.description)),
            ("oldVersion", .number(String(conflict.oldVersion))), ("newVersion", .number(String(conflict.newVersion))),
            ("properties", .array(properties(conflict).map(JSONValue.string))),
            ("cachedSnapshot", snapshot(conflict.cachedSnapshot, of: conflict.objectID, version: conflict.oldVersion)),
            ("persistedSnapshot", snapshot(conflict.persistedSnapshot, of: conflict.objectID, version: conflict.newVersion)),
            ("objectSnapshot", snapshot(conflict.objectSnapshot, of: conflict.objectID, version: conflict.newVersion)),
        ])
    }

    /// A uniqueness conflict as the contract writes it.
    func json(_ conflict: ConstraintConflict) -> JSONValue {
        .object([
            ("kind", .string("uniqueness")), ("entity", .string(conflict.entityName)),
            ("constraint", .array(conflict.constraint.map(JSONValue.string))),
            ("values", .object(conflict.constraint.compactMap { name in conflict.values[name].map { (name, $0.jsonValue) } })),
            ("conflictingObjects", .array(conflict.conflictingObjects.map { .string($0.description) })),
        ])
    }

    /// A conflict the merge policy resolved.
    func json(_ resolved: ResolvedConflict, policy: MergePolicy) -> JSONValue {
        var members: [(String, JSONValue)]
        switch resolved {
        case .optimisticLocking(let conflict):
            guard case .object(let m) = json(conflict) else { return .null }
            members = m
        case let .uniqueness(conflict, survivor, _):
            guard case .object(let m) = json(conflict) else { return .null }
            members = m + [("object", .string(survivor.description))]
        }
        return .object(members + [("policy", .string(policy.name))])
    }

    /// 409: every conflict of the write; nothing was written.
    func problem(_ merge: [MergeConflict], _ constraints: [ConstraintConflict]) -> Problem {
        let conflicts = merge.map(json) + constraints.map(json)
        return Problem(status: 409, code: "conflict", title: "Conflict",
                       detail: "\(conflicts.count) conflict\(conflicts.count == 1 ? "" : "s"); nothing was written",
                       extra: [("conflicts", .array(conflicts))])
    }

    /// `Merge-Conflicts`: the properties of the resolved conflicts (R ∩ C), comma-separated.
    func header(_ resolved: [ResolvedConflict]) -> String {
        var names: [String] = []
        for conflict in resolved {
            switch conflict {
            case .optimisticLocking(let c): names += properties(c)
            case .uniqueness(let c, _, _): names += c.constraint
            }
        }
        var seen: Set<String> = []
        return names.filter { seen.insert($0).inserted }.joined(separator: ", ")
    }

    /// A snapshot as an object's JSON; null for none.
    private func snapshot(_ snapshot: ObjectSnapshot?, of id: ManagedObjectID, version: Int64) -> JSONValue {
        guard let snapshot, let entity = model.entity(named: id.entityName) else { return .null }
        var members: [(String, JSONValue)] = [("_id", .string(id.description)), ("_version", .number(String(version)))]
        for attribute in entity.attributes {
            if case .attribute(let value)? = snapshot[attribute.name] { members.append((attribute.name, value.jsonValue)) }
        }
        for relationship in entity.relationships {
            switch snapshot[relationship.name] {
            case .object(let target)?: members.append((relationship.name, target.map { .string(names.name($0)) } ?? .null))
            case .objects(let targets)?: members.append((relationship.name, .array(targets.map { .string(names.name($0)) })))
            default: continue
            }
        }
        return .object(members)
    }
}
