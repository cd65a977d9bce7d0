/// The reason code of a validation error, after Core Data's (the API's `code` strings).
public enum ValidationErrorCode: String, Sendable, Hashable, CaseIterable {
    case missingMandatoryProperty = "missing-mandatory-property"
    case tooSmall = "too-small"
    case tooLarge = "too-large"
    case tooShort = "too-short"
    case tooLong = "too-long"
    case patternMismatch = "pattern-mismatch"
    case invalidType = "invalid-type"
    case deleteDenied = "delete-denied"
    case invalidRelationship = "invalid-relationship"
}

/// One broken rule on one object [NSValidationError].
///
/// Rules about other objects (a `deny` relationship that still holds some, a destination that
/// does not exist) keep those objects as IDs, not only as text: `relatedObjects` lists them,
/// and `message(describing:)` writes the message with names of the caller's choosing. An
/// object inserted in the failed save has only a temporary ID, which names nothing outside
/// its context: a caller that knows it by another name (a name the caller gave the insert) uses that name.
public struct ValidationError: Error, Sendable, Hashable, CustomStringConvertible {
    public let objectID: ManagedObjectID
    public let property: String?
    public let code: ValidationErrorCode
    let detail: Detail

    /// What the message says, with any objects it names kept as IDs.
    enum Detail: Sendable, Hashable {
        case text(String)
        /// `relationship` still holds `remaining` (delete rule deny).
        case stillHolds(relationship: String, remaining: [ManagedObjectID])
        /// `relationship` points at `target`, which does not exist (or was deleted).
        case missingDestination(relationship: String, target: ManagedObjectID, deleted: Bool)
        /// `relationship` holds `expected` objects, and `target` is of another entity.
        case wrongEntity(relationship: String, target: ManagedObjectID, expected: String)
    }

    public init(objectID: ManagedObjectID, property: String?, code: ValidationErrorCode, message: String) {
        self.init(objectID: objectID, property: property, code: code, detail: .text(message))
    }

    init(objectID: ManagedObjectID, property: String?, code: ValidationErrorCode, detail: Detail) {
        self.objectID = objectID
        self.property = property
        self.code = code
        self.detail = detail
    }

    /// A destination of `relationship` that does not exist, was deleted, or is of the wrong entity.
    public static func invalidDestination(of owner: ManagedObjectID, _ relationship: String, target: ManagedObjectID,
                                          deleted: Bool = false) -> ValidationError {
        ValidationError(objectID: owner, property: relationship, code: .invalidRelationship,
                        detail: .missingDestination(relationship: relationship, target: target, deleted: deleted))
    }

    /// A destination of `relationship` (which holds `expected` objects) of another entity.
    public static func wrongEntity(of owner: ManagedObjectID, _ relationship: String, target: ManagedObjectID,
                                   expected: String) -> ValidationError {
        ValidationError(objectID: owner, property: relationship, code: .invalidRelationship,
                        detail: .wrongEntity(relationship: relationship, target: target, expected: expected))
    }

    /// The message, naming objects by their IDs.
    public var message: String { message(describing: \.description) }

    /// The message, naming each object it mentions with `name`.
    public func message(describing name: (ManagedObjectID) -> String) -> String {
        switch detail {
        case .text(let text):
            return text
        case let .stillHolds(relationship, remaining):
            return "cannot delete: \(relationship) still holds \(remaining.map(name).joined(separator: ", ")) (delete rule deny)"
        case let .missingDestination(relationship, target, deleted):
            return "\(relationship) points at \(name(target)), which \(deleted ? "is deleted" : "does not exist")"
        case let .wrongEntity(relationship, target, expected):
            return "\(relationship) holds \(expected) objects; \(name(target)) is a \(target.entityName)"
        }
    }

    /// The objects the message mentions besides `objectID`.
    public var relatedObjects: [ManagedObjectID] {
        switch detail {
        case .text: return []
        case .stillHolds(_, let remaining): return remaining
        case .missingDestination(_, let target, _), .wrongEntity(_, let target, _): return [target]
        }
    }

    public var description: String {
        "\(objectID)\(property.map { ".\($0)" } ?? ""): \(code.rawValue): \(message)"
    }
}

/// Why `save()` failed. In every case nothing was written and the context keeps its changes.
public enum SaveError: Error, Sendable, CustomStringConvertible {
    /// Every validation error of every object in the save [NSDetailedErrorsKey].
    case validation([ValidationError])
    /// Optimistic-locking conflicts and uniqueness violations, all of them [NSMergeConflict,
    /// NSConstraintConflict]; the error merge policy refuses the save.
    case conflict(mergeConflicts: [MergeConflict], constraintConflicts: [ConstraintConflict])
    /// The store failed underneath (I/O, disk full, a busy store past its timeout).
    case store(StoreError)
    /// A save under an idempotency key that an earlier save used with another fingerprint
    /// (`save(idempotencyKey:fingerprint:mergePolicy:)`).
    case idempotencyKeyReused(IdempotencyKey)
    /// `save(idempotencyKey:fingerprint:mergePolicy:)` on a child context, whose save reaches
    /// only its parent: the key would be recorded before anything reached the store. Nothing
    /// was saved; save the parent under the key.
    case idempotencyKeyInChildContext

    public var description: String {
        switch self {
        case .validation(let errors):
            return "validation failed: " + errors.map(\.description).joined(separator: "; ")
        case let .conflict(merge, constraints):
            let m = merge.map { "\($0.objectID) changed in the store (version \($0.oldVersion) -> \($0.newVersion))" }
            let c = constraints.map { "\($0.entityName) \($0.constraint) not unique: \($0.values.mapValues { $0.anyValue ?? "nil" })" }
            return "conflict: " + (m + c).joined(separator: "; ")
        case .store(let error):
            return error.description
        case .idempotencyKeyReused(let key):
            return "the idempotency key \(key) was used before for another save"
        case .idempotencyKeyInChildContext:
            return "a child context cannot save under an idempotency key: its save reaches only its parent; save the parent under the key"
        }
    }
}

/// Errors of context operations other than save.
public enum ContextError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No object with this ID exists in the store (or it was deleted).
    case objectNotFound(ManagedObjectID)
    /// The ID belongs to another store or names an entity this model does not have.
    case foreignObjectID(ManagedObjectID)
    case store(StoreError)

    public var description: String {
        switch self {
        case .objectNotFound(let id): return "no object \(id) in the store"
        case .foreignObjectID(let id): return "\(id) is not an object ID of this store and model"
        case .store(let e): return e.description
        }
    }
}
