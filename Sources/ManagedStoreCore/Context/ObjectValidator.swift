import Foundation

/// Checks objects against the rules of their model before a save [validateForInsert/Update/Delete].
///
/// Returns every broken rule of every object, so a client fixes them all in one round.
struct ObjectValidator {
    let context: ManagedObjectContext
    /// The store, when it cannot keep some values of the contract (`PersistentStore.refusals`);
    /// asked once per save, not per object.
    private let refusingStore: (any PersistentStore)?

    init(context: ManagedObjectContext) {
        self.context = context
        let store = context.coordinator.store
        refusingStore = store.refusesSomeValues ? store : nil
    }

    func validateForSave(_ object: ManagedObject) -> [ValidationError] {
        var errors: [ValidationError] = []
        let entity = object.entity
        // By index: binding each description to a variable would copy it (and retain its
        // strings) for every object of a bulk save.
        for index in entity.attributes.indices {
            if let error = validate(object.attributes[index], entity, index, object.objectID) { errors.append(error) }
        }
        for index in entity.relationships.indices {
            validateRelationship(index, of: object, into: &errors)
        }
        if let store = refusingStore {
            // What the store cannot keep, where no rule of the model already refused the value.
            for refusal in store.refusals(of: object.attributes, entity: entity) {
                let name = entity.attributes[refusal.attribute].name
                guard !errors.contains(where: { $0.property == name }) else { continue }
                errors.append(ValidationError(objectID: object.objectID, property: name, code: refusal.code, message: refusal.message))
            }
        }
        return errors
    }

    /// A deleted object: its `deny` relationships must be empty (destinations deleted too excepted).
    func validateForDelete(_ object: ManagedObject) -> [ValidationError] {
        object.entity.relationships.compactMap { relationship in
            guard relationship.description.deleteRule == .deny else { return nil }
            let targets = relationship.isToMany ? Array(context.toManyValue(of: object, relationship.index))
                : context.toOneValue(of: object, relationship.index).map { [$0] } ?? []
            let remaining = targets.filter { context.lookup($0)?.isDeleted != true }
            guard !remaining.isEmpty else { return nil }
            return ValidationError(objectID: object.objectID, property: relationship.name, code: .deleteDenied,
                                   detail: .stillHolds(relationship: relationship.name, remaining: remaining.sortedByKey()))
        }
    }

    private func validateRelationship(_ index: Int, of object: ManagedObject, into errors: inout [ValidationError]) {
        let entity = object.entity
        let targets: [ManagedObjectID]
        // Fields are read through the array, not from a copy of the relationship: this runs
        // for every relationship of every object saved.
        switch object.relationships[index] {
        case .unloaded:
            if !entity.relationships[index].isToMany && !entity.relationships[index].description.isOptional {
                targets = context.toOneValue(of: object, index).map { [$0] } ?? []
            } else {
                return  // never read, so never changed by this context
            }
        case .toOne(nil) where entity.relationships[index].description.isOptional:
            return  // nothing to check: the common case of a new object
        case .toMany(let ids) where ids.isEmpty:
            // Nothing to check but a minimum count: the common case of a new object.
            if entity.hasCountRules, let error = countError(entity.relationships[index], 0, object.objectID) { errors.append(error) }
            return
        case .toOne(let id): targets = id.map { [$0] } ?? []
        case .toMany(let ids): targets = Array(ids)
        }
        let relationship = entity.relationships[index]
        if !relationship.isToMany && !relationship.description.isOptional && targets.isEmpty {
            errors.append(ValidationError(objectID: object.objectID, property: relationship.name, code: .missingMandatoryProperty,
                                          message: "\(relationship.name) is required"))
        }
        if relationship.description.hasCountRule, let error = countError(relationship, targets.count, object.objectID) {
            errors.append(error)
        }
        // A destination deleted although its side denies that (delete rule deny) gets its own
        // delete-denied error; saying here too that it is deleted would only repeat it.
        let destinationDenies = relationship.inverseIndex.map {
            context.coordinator.model.schema[relationship.destinationIndex].relationships[$0].description.deleteRule == .deny
        } ?? false
        for target in targets where context.lookup(target)?.isDeleted == true && !destinationDenies {
            errors.append(.invalidDestination(of: object.objectID, relationship.name, target: target, deleted: true))
        }
    }

    /// A to-many holding fewer or more destinations than its count rule allows
    /// [NSValidationRelationshipLacksMinimumCountError, ...ExceedsMaximumCountError].
    private func countError(_ relationship: Relationship, _ count: Int, _ id: ManagedObjectID) -> ValidationError? {
        let rule = relationship.description
        let plural = { (n: Int) in n == 1 ? "1 object" : "\(n) objects" }
        if let least = rule.minCount, count < least {
            return ValidationError(objectID: id, property: rule.name, code: .tooSmall,
                                   message: "\(rule.name) must hold at least \(plural(least)); it holds \(count)")
        }
        if let most = rule.maxCount, count > most {
            return ValidationError(objectID: id, property: rule.name, code: .tooLarge,
                                   message: "\(rule.name) may hold at most \(plural(most)); it holds \(count)")
        }
        return nil
    }

    /// An object changed only through inverse maintenance (a destination joined or left one of
    /// its to-many relationships): its count rules still apply.
    func validateCounts(_ object: ManagedObject) -> [ValidationError] {
        object.entity.relationships.compactMap { relationship in
            guard relationship.description.hasCountRule, case .toMany(let ids) = object.relationships[relationship.index] else { return nil }
            return countError(relationship, ids.count, object.objectID)
        }
    }

    private func validate(_ value: AttributeValue, _ entity: Entity, _ index: Int, _ id: ManagedObjectID) -> ValidationError? {
        if value.isNull {
            if entity.attributes[index].isOptional { return nil }
        } else if value.fits(entity.attributes[index].type) && !entity.attributeHasRules[index] {
            switch value {
            case .double(let d) where !d.isFinite: break
            case .float(let f) where !f.isFinite: break
            case .decimal(let d) where d.isNaN: break
            default: return nil  // the common case, decided without copying the description
            }
        }
        return validate(value, entity.attributes[index], id)
    }

    private func validate(_ value: AttributeValue, _ attribute: AttributeDescription, _ id: ManagedObjectID) -> ValidationError? {
        func error(_ code: ValidationErrorCode, _ message: String) -> ValidationError {
            ValidationError(objectID: id, property: attribute.name, code: code, message: message)
        }
        if value.isNull {
            return attribute.isOptional ? nil : error(.missingMandatoryProperty, "\(attribute.name) is required")
        }
        if !value.fits(attribute.type) {
            if case .integer(let v) = value, let range = attribute.type.integerRange {
                return v < range.lowerBound
                    ? error(.tooSmall, "\(v) is below the range of \(attribute.type.rawValue) (\(range.lowerBound))")
                    : error(.tooLarge, "\(v) is above the range of \(attribute.type.rawValue) (\(range.upperBound))")
            }
            return error(.invalidType, "expected a \(attribute.type.rawValue), got a \(value.kindName)")
        }
        // SQLite stores NaN as NULL, and JSON has no NaN or infinity: refuse them rather than lose them.
        // A decimal NaN has no place in the stored order either (DecimalStorage).
        switch value {
        case .double(let d) where !d.isFinite: return error(.invalidType, "\(d) is not a finite number")
        case .float(let f) where !f.isFinite: return error(.invalidType, "\(f) is not a finite number")
        case .decimal(let d) where d.isNaN: return error(.invalidType, "NaN is not a number")
        default: break
        }
        if let min = attribute.minValue, AttributeValue.compare(value, min) == .orderedAscending {
            return error(.tooSmall, "\(describe(value)) is less than the minimum \(describe(min))")
        }
        if let max = attribute.maxValue, AttributeValue.compare(value, max) == .orderedDescending {
            return error(.tooLarge, "\(describe(value)) is greater than the maximum \(describe(max))")
        }
        guard case .string(let text) = value else { return nil }
        if attribute.minLength != nil || attribute.maxLength != nil {
            let length = text.count  // grapheme clusters, as the contract says; a walk, so only when a rule asks
            if let minLength = attribute.minLength, length < minLength {
                return error(.tooShort, "\(length) characters, at least \(minLength) required")
            }
            if let maxLength = attribute.maxLength, length > maxLength {
                return error(.tooLong, "\(length) characters, at most \(maxLength) allowed")
            }
        }
        if let pattern = attribute.pattern, !matchesWhole(text, pattern) {
            return error(.patternMismatch, "does not match the pattern \(pattern)")
        }
        return nil
    }

    private func describe(_ value: AttributeValue) -> String {
        if case .date(let d) = value { return RFC3339.string(from: d) }
        return value.anyValue.map { "\($0)" } ?? "null"
    }

    /// The pattern must match the whole string, not a part of it.
    private func matchesWhole(_ text: String, _ pattern: String) -> Bool {
        WholeStringRegex.shared.matchesWhole(text, pattern: pattern)
    }
}
