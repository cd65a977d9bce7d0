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
public struct ValidationError: Error, Sendable, Hashable, CustomStringConvertible {
    public let objectID: ManagedObjectID
    public let property: String?
    public let code: ValidationErrorCode
    public let message: String

    public init(objectID: ManagedObjectID, property: String?, code: ValidationErrorCode, message: String) {
        self.objectID = objectID
        self.property = property
        self.code = code
        self.message = message
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
