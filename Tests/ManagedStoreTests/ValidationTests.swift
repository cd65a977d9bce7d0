import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite

/// Every validation rule, checked through a real save on an in-memory store.
@Suite("Validation on save")
struct ValidationTests {
    // MARK: Model and helpers

    static let minDate = RFC3339.date(from: "2020-01-01T00:00:00Z")!
    static let maxDate = RFC3339.date(from: "2030-01-01T00:00:00Z")!

    static let model: ManagedObjectModel = {
        do {
            return try ManagedObjectModel(name: "Validation", entities: [
                EntityDescription(name: "Sample", attributes: [
                    AttributeDescription(name: "name", type: .string, isOptional: false),
                    AttributeDescription(name: "code", type: .string, minLength: 2, maxLength: 3),
                    AttributeDescription(name: "slug", type: .string, pattern: "[a-z]+"),
                    AttributeDescription(name: "kind", type: .string, pattern: "cat|dog"),
                    AttributeDescription(name: "count", type: .integer64, minValue: .integer(0), maxValue: .integer(10)),
                    AttributeDescription(name: "ratio", type: .double, minValue: .double(0), maxValue: .double(1)),
                    AttributeDescription(name: "amount", type: .decimal, minValue: .decimal(0), maxValue: .decimal(Decimal(string: "100.5")!)),
                    AttributeDescription(name: "when", type: .date, minValue: .date(minDate), maxValue: .date(maxDate)),
                    AttributeDescription(name: "small", type: .integer16),
                    AttributeDescription(name: "medium", type: .integer32),
                ]),
                EntityDescription(name: "Owner", attributes: [AttributeDescription(name: "name", type: .string)], relationships: [
                    RelationshipDescription(name: "pets", destination: "Pet", inverse: "owner", isToMany: true, deleteRule: .deny),
                    RelationshipDescription(name: "notes", destination: "Note", inverse: "owner", isToMany: true, deleteRule: .noAction),
                ]),
                EntityDescription(name: "Pet", attributes: [AttributeDescription(name: "name", type: .string)], relationships: [
                    RelationshipDescription(name: "owner", destination: "Owner", inverse: "pets", deleteRule: .nullify, isOptional: false),
                ]),
                EntityDescription(name: "Note", attributes: [AttributeDescription(name: "title", type: .string)], relationships: [
                    RelationshipDescription(name: "owner", destination: "Owner", inverse: "notes", deleteRule: .nullify),
                ]),
            ])
        } catch {
            fatalError("the validation test model is invalid: \(error)")
        }
    }()

    static func makeContainer() throws -> PersistentContainer {
        try Fixtures.container(model: model)
    }

    /// One broken rule, in a form that compares.
    struct Broken: Hashable, CustomStringConvertible {
        let id: ManagedObjectID
        let property: String?
        let code: ValidationErrorCode
        init(_ id: ManagedObjectID, _ property: String?, _ code: ValidationErrorCode) {
            self.id = id
            self.property = property
            self.code = code
        }
        var description: String { "\(id).\(property ?? "-"): \(code.rawValue)" }
    }

    /// Saves `context` (on its queue) and returns the validation errors the save must throw.
    static func failingSave(_ context: ManagedObjectContext, sourceLocation: SourceLocation = #_sourceLocation) -> [ValidationError] {
        context.performAndWait {
            do {
                try context.save()
                Issue.record("the save succeeded but should have failed validation", sourceLocation: sourceLocation)
                return []
            } catch {
                guard case SaveError.validation(let errors) = error else {
                    Issue.record("expected SaveError.validation, got \(error)", sourceLocation: sourceLocation)
                    return []
                }
                return errors
            }
        }
    }

    static func broken(_ errors: [ValidationError]) -> Set<Broken> {
        Set(errors.map { Broken($0.objectID, $0.property, $0.code) })
    }

    /// How many objects of `entity` are saved, as another context sees the store.
    static func storedCount(_ container: PersistentContainer, _ entity: String) throws -> Int {
        let reader = container.newBackgroundContext(name: "reader")
        return try reader.performAndWait {
            try reader.count(for: FetchRequest(entityName: entity, includesPendingChanges: false))
        }
    }

    /// Inserts a Sample that breaks no rule.
    static func insertValidSample(_ context: ManagedObjectContext, name: String = "valid") -> ManagedObject {
        let sample = context.insertNewObject(forEntityName: "Sample")
        sample.setValue(name, forKey: "name")
        return sample
    }

    /// Saves an owner with one pet and one note; returns their IDs.
    static func seedOwner(_ container: PersistentContainer) throws -> (owner: ManagedObjectID, pet: ManagedObjectID, note: ManagedObjectID) {
        let context = container.newBackgroundContext(name: "seed")
        return try context.performAndWait {
            let owner = context.insertNewObject(forEntityName: "Owner")
            owner.setValue("Ann", forKey: "name")
            let pet = context.insertNewObject(forEntityName: "Pet")
            pet.setValue("Rex", forKey: "name")
            pet.setObject(owner, forKey: "owner")
            let note = context.insertNewObject(forEntityName: "Note")
            note.setValue("remember", forKey: "title")
            note.setObject(owner, forKey: "owner")
            try context.save()
            return (owner.objectID, pet.objectID, note.objectID)
        }
    }

    // MARK: The contract's codes

    @Test("validation codes are the contract's strings")
    func codesMatchContract() {
        #expect(ValidationErrorCode.allCases.map(\.rawValue) == [
            "missing-mandatory-property", "too-small", "too-large", "too-short", "too-long",
            "pattern-mismatch", "invalid-type", "delete-denied", "invalid-relationship",
        ])
    }

    // MARK: Values that pass

    @Test("values on every boundary save")
    func boundaryValuesSave() throws {
        let container = try Self.makeContainer()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let low = Self.insertValidSample(context, name: "low")
            low.setValue("ab", forKey: "code")
            low.setValue("a", forKey: "slug")
            low.setValue("cat", forKey: "kind")
            low.setValue(Int64(0), forKey: "count")
            low.setValue(0.0, forKey: "ratio")
            low.setValue(Decimal(0), forKey: "amount")
            low.setValue(Self.minDate, forKey: "when")
            low.setValue(Int16.min, forKey: "small")
            low.setValue(Int32.min, forKey: "medium")
            let high = Self.insertValidSample(context, name: "high")
            high.setValue("abc", forKey: "code")
            high.setValue("zzz", forKey: "slug")
            high.setValue("dog", forKey: "kind")
            high.setValue(Int64(10), forKey: "count")
            high.setValue(1.0, forKey: "ratio")
            high.setValue(Decimal(string: "100.5")!, forKey: "amount")
            high.setValue(Self.maxDate, forKey: "when")
            high.setAttributeValue(.integer(Int64(Int16.max)), forKey: "small")
            high.setAttributeValue(.integer(Int64(Int32.max)), forKey: "medium")
            // Every optional attribute left null.
            _ = Self.insertValidSample(context, name: "nulls")
            try context.save()
        }
        #expect(try Self.storedCount(container, "Sample") == 3)
    }

    // MARK: One rule at a time

    @Test("a non-optional attribute left null is missing-mandatory-property")
    func missingMandatoryAttribute() throws {
        let container = try Self.makeContainer()
        let context = container.newBackgroundContext()
        let id = context.performAndWait { context.insertNewObject(forEntityName: "Sample").objectID }
        let errors = Self.failingSave(context)
        #expect(Self.broken(errors) == [Broken(id, "name", .missingMandatoryProperty)])
        #expect(errors.count == 1)
    }

    @Test("setting a non-optional attribute back to null is missing-mandatory-property")
    func mandatoryAttributeClearedOnUpdate() throws {
        let container = try Self.makeContainer()
        let context = container.newBackgroundContext()
        let id = try context.performAndWait {
            let sample = Self.insertValidSample(context)
            try context.save()
            sample.setAttributeValue(.null, forKey: "name")
            return sample.objectID
        }
        #expect(id.isTemporaryID == false)
        #expect(Self.broken(Self.failingSave(context)) == [Broken(id, "name", .missingMandatoryProperty)])
    }

    @Test("minLength and maxLength count grapheme clusters, not bytes or scalars")
    func lengthsCountCharacters() throws {
        let container = try Self.makeContainer()
        let context = container.newBackgroundContext()
        let family = "👨‍👩‍👧"          // 1 character, 5 scalars, 18 bytes
        let eAcute = "e\u{301}"   // 1 character, 2 scalars
        let cases: [(String, ValidationErrorCode?)] = [
            (family, .tooShort),
            (eAcute, .tooShort),
            ("a", .tooShort),
            ("", .tooShort),
            ("abcd", .tooLong),
            (eAcute + eAcute + eAcute + eAcute, .tooLong),
            (family + family, nil),
            (family + family + family, nil),
            (eAcute + eAcute, nil),
            (eAcute + eAcute + eAcute, nil),
            ("👍🏽👍🏽👍🏽", nil),
            ("🇫🇷🇩🇪", nil),
            ("abc", nil),
        ]
        let ids = context.performAndWait {
            cases.map { text, _ in
                let sample = Self.insertValidSample(context)
                sample.setValue(text, forKey: "code")
                return sample.objectID
            }
        }
        let expected = Set(zip(ids, cases).compactMap { id, c in c.1.map { Broken(id, "code", $0) } })
        let errors = Self.failingSave(context)
        #expect(Self.broken(errors) == expected)
        #expect(errors.count == expected.count)
    }

    @Test("a pattern must match the whole string", arguments: [
        ("abc", true), ("abc1", false), ("1abc", false), ("ab c", false), ("abc\n", false), ("\nabc", false), ("", false), ("ABC", false),
    ])
    func patternMatchesWholeString(_ text: String, _ matches: Bool) throws {
        let container = try Self.makeContainer()
        let context = container.newBackgroundContext()
        let id = context.performAndWait {
            let sample = Self.insertValidSample(context)
            sample.setValue(text, forKey: "slug")
            return sample.objectID
        }
        if matches {
            try context.performAndWait { try context.save() }
            #expect(try Self.storedCount(container, "Sample") == 1)
        } else {
            #expect(Self.broken(Self.failingSave(context)) == [Broken(id, "slug", .patternMismatch)])
        }
    }

    @Test("an alternation pattern is anchored as a whole, not per branch", arguments: [
        ("cat", true), ("dog", true), ("catfish", false), ("hotdog", false), ("catdog", false), ("cat|dog", false),
    ])
    func alternationPatternIsAnchored(_ text: String, _ matches: Bool) throws {
        let container = try Self.makeContainer()
        let context = container.newBackgroundContext()
        let id = context.performAndWait {
            let sample = Self.insertValidSample(context)
            sample.setValue(text, forKey: "kind")
            return sample.objectID
        }
        if matches {
            try context.performAndWait { try context.save() }
        } else {
            #expect(Self.broken(Self.failingSave(context)) == [Broken(id, "kind", .patternMismatch)])
        }
    }

    static let patternModel: ManagedObjectModel = {
        do {
            return try ManagedObjectModel(name: "Patterns", entities: [
                EntityDescription(name: "Coded", attributes: [
                    AttributeDescription(name: "caseless", type: .string, pattern: "(?i)[a-z]+"),
                    AttributeDescription(name: "commented", type: .string, pattern: "(?x) [a-z]+   # lower-case letters only"),
                    AttributeDescription(name: "quoted", type: .string, pattern: "\\Qa.b"),
                    AttributeDescription(name: "anchored", type: .string, pattern: "^[a-z]+$"),
                    AttributeDescription(name: "lazy", type: .string, pattern: "a+?"),
                    AttributeDescription(name: "prefixes", type: .string, pattern: "cat|catfish"),
                ]),
            ])
        } catch {
            fatalError("the pattern test model is invalid: \(error)")
        }
    }()

    @Test("any valid pattern matches the whole string, whatever its flags, quoting or alternatives", arguments: [
        ("caseless", "ABC", true), ("caseless", "AB1", false),
        ("commented", "abc", true), ("commented", "ab1", false),
        ("quoted", "a.b", true), ("quoted", "axb", false),
        ("anchored", "abc", true), ("anchored", "ab1", false),
        ("lazy", "aaa", true), ("lazy", "aab", false),
        ("prefixes", "catfish", true), ("prefixes", "catfishes", false),
    ])
    func patternsOfEveryKindMatchWholeString(_ key: String, _ text: String, _ matches: Bool) throws {
        let container = try Fixtures.container(model: Self.patternModel)
        let context = container.newBackgroundContext()
        let id = context.performAndWait {
            let object = context.insertNewObject(forEntityName: "Coded")
            object.setValue(text, forKey: key)
            return object.objectID
        }
        if matches {
            context.performAndWait {
                #expect(throws: Never.self, "\(key) should accept \(text)") { try context.save() }
            }
        } else {
            #expect(Self.broken(Self.failingSave(context)) == [Broken(id, key, .patternMismatch)])
        }
    }

    @Test("min and max apply to integer64, double, decimal and date")
    func numericAndDateBounds() throws {
        let container = try Self.makeContainer()
        let context = container.newBackgroundContext()
        let (low, high) = context.performAndWait {
            let low = Self.insertValidSample(context, name: "low")
            low.setValue(Int64(-1), forKey: "count")
            low.setValue(-0.5, forKey: "ratio")
            low.setValue(Decimal(string: "-0.01")!, forKey: "amount")
            low.setValue(Self.minDate.addingTimeInterval(-0.000_001), forKey: "when")
            let high = Self.insertValidSample(context, name: "high")
            high.setValue(Int64(11), forKey: "count")
            high.setValue(1.000_000_1, forKey: "ratio")
            high.setValue(Decimal(string: "100.50000000000000000001")!, forKey: "amount")
            high.setValue(Self.maxDate.addingTimeInterval(0.000_001), forKey: "when")
            return (low.objectID, high.objectID)
        }
        let errors = Self.failingSave(context)
        #expect(Self.broken(errors) == [
            Broken(low, "count", .tooSmall), Broken(low, "ratio", .tooSmall), Broken(low, "amount", .tooSmall), Broken(low, "when", .tooSmall),
            Broken(high, "count", .tooLarge), Broken(high, "ratio", .tooLarge), Broken(high, "amount", .tooLarge), Broken(high, "when", .tooLarge),
        ])
        #expect(errors.count == 8)
    }

    @Test("integer16 and integer32 values outside their type's range are too-large or too-small, never wrapped")
    func integerTypeRanges() throws {
        let container = try Self.makeContainer()
        let context = container.newBackgroundContext()
        let values: [(String, Int64, ValidationErrorCode?)] = [
            ("small", 40_000, .tooLarge),
            ("small", -40_000, .tooSmall),
            ("small", 32_768, .tooLarge),
            ("small", -32_769, .tooSmall),
            ("small", 32_767, nil),
            ("medium", 3_000_000_000, .tooLarge),
            ("medium", -3_000_000_000, .tooSmall),
            ("medium", Int64(Int32.max) + 1, .tooLarge),
            ("medium", Int64(Int32.min), nil),
            ("medium", 40_000, nil),
        ]
        let ids = context.performAndWait {
            values.map { key, value, _ in
                let sample = Self.insertValidSample(context)
                sample.setAttributeValue(.integer(value), forKey: key)
                return sample.objectID
            }
        }
        let expected = Set(zip(ids, values).compactMap { id, v in v.2.map { Broken(id, v.0, $0) } })
        let errors = Self.failingSave(context)
        #expect(Self.broken(errors) == expected)
        #expect(errors.count == expected.count)
        #expect(try Self.storedCount(container, "Sample") == 0)
    }

    @Test("a value of the wrong type is invalid-type")
    func wrongType() throws {
        let container = try Self.makeContainer()
        let context = container.newBackgroundContext()
        let id = context.performAndWait {
            let sample = Self.insertValidSample(context)
            sample.setAttributeValue(.string("five"), forKey: "count")
            sample["small"] = "5"
            sample.setAttributeValue(.boolean(true), forKey: "when")
            sample.setAttributeValue(.string("1.5"), forKey: "amount")
            sample.setAttributeValue(.integer(3), forKey: "name")
            return sample.objectID
        }
        let errors = Self.failingSave(context)
        #expect(Self.broken(errors) == [
            Broken(id, "count", .invalidType), Broken(id, "small", .invalidType), Broken(id, "when", .invalidType),
            Broken(id, "amount", .invalidType), Broken(id, "name", .invalidType),
        ])
        #expect(errors.allSatisfy { !$0.message.isEmpty })
    }

    @Test("a NaN in a non-optional double is refused or kept as NaN, never saved as null")
    func nanInMandatoryDouble() throws {
        let model = try ManagedObjectModel(name: "NaN", entities: [
            EntityDescription(name: "Reading", attributes: [AttributeDescription(name: "value", type: .double, isOptional: false)]),
        ])
        let container = try Fixtures.container(model: model)
        let context = container.newBackgroundContext()
        let outcome: Result<ManagedObjectID, SaveError> = context.performAndWait {
            let reading = context.insertNewObject(forEntityName: "Reading")
            reading.setValue(Double.nan, forKey: "value")
            do { try context.save() } catch let error as SaveError { return .failure(error) } catch { fatalError("save threw \(error)") }
            return .success(reading.objectID)
        }
        switch outcome {
        case .failure(let error):
            guard case .validation(let errors) = error else { Issue.record("expected a validation error, got \(error)"); return }
            #expect(errors.map(\.property) == ["value"])
        case .success(let id):
            let reader = container.newBackgroundContext(name: "reader")
            let stored = reader.performAndWait { reader.object(with: id).attributeValue(forKey: "value") }
            #expect(stored != .null, "a non-optional attribute was saved as null")
            if case .double(let v) = stored { #expect(v.isNaN) }
        }
    }

    @Test("a decimal NaN is invalid-type, never saved (the store has no place for it in the decimal order)")
    func decimalNaNRefused() throws {
        let model = try ManagedObjectModel(name: "DecimalNaN", entities: [
            EntityDescription(name: "Price", attributes: [AttributeDescription(name: "value", type: .decimal)]),
        ])
        let container = try Fixtures.container(model: model)
        let context = container.newBackgroundContext()
        let id = context.performAndWait {
            let price = context.insertNewObject(forEntityName: "Price")
            price.setValue(Decimal.nan, forKey: "value")
            return price.objectID
        }
        #expect(Self.broken(Self.failingSave(context)) == [Broken(id, "value", .invalidType)])
    }

    @Test("a non-optional to-one relationship left empty is missing-mandatory-property")
    func mandatoryToOne() throws {
        let container = try Self.makeContainer()
        let context = container.newBackgroundContext()
        let id = context.performAndWait {
            let pet = context.insertNewObject(forEntityName: "Pet")
            pet.setValue("Stray", forKey: "name")
            return pet.objectID
        }
        #expect(Self.broken(Self.failingSave(context)) == [Broken(id, "owner", .missingMandatoryProperty)])
        try context.performAndWait {
            let pet = try #require(context.registeredObject(for: id))
            let owner = context.insertNewObject(forEntityName: "Owner")
            pet.setObject(owner, forKey: "owner")
            try context.save()
        }
        #expect(try Self.storedCount(container, "Pet") == 1)
    }

    @Test("clearing a saved non-optional to-one is missing-mandatory-property")
    func mandatoryToOneClearedOnUpdate() throws {
        let container = try Self.makeContainer()
        let seeded = try Self.seedOwner(container)
        let context = container.newBackgroundContext()
        context.performAndWait {
            context.object(with: seeded.pet).setObject(nil, forKey: "owner")
        }
        #expect(Self.broken(Self.failingSave(context)) == [Broken(seeded.pet, "owner", .missingMandatoryProperty)])
    }

    @Test("deleting an object whose deny relationship still holds objects is delete-denied, and nothing is deleted")
    func denyDeleteRule() throws {
        let container = try Self.makeContainer()
        let seeded = try Self.seedOwner(container)
        let context = container.newBackgroundContext()
        context.performAndWait { context.delete(context.object(with: seeded.owner)) }
        let errors = Self.failingSave(context)
        #expect(Self.broken(errors) == [Broken(seeded.owner, "pets", .deleteDenied)])
        #expect(errors.first?.message.contains(seeded.pet.description) == true)
        #expect(try Self.storedCount(container, "Owner") == 1)
        #expect(try Self.storedCount(container, "Pet") == 1)
        #expect(try Self.storedCount(container, "Note") == 1)

        // Deleting the pet too empties the deny relationship: the delete goes through.
        // (The note goes as well, so that nothing is left pointing at the owner.)
        try context.performAndWait {
            #expect(context.hasChanges)
            context.delete(context.object(with: seeded.pet))
            context.delete(context.object(with: seeded.note))
            try context.save()
        }
        #expect(try Self.storedCount(container, "Owner") == 0)
        #expect(try Self.storedCount(container, "Pet") == 0)
        #expect(try Self.storedCount(container, "Note") == 0)
    }

    @Test("moving the objects of a deny relationship elsewhere lets the delete go through")
    func denyAfterMovingDestinations() throws {
        let container = try Self.makeContainer()
        let seeded = try Self.seedOwner(container)
        let context = container.newBackgroundContext()
        let newOwner = try context.performAndWait {
            let newOwner = context.insertNewObject(forEntityName: "Owner")
            context.object(with: seeded.pet).setObject(newOwner, forKey: "owner")
            context.delete(context.object(with: seeded.note))
            context.delete(context.object(with: seeded.owner))
            try context.save()
            return newOwner.objectID
        }
        #expect(try Self.storedCount(container, "Owner") == 1)
        let reader = container.newBackgroundContext(name: "reader")
        reader.performAndWait {
            #expect(reader.object(with: seeded.pet).objectID(forKey: "owner") == newOwner)
        }
    }

    @Test("a changed object still pointing at an object deleted under noAction is invalid-relationship")
    func noActionLeavesInvalidRelationship() throws {
        let container = try Self.makeContainer()
        let seeded = try Self.seedOwner(container)
        let context = container.newBackgroundContext()
        context.performAndWait {
            let note = context.object(with: seeded.note)
            note.setValue("edited", forKey: "title")
            context.delete(context.object(with: seeded.owner))
            // noAction: the note is left pointing at the deleted owner.
            #expect(note.objectID(forKey: "owner") == seeded.owner)
            // The pet goes too, so deny does not get in the way.
            context.delete(context.object(with: seeded.pet))
        }
        let errors = Self.failingSave(context)
        #expect(Self.broken(errors) == [Broken(seeded.note, "owner", .invalidRelationship)])
        #expect(try Self.storedCount(container, "Owner") == 1)
        #expect(try Self.storedCount(container, "Pet") == 1)
    }

    @Test("a new object pointing at an object deleted under noAction is invalid-relationship")
    func noActionWithNewObject() throws {
        let container = try Self.makeContainer()
        let seeded = try Self.seedOwner(container)
        let context = container.newBackgroundContext()
        let newNote = context.performAndWait {
            let owner = context.object(with: seeded.owner)
            let note = context.insertNewObject(forEntityName: "Note")
            note.setValue("new", forKey: "title")
            note.setObject(owner, forKey: "owner")
            context.delete(context.object(with: seeded.pet))
            context.delete(owner)
            return note.objectID
        }
        let errors = Self.failingSave(context)
        #expect(Self.broken(errors).contains(Broken(newNote, "owner", .invalidRelationship)))
        #expect(errors.allSatisfy { $0.code == .invalidRelationship })
        #expect(try Self.storedCount(container, "Note") == 1)
        #expect(try Self.storedCount(container, "Owner") == 1)
    }

    @Test("an update that breaks a rule is reported with the object's permanent ID")
    func updateValidated() throws {
        let container = try Self.makeContainer()
        let context = container.newBackgroundContext()
        let id = try context.performAndWait {
            let sample = Self.insertValidSample(context)
            sample.setValue(Int64(5), forKey: "count")
            try context.save()
            return sample.objectID
        }
        let other = container.newBackgroundContext(name: "editor")
        other.performAndWait {
            other.object(with: id).setValue(Int64(99), forKey: "count")
        }
        #expect(Self.broken(Self.failingSave(other)) == [Broken(id, "count", .tooLarge)])
        let reader = container.newBackgroundContext(name: "check")
        let stored = reader.performAndWait { reader.object(with: id).value("count", as: Int64.self) }
        #expect(stored == 5)
        other.performAndWait { #expect(other.hasChanges) }
    }

    // MARK: All errors together, nothing written, changes kept

    @Test("every error of every object comes together in one SaveError.validation")
    func allErrorsTogether() throws {
        let container = try Self.makeContainer()
        let seeded = try Self.seedOwner(container)
        let context = container.newBackgroundContext()
        let (a, b, pet) = context.performAndWait {
            let a = context.insertNewObject(forEntityName: "Sample")   // name missing
            a.setValue(Int64(50), forKey: "count")
            a.setValue("Not A Slug", forKey: "slug")
            a.setValue("x", forKey: "code")
            let b = Self.insertValidSample(context, name: "b")
            b.setValue("abcde", forKey: "code")
            b.setAttributeValue(.integer(40_000), forKey: "small")
            b.setAttributeValue(.string("late"), forKey: "when")
            b.setValue(Self.minDate.addingTimeInterval(-86_400), forKey: "when")
            b.setValue(2.5, forKey: "ratio")
            let pet = context.insertNewObject(forEntityName: "Pet")   // no owner
            context.delete(context.object(with: seeded.owner))          // still has a pet: deny
            return (a.objectID, b.objectID, pet.objectID)
        }
        let errors = Self.failingSave(context)
        let expected: Set<Broken> = [
            Broken(a, "name", .missingMandatoryProperty), Broken(a, "count", .tooLarge),
            Broken(a, "slug", .patternMismatch), Broken(a, "code", .tooShort),
            Broken(b, "code", .tooLong), Broken(b, "small", .tooLarge), Broken(b, "when", .tooSmall), Broken(b, "ratio", .tooLarge),
            Broken(pet, "owner", .missingMandatoryProperty),
            Broken(seeded.owner, "pets", .deleteDenied),
        ]
        #expect(Self.broken(errors) == expected)
        #expect(errors.count == expected.count, "one error per broken rule, no duplicates")
        let error = SaveError.validation(errors)
        #expect(error.description.contains("too-long"))
        #expect(error.description.contains("delete-denied"))
    }

    @Test("after a failed save nothing was written and the context keeps its changes; fixing them saves")
    func failedSaveWritesNothingAndKeepsChanges() throws {
        let container = try Self.makeContainer()
        let context = container.newBackgroundContext()
        let existing = try context.performAndWait {
            let sample = Self.insertValidSample(context, name: "original")
            try context.save()
            return sample.objectID
        }
        let seeded = try Self.seedOwner(container)

        let (good, bad, pet) = context.performAndWait {
            let good = Self.insertValidSample(context, name: "good")
            let bad = Self.insertValidSample(context, name: "bad")
            bad.setValue(Int64(-5), forKey: "count")
            bad.setValue("toolong", forKey: "code")
            context.object(with: existing).setValue("renamed", forKey: "name")
            let pet = context.insertNewObject(forEntityName: "Pet")
            pet.setValue("Orphan", forKey: "name")
            context.delete(context.object(with: seeded.note))
            return (good, bad, pet)
        }
        let errors = Self.failingSave(context)
        #expect(Self.broken(errors) == [
            Broken(bad.objectID, "count", .tooSmall), Broken(bad.objectID, "code", .tooLong),
            Broken(pet.objectID, "owner", .missingMandatoryProperty),
        ])

        // Nothing reached the store: another context sees the old state.
        #expect(try Self.storedCount(container, "Sample") == 1)
        #expect(try Self.storedCount(container, "Pet") == 1)
        #expect(try Self.storedCount(container, "Note") == 1)
        let reader = container.newBackgroundContext(name: "reader")
        reader.performAndWait {
            #expect(reader.object(with: existing).value("name", as: String.self) == "original")
        }

        // The failing context still has every change, with IDs still temporary.
        try context.performAndWait {
            #expect(context.hasChanges)
            #expect(context.insertedObjects == [good, bad, pet])
            #expect(context.updatedObjects.map(\.objectID) == [existing])
            #expect(context.deletedObjects.map(\.objectID) == [seeded.note])
            #expect(good.objectID.isTemporaryID && bad.objectID.isTemporaryID)
            #expect(bad.value("count", as: Int64.self) == -5)
            #expect(context.object(with: existing).value("name", as: String.self) == "renamed")
            #expect(try context.count(for: FetchRequest(entityName: "Sample", includesPendingChanges: false)) == 1)
            #expect(try context.count(for: FetchRequest(entityName: "Sample")) == 3)

            // Fix the values and save again.
            bad.setValue(Int64(5), forKey: "count")
            bad.setValue("ok", forKey: "code")
            pet.setObject(context.object(with: seeded.owner), forKey: "owner")
            try context.save()
            #expect(!context.hasChanges)
            #expect(!bad.objectID.isTemporaryID)
        }
        #expect(try Self.storedCount(container, "Sample") == 3)
        #expect(try Self.storedCount(container, "Pet") == 2)
        #expect(try Self.storedCount(container, "Note") == 0)
        let check = container.newBackgroundContext(name: "check")
        try check.performAndWait {
            #expect(check.object(with: existing).value("name", as: String.self) == "renamed")
            let owner = try check.existingObject(with: seeded.owner)
            #expect(owner.count(forKey: "pets") == 2)
            let names = try check.fetch(FetchRequest(entityName: "Sample")).compactMap { $0.value("name", as: String.self) }
            #expect(Set(names) == ["renamed", "good", "bad"])
        }
    }

    @Test("a failed save can be retried after the error is fixed, several times in a row")
    func repeatedFailuresThenSuccess() throws {
        let container = try Self.makeContainer()
        let context = container.newBackgroundContext()
        let sample = context.performAndWait {
            let sample = context.insertNewObject(forEntityName: "Sample")
            sample.setValue(Int64(100), forKey: "count")
            return sample
        }
        let id = context.performAndWait { sample.objectID }
        #expect(Self.broken(Self.failingSave(context)) == [Broken(id, "name", .missingMandatoryProperty), Broken(id, "count", .tooLarge)])
        context.performAndWait { sample.setValue("named", forKey: "name") }
        #expect(Self.broken(Self.failingSave(context)) == [Broken(id, "count", .tooLarge)])
        #expect(try Self.storedCount(container, "Sample") == 0)
        try context.performAndWait {
            sample.setValue(Int64(10), forKey: "count")
            try context.save()
            #expect(sample.version == 1)
        }
        #expect(try Self.storedCount(container, "Sample") == 1)
    }
}
