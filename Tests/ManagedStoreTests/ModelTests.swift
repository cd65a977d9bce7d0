import Foundation
import Testing
@testable import ManagedStore
@testable import ManagedStoreCore
@testable import ManagedStoreSQLite

/// The JSON model format and the checks that refuse a model that is not usable.
@Suite("Model loading and checking")
struct ModelTests {
    /// The task-tracker model exactly as the API contract prints it.
    static let contractTrackerJSON = #"""
    {
      "name": "Tracker", "version": 1,
      "entities": [
        { "name": "Project",
          "attributes": [
            {"name": "name", "type": "string", "optional": false, "minLength": 1, "maxLength": 200},
            {"name": "archived", "type": "boolean", "default": false}
          ],
          "relationships": [
            {"name": "tasks", "destination": "Task", "toMany": true, "inverse": "project", "deleteRule": "cascade"}
          ],
          "uniquenessConstraints": [["name"]] },
        { "name": "Task",
          "attributes": [
            {"name": "title", "type": "string", "optional": false},
            {"name": "priority", "type": "integer64", "default": 0, "min": 0, "max": 5},
            {"name": "done", "type": "boolean", "default": false},
            {"name": "estimate", "type": "double"},
            {"name": "due", "type": "date"}
          ],
          "relationships": [
            {"name": "project", "destination": "Project", "inverse": "tasks", "deleteRule": "nullify"},
            {"name": "tags", "destination": "Tag", "toMany": true, "inverse": "tasks", "deleteRule": "nullify"}
          ],
          "indexes": [["done", "priority"]] },
        { "name": "Tag",
          "attributes": [{"name": "label", "type": "string", "optional": false}],
          "relationships": [{"name": "tasks", "destination": "Task", "toMany": true, "inverse": "tags", "deleteRule": "deny"}],
          "uniquenessConstraints": [["label"]] }
      ]
    }
    """#

    /// The same tracker, written in Swift.
    static func swiftTrackerEntities() -> [EntityDescription] {
        [
            EntityDescription(
                name: "Project",
                attributes: [
                    AttributeDescription(name: "name", type: .string, isOptional: false, minLength: 1, maxLength: 200),
                    AttributeDescription(name: "archived", type: .boolean, defaultValue: .boolean(false)),
                ],
                relationships: [
                    RelationshipDescription(name: "tasks", destination: "Task", inverse: "project", isToMany: true, deleteRule: .cascade),
                ],
                uniquenessConstraints: [["name"]]),
            EntityDescription(
                name: "Task",
                attributes: [
                    AttributeDescription(name: "title", type: .string, isOptional: false),
                    AttributeDescription(name: "priority", type: .integer64, defaultValue: .integer(0),
                                         minValue: .integer(0), maxValue: .integer(5)),
                    AttributeDescription(name: "done", type: .boolean, defaultValue: .boolean(false)),
                    AttributeDescription(name: "estimate", type: .double),
                    AttributeDescription(name: "due", type: .date),
                ],
                relationships: [
                    RelationshipDescription(name: "project", destination: "Project", inverse: "tasks", deleteRule: .nullify),
                    RelationshipDescription(name: "tags", destination: "Tag", inverse: "tasks", isToMany: true, deleteRule: .nullify),
                ],
                indexes: [["done", "priority"]]),
            EntityDescription(
                name: "Tag",
                attributes: [AttributeDescription(name: "label", type: .string, isOptional: false)],
                relationships: [
                    RelationshipDescription(name: "tasks", destination: "Task", inverse: "tags", isToMany: true, deleteRule: .deny),
                ],
                uniquenessConstraints: [["label"]]),
        ]
    }

    // MARK: Helpers

    /// The problems of a JSON model that must be refused; records an issue if it loads.
    static func problems(ofJSON text: String, sourceLocation: SourceLocation = #_sourceLocation) -> [ModelProblem] {
        do {
            let model = try ManagedObjectModel(jsonData: Array(text.utf8))
            Issue.record("the model loaded but should have been refused: \(model.entities.map(\.name))", sourceLocation: sourceLocation)
            return []
        } catch {
            return error.problems
        }
    }

    /// The problems of a Swift-built model that must be refused; records an issue if it builds.
    static func problems(of entities: [EntityDescription], sourceLocation: SourceLocation = #_sourceLocation) -> [ModelProblem] {
        do {
            _ = try ManagedObjectModel(name: "M", entities: entities)
            Issue.record("the model was built but should have been refused", sourceLocation: sourceLocation)
            return []
        } catch {
            return error.problems
        }
    }

    /// Whether `problems` has one about `entity`.`property` whose message contains `fragment`.
    static func has(_ problems: [ModelProblem], entity: String?, property: String?, _ fragment: String) -> Bool {
        problems.contains { $0.entity == entity && $0.property == property && $0.message.localizedCaseInsensitiveContains(fragment) }
    }

    /// A one-entity JSON model whose single attribute is `attribute` (a JSON object text).
    static func modelJSON(attribute: String) -> String {
        #"{"name": "M", "entities": [{"name": "Item", "attributes": [\#(attribute)]}]}"#
    }

    /// A two-entity JSON model: A with `aRelationships`, B with `bRelationships`.
    static func modelJSON(aRelationships: String, bRelationships: String) -> String {
        #"""
        {"name": "M", "entities": [
          {"name": "A", "attributes": [{"name": "x", "type": "string"}], "relationships": [\#(aRelationships)]},
          {"name": "B", "attributes": [{"name": "y", "type": "string"}], "relationships": [\#(bRelationships)]}
        ]}
        """#
    }

    // MARK: Loading the contract's model

    @Test("the contract's task-tracker model loads with every entity, attribute and rule")
    func contractTrackerModelLoads() throws {
        let model = try ManagedObjectModel(jsonData: Array(Self.contractTrackerJSON.utf8))
        #expect(model.name == "Tracker")
        #expect(model.version == 1)
        #expect(model.entities.map(\.name) == ["Project", "Task", "Tag"])

        let project = try #require(model.entity(named: "Project"))
        #expect(project.attributes.map(\.name) == ["name", "archived"])
        let name = try #require(project.attribute(named: "name"))
        #expect(name.type == .string)
        #expect(name.isOptional == false)
        #expect(name.minLength == 1)
        #expect(name.maxLength == 200)
        #expect(name.pattern == nil)
        #expect(name.defaultValue == .null)
        let archived = try #require(project.attribute(named: "archived"))
        #expect(archived.type == .boolean)
        #expect(archived.isOptional, "attributes are optional unless \"optional\": false")
        #expect(archived.defaultValue == .boolean(false))
        let tasks = try #require(project.relationship(named: "tasks"))
        #expect(tasks.destination == "Task")
        #expect(tasks.isToMany)
        #expect(tasks.inverse == "project")
        #expect(tasks.deleteRule == .cascade)
        #expect(project.uniquenessConstraints == [["name"]])
        #expect(project.indexes == [])

        let task = try #require(model.entity(named: "Task"))
        #expect(task.attributes.map(\.name) == ["title", "priority", "done", "estimate", "due"])
        #expect(task.attributes.map(\.type) == [.string, .integer64, .boolean, .double, .date])
        let priority = try #require(task.attribute(named: "priority"))
        #expect(priority.defaultValue == .integer(0))
        #expect(priority.minValue == .integer(0))
        #expect(priority.maxValue == .integer(5))
        #expect(task.attribute(named: "estimate")?.defaultValue == .null)
        #expect(task.attribute(named: "due")?.isOptional == true)
        let taskProject = try #require(task.relationship(named: "project"))
        #expect(taskProject.isToMany == false, "relationships are to-one unless \"toMany\": true")
        #expect(taskProject.destination == "Project")
        #expect(taskProject.inverse == "tasks")
        #expect(taskProject.deleteRule == .nullify)
        #expect(taskProject.isOptional)
        let tags = try #require(task.relationship(named: "tags"))
        #expect(tags.isToMany && tags.destination == "Tag" && tags.inverse == "tasks" && tags.deleteRule == .nullify)
        #expect(task.indexes == [["done", "priority"]])
        #expect(task.uniquenessConstraints == [])

        let tag = try #require(model.entity(named: "Tag"))
        #expect(tag.attribute(named: "label")?.isOptional == false)
        #expect(tag.relationship(named: "tasks")?.deleteRule == .deny)
        #expect(tag.relationship(named: "tasks")?.inverse == "tags")
        #expect(tag.uniquenessConstraints == [["label"]])
    }

    @Test("the built-in task tracker is the contract's model")
    func builtInTrackerMatchesContract() throws {
        let contract = try ManagedObjectModel(jsonData: Array(Self.contractTrackerJSON.utf8))
        let builtIn = ManagedObjectModel.taskTracker()
        #expect(builtIn.entities == contract.entities)
        #expect(builtIn.versionHash == contract.versionHash)
    }

    @Test("a relationship without deleteRule is nullify and the delete rules all load")
    func deleteRulesLoad() throws {
        let json = Self.modelJSON(
            aRelationships: #"""
            {"name": "b1", "destination": "B", "inverse": "a1"},
            {"name": "b2", "destination": "B", "inverse": "a2", "deleteRule": "cascade"},
            {"name": "b3", "destination": "B", "inverse": "a3", "deleteRule": "deny"},
            {"name": "b4", "destination": "B", "inverse": "a4", "deleteRule": "noAction", "optional": false}
            """#,
            bRelationships: #"""
            {"name": "a1", "destination": "A", "inverse": "b1", "toMany": true},
            {"name": "a2", "destination": "A", "inverse": "b2", "toMany": true},
            {"name": "a3", "destination": "A", "inverse": "b3"},
            {"name": "a4", "destination": "A", "inverse": "b4", "toMany": true}
            """#)
        let model = try ManagedObjectModel(jsonData: Array(json.utf8))
        let a = try #require(model.entity(named: "A"))
        #expect(a.relationships.map(\.deleteRule) == [.nullify, .cascade, .deny, .noAction])
        #expect(a.relationships.map(\.isOptional) == [true, true, true, false])
        #expect(model.entity(named: "B")?.relationships.map(\.isToMany) == [true, true, false, true])
    }

    // MARK: Round trips and version hashes

    /// A model that uses every attribute type and every validation key.
    static func everyFeatureEntities() throws -> [EntityDescription] {
        let start = try #require(RFC3339.date(from: "2020-01-01T00:00:00Z"))
        let end = try #require(RFC3339.date(from: "2030-06-30T12:00:00.5Z"))
        return [
            EntityDescription(
                name: "Sample",
                attributes: [
                    AttributeDescription(name: "small", type: .integer16, defaultValue: .integer(-3), minValue: .integer(-10), maxValue: .integer(10)),
                    AttributeDescription(name: "medium", type: .integer32, isOptional: false, defaultValue: .integer(70_000)),
                    AttributeDescription(name: "large", type: .integer64, maxValue: .integer(Int64.max)),
                    AttributeDescription(name: "amount", type: .decimal, defaultValue: .decimal(Decimal(string: "12345678901234567890.123456789")!),
                                         minValue: .decimal(Decimal(string: "-0.5")!), maxValue: .decimal(Decimal(string: "99999999999999999999999")!)),
                    AttributeDescription(name: "ratio", type: .double, defaultValue: .double(0.1), minValue: .double(-1.5), maxValue: .double(1e300)),
                    AttributeDescription(name: "weight", type: .float, defaultValue: .float(0.1)),
                    AttributeDescription(name: "label", type: .string, isOptional: false, defaultValue: .string("a \"quoted\" \\ label\n"),
                                         minLength: 1, maxLength: 20, pattern: "[a-z \"\\\\\\n]+"),
                    AttributeDescription(name: "flag", type: .boolean, defaultValue: .boolean(true)),
                    AttributeDescription(name: "when", type: .date, defaultValue: .date(end), minValue: .date(start), maxValue: .date(end)),
                    AttributeDescription(name: "blob", type: .binary, defaultValue: .binary(Data([0, 1, 2, 0xFF]))),
                    AttributeDescription(name: "token", type: .uuid, defaultValue: .uuid(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!)),
                    AttributeDescription(name: "link", type: .uri, defaultValue: .uri(URL(string: "https://example.com/a?b=c")!)),
                ],
                relationships: [
                    RelationshipDescription(name: "owner", destination: "Owner", inverse: "samples", deleteRule: .noAction, isOptional: false),
                    RelationshipDescription(name: "peers", destination: "Sample", inverse: "peers", isToMany: true),
                ],
                uniquenessConstraints: [["label", "small"], ["token"]],
                indexes: [["when"], ["flag", "ratio"], ["owner"]]),
            EntityDescription(
                name: "Owner",
                attributes: [AttributeDescription(name: "name", type: .string)],
                relationships: [RelationshipDescription(name: "samples", destination: "Sample", inverse: "owner", isToMany: true, deleteRule: .deny)]),
        ]
    }

    @Test("jsonValue of the tracker loads back to an equal model with the same versionHash")
    func trackerJSONRoundTrip() throws {
        let model = try ManagedObjectModel(jsonData: Array(Self.contractTrackerJSON.utf8))
        let text = model.jsonValue.serialized()
        let again = try ManagedObjectModel(jsonData: Array(text.utf8))
        #expect(again.name == model.name)
        #expect(again.version == model.version)
        #expect(again.entities == model.entities)
        #expect(again.versionHash == model.versionHash)
        #expect(again.jsonValue == model.jsonValue)
    }

    @Test("a model using every type and rule survives jsonValue -> text -> model unchanged")
    func everyFeatureJSONRoundTrip() throws {
        let model = try ManagedObjectModel(name: "Everything", version: 7, entities: Self.everyFeatureEntities())
        let text = model.jsonValue.serialized()
        let again = try ManagedObjectModel(jsonData: Array(text.utf8))
        #expect(again.name == "Everything")
        #expect(again.version == 7)
        #expect(again.versionHash == model.versionHash)
        for (original, loaded) in zip(model.entities, again.entities) {
            #expect(loaded.name == original.name)
            for (a, b) in zip(original.attributes, loaded.attributes) {
                #expect(a == b, "attribute \(original.name).\(a.name) changed through JSON")
            }
            #expect(loaded.relationships == original.relationships)
            #expect(loaded.uniquenessConstraints == original.uniquenessConstraints)
            #expect(loaded.indexes == original.indexes)
        }
        #expect(again.entities == model.entities)
    }

    @Test("the decimal default keeps every digit in the model JSON")
    func decimalDefaultStaysExactInModelJSON() throws {
        let model = try ManagedObjectModel(name: "Everything", entities: Self.everyFeatureEntities())
        let amount = try #require(model.jsonValue["entities"]?.arrayValue?.first?["attributes"]?.arrayValue?
            .first { $0["name"] == .string("amount") })
        #expect(amount["default"] == .string("12345678901234567890.123456789"))
        #expect(amount["min"] == .string("-0.5"))
    }

    @Test("building the tracker in Swift gives the same model and versionHash as its JSON")
    func swiftBuiltModelHasSameVersionHash() throws {
        let fromJSON = try ManagedObjectModel(jsonData: Array(Self.contractTrackerJSON.utf8))
        let fromSwift = try ManagedObjectModel(name: "Tracker", version: 1, entities: Self.swiftTrackerEntities())
        #expect(fromSwift.entities == fromJSON.entities)
        #expect(fromSwift.versionHash == fromJSON.versionHash)
        #expect(fromSwift.versionHash.count == 16)
    }

    @Test("versionHash is stable and changes with any change to the model")
    func versionHashTracksContent() throws {
        let base = try ManagedObjectModel(name: "Tracker", version: 1, entities: Self.swiftTrackerEntities())
        let same = try ManagedObjectModel(name: "Tracker", version: 1, entities: Self.swiftTrackerEntities())
        #expect(base.versionHash == same.versionHash)

        var changedMax = Self.swiftTrackerEntities()
        changedMax[1].attributes[1].maxValue = .integer(6)
        var changedRule = Self.swiftTrackerEntities()
        changedRule[2].relationships[0].deleteRule = .nullify
        var changedOptional = Self.swiftTrackerEntities()
        changedOptional[1].attributes[0].isOptional = true
        let variants = [
            try ManagedObjectModel(name: "Tracker", version: 2, entities: Self.swiftTrackerEntities()),
            try ManagedObjectModel(name: "Tracker2", version: 1, entities: Self.swiftTrackerEntities()),
            try ManagedObjectModel(name: "Tracker", version: 1, entities: changedMax),
            try ManagedObjectModel(name: "Tracker", version: 1, entities: changedRule),
            try ManagedObjectModel(name: "Tracker", version: 1, entities: changedOptional),
        ]
        for variant in variants {
            #expect(variant.versionHash != base.versionHash)
        }
        #expect(Set(variants.map(\.versionHash)).count == variants.count)
    }

    @Test("JSON key order and whitespace do not change the versionHash")
    func versionHashIgnoresFormatting() throws {
        let a = #"{"name":"M","version":1,"entities":[{"name":"Item","attributes":[{"name":"x","type":"integer64","min":1,"optional":false}]}]}"#
        let b = #"""
        { "entities": [ { "attributes": [ { "optional": false, "min": 1, "type": "integer64", "name": "x" } ], "name": "Item" } ],
          "version": 1, "name": "M" }
        """#
        let first = try ManagedObjectModel(jsonData: Array(a.utf8))
        let second = try ManagedObjectModel(jsonData: Array(b.utf8))
        #expect(first.versionHash == second.versionHash)
        #expect(first.entities == second.entities)
    }

    // MARK: One problem at a time, each naming entity and property

    @Test("an unknown attribute type is refused, naming entity and attribute")
    func unknownType() {
        let problems = Self.problems(ofJSON: Self.modelJSON(attribute: #"{"name": "size", "type": "text"}"#))
        #expect(problems.count == 1)
        #expect(Self.has(problems, entity: "Item", property: "size", "unknown type"))
        #expect(problems.first?.message.contains("text") == true)
    }

    @Test("a relationship without an inverse key is refused")
    func missingInverseKey() {
        let problems = Self.problems(ofJSON: Self.modelJSON(
            aRelationships: #"{"name": "bs", "destination": "B", "toMany": true}"#,
            bRelationships: ""))
        #expect(Self.has(problems, entity: "A", property: "bs", "inverse"))
    }

    @Test("an inverse that names no relationship of the destination is refused")
    func inverseNamesMissingRelationship() {
        let json = Self.modelJSON(
            aRelationships: #"{"name": "bs", "destination": "B", "toMany": true, "inverse": "owner"}"#,
            bRelationships: #"{"name": "a", "destination": "A", "inverse": "bs"}"#)
        let problems = Self.problems(ofJSON: json)
        #expect(Self.has(problems, entity: "A", property: "bs", "owner"))
        #expect(Self.has(problems, entity: "A", property: "bs", "not a relationship"))
        // B.a names A.bs, whose inverse is not B.a: reported on its own side.
        #expect(Self.has(problems, entity: "B", property: "a", "does not point back"))
        #expect(problems.count == 2)
    }

    @Test("an inverse that does not point back is refused on the side that names it")
    func inverseDoesNotPointBack() {
        // A.bs -> B.a, but B.a says its inverse is A.other.
        let json = Self.modelJSON(
            aRelationships: #"""
            {"name": "bs", "destination": "B", "toMany": true, "inverse": "a"},
            {"name": "other", "destination": "B", "inverse": "a"}
            """#,
            bRelationships: #"{"name": "a", "destination": "A", "inverse": "other"}"#)
        let problems = Self.problems(ofJSON: json)
        #expect(Self.has(problems, entity: "A", property: "bs", "does not point back"))
        #expect(!problems.contains { $0.entity == "A" && $0.property == "other" }, "A.other and B.a are a proper pair")
    }

    @Test("an inverse on the wrong destination entity does not point back")
    func inversePointsAtWrongEntity() {
        let entities = [
            EntityDescription(name: "A", relationships: [RelationshipDescription(name: "c", destination: "C", inverse: "link")]),
            EntityDescription(name: "B", relationships: [RelationshipDescription(name: "c", destination: "C", inverse: "link")]),
            EntityDescription(name: "C", relationships: [RelationshipDescription(name: "link", destination: "B", inverse: "c")]),
        ]
        let problems = Self.problems(of: entities)
        #expect(problems.count == 1)
        #expect(Self.has(problems, entity: "A", property: "c", "does not point back"))
    }

    @Test("an unknown destination entity is refused")
    func unknownDestination() {
        let json = Self.modelJSON(
            aRelationships: #"{"name": "ghost", "destination": "Ghost", "inverse": "a"}"#,
            bRelationships: "")
        let problems = Self.problems(ofJSON: json)
        #expect(problems.count == 1)
        #expect(Self.has(problems, entity: "A", property: "ghost", "unknown destination"))
        #expect(problems.first?.message.contains("Ghost") == true)
    }

    @Test("duplicate property names are refused, also across attributes and relationships")
    func duplicatePropertyNames() {
        let json = Self.modelJSON(
            aRelationships: #"{"name": "x", "destination": "B", "inverse": "a"}"#,
            bRelationships: #"{"name": "a", "destination": "A", "inverse": "x", "toMany": true}"#)
        let problems = Self.problems(ofJSON: json)
        #expect(Self.has(problems, entity: "A", property: "x", "duplicate property"))

        let twoAttributes = Self.problems(ofJSON: #"""
        {"name": "M", "entities": [{"name": "Item", "attributes": [
            {"name": "title", "type": "string"}, {"name": "title", "type": "integer64"}]}]}
        """#)
        #expect(twoAttributes.count == 1)
        #expect(Self.has(twoAttributes, entity: "Item", property: "title", "duplicate property"))
    }

    @Test("property names that differ only in case are duplicates")
    func duplicatePropertyNamesDifferingInCase() {
        let problems = Self.problems(of: [
            EntityDescription(name: "Item", attributes: [
                AttributeDescription(name: "title", type: .string),
                AttributeDescription(name: "Title", type: .string),
            ]),
        ])
        #expect(problems.count == 1)
        #expect(Self.has(problems, entity: "Item", property: "Title", "duplicate property"))
    }

    @Test("duplicate entity names are refused, also when they differ only in case")
    func duplicateEntityNames() {
        let exact = Self.problems(ofJSON: #"""
        {"name": "M", "entities": [{"name": "Item"}, {"name": "Item"}]}
        """#)
        #expect(exact.count == 1)
        #expect(Self.has(exact, entity: "Item", property: nil, "duplicate entity"))

        let byCase = Self.problems(of: [EntityDescription(name: "Task"), EntityDescription(name: "task")])
        #expect(byCase.count == 1)
        #expect(Self.has(byCase, entity: "task", property: nil, "duplicate entity"))
    }

    @Test("names starting with '_' are reserved, for entities and properties")
    func reservedNames() {
        let problems = Self.problems(ofJSON: #"""
        {"name": "M", "entities": [
          {"name": "_Hidden"},
          {"name": "Item", "attributes": [{"name": "_version", "type": "integer64"}, {"name": "_id", "type": "string"}]}
        ]}
        """#)
        #expect(problems.count == 3)
        #expect(Self.has(problems, entity: "_Hidden", property: nil, "reserved"))
        #expect(Self.has(problems, entity: "Item", property: "_version", "reserved"))
        #expect(Self.has(problems, entity: "Item", property: "_id", "reserved"))
    }

    @Test("names that are not plain identifiers are refused")
    func nonIdentifierNames() {
        let problems = Self.problems(of: [
            EntityDescription(name: "My Entity"),
            EntityDescription(name: "Item", attributes: [
                AttributeDescription(name: "1st", type: .string),
                AttributeDescription(name: "ti\"tle", type: .string),
                AttributeDescription(name: "", type: .string),
            ]),
        ])
        #expect(Self.has(problems, entity: "My Entity", property: nil, "entity name"))
        #expect(Self.has(problems, entity: "Item", property: "1st", "property name"))
        #expect(Self.has(problems, entity: "Item", property: "ti\"tle", "property name"))
        #expect(Self.has(problems, entity: "Item", property: "", "empty"))
    }

    @Test("a default value of the wrong type is refused (JSON and Swift)")
    func defaultOfWrongType() {
        let json = Self.problems(ofJSON: Self.modelJSON(attribute: #"{"name": "count", "type": "integer64", "default": "five"}"#))
        #expect(json.count == 1)
        #expect(Self.has(json, entity: "Item", property: "count", "default"))

        let swift = Self.problems(of: [
            EntityDescription(name: "Item", attributes: [
                AttributeDescription(name: "count", type: .integer64, defaultValue: .string("five")),
                AttributeDescription(name: "flag", type: .boolean, defaultValue: .integer(1)),
            ]),
        ])
        #expect(swift.count == 2)
        #expect(Self.has(swift, entity: "Item", property: "count", "default"))
        #expect(Self.has(swift, entity: "Item", property: "flag", "default"))
    }

    @Test("a default outside an integer type's range is refused")
    func defaultOutOfIntegerRange() {
        let json = Self.problems(ofJSON: Self.modelJSON(attribute: #"{"name": "small", "type": "integer16", "default": 40000}"#))
        #expect(json.count == 1)
        #expect(Self.has(json, entity: "Item", property: "small", "default"))

        let beyondInt64 = Self.problems(ofJSON: Self.modelJSON(
            attribute: #"{"name": "big", "type": "integer64", "default": 9223372036854775808}"#))
        #expect(beyondInt64.count == 1)
        #expect(Self.has(beyondInt64, entity: "Item", property: "big", "default"))
    }

    @Test("min and max on a string attribute are refused (JSON and Swift)")
    func minMaxOnString() {
        let json = Self.problems(ofJSON: Self.modelJSON(attribute: #"{"name": "title", "type": "string", "min": 1, "max": 5}"#))
        #expect(json.count == 2)
        #expect(Self.has(json, entity: "Item", property: "title", "min"))
        #expect(Self.has(json, entity: "Item", property: "title", "max"))

        let swift = Self.problems(of: [
            EntityDescription(name: "Item", attributes: [
                AttributeDescription(name: "title", type: .string, minValue: .string("a"), maxValue: .integer(5)),
            ]),
        ])
        #expect(swift.count == 2)
        #expect(Self.has(swift, entity: "Item", property: "title", "'min'"))
        #expect(Self.has(swift, entity: "Item", property: "title", "'max'"))
    }

    @Test("length and pattern rules on a non-string attribute are refused")
    func stringRulesOnNumber() {
        let swift = Self.problems(of: [
            EntityDescription(name: "Item", attributes: [
                AttributeDescription(name: "count", type: .integer64, maxLength: 3),
            ]),
        ])
        #expect(swift.count == 1)
        #expect(Self.has(swift, entity: "Item", property: "count", "strings only"))
    }

    @Test("min greater than max length, or a negative length, is refused")
    func inconsistentLengths() {
        let swift = Self.problems(of: [
            EntityDescription(name: "Item", attributes: [
                AttributeDescription(name: "code", type: .string, minLength: 5, maxLength: 2),
                AttributeDescription(name: "other", type: .string, minLength: -1),
            ]),
        ])
        #expect(Self.has(swift, entity: "Item", property: "code", "greater than"))
        #expect(Self.has(swift, entity: "Item", property: "other", "negative"))

        let json = Self.problems(ofJSON: Self.modelJSON(attribute: #"{"name": "code", "type": "string", "maxLength": -3}"#))
        #expect(Self.has(json, entity: "Item", property: "code", "maxLength"))
    }

    @Test("a pattern that is not a valid regular expression is refused")
    func invalidPattern() {
        let json = Self.problems(ofJSON: Self.modelJSON(attribute: #"{"name": "code", "type": "string", "pattern": "[a-"}"#))
        #expect(json.count == 1)
        #expect(Self.has(json, entity: "Item", property: "code", "pattern"))
        #expect(Self.has(json, entity: "Item", property: "code", "regular expression"))

        let swift = Self.problems(of: [
            EntityDescription(name: "Item", attributes: [AttributeDescription(name: "code", type: .string, pattern: "(abc")]),
        ])
        #expect(Self.has(swift, entity: "Item", property: "code", "regular expression"))
    }

    @Test("a uniqueness constraint naming an unknown attribute is refused")
    func constraintNamingUnknownAttribute() {
        let problems = Self.problems(ofJSON: #"""
        {"name": "M", "entities": [{"name": "Item",
          "attributes": [{"name": "label", "type": "string"}],
          "uniquenessConstraints": [["label", "nope"]]}]}
        """#)
        #expect(problems.count == 1)
        #expect(Self.has(problems, entity: "Item", property: "nope", "uniqueness constraint"))
    }

    @Test("an index naming an unknown property is refused, an index on a to-one relationship is not")
    func indexes() throws {
        let problems = Self.problems(of: [
            EntityDescription(name: "Item", attributes: [AttributeDescription(name: "label", type: .string)],
                              indexes: [["missing"]]),
        ])
        #expect(problems.count == 1)
        #expect(Self.has(problems, entity: "Item", property: "missing", "index"))

        let entities = [
            EntityDescription(name: "A", relationships: [RelationshipDescription(name: "b", destination: "B", inverse: "as")],
                              indexes: [["b"]]),
            EntityDescription(name: "B", relationships: [RelationshipDescription(name: "as", destination: "A", inverse: "b", isToMany: true)]),
        ]
        _ = try ManagedObjectModel(name: "M", entities: entities)
    }

    @Test("a non-optional to-many relationship means at least one destination (minCount 1), as in Core Data")
    func nonOptionalToMany() {
        let bs = RelationshipDescription(name: "bs", destination: "B", inverse: "a", isToMany: true, isOptional: false)
        #expect(bs.minCount == 1 && bs.isOptional)
        #expect(RelationshipDescription(name: "bs", destination: "B", inverse: "a", isToMany: true, isOptional: false, minCount: 3).minCount == 3)
        // Set by hand after the initialiser, it is refused with the way out.
        var unnormalised = bs
        unnormalised.isOptional = false
        let problems = Self.problems(of: [
            EntityDescription(name: "A", relationships: [unnormalised]),
            EntityDescription(name: "B", relationships: [RelationshipDescription(name: "a", destination: "A", inverse: "bs")]),
        ])
        #expect(problems.count == 1)
        #expect(Self.has(problems, entity: "A", property: "bs", "minCount of 1"))
    }

    @Test("text that is not JSON is one problem saying so, with the byte offset")
    func invalidJSONText() {
        let problems = Self.problems(ofJSON: #"{"name": "M", "entities": [}"#)
        #expect(problems.count == 1)
        let problem = problems.first
        #expect(problem?.entity == nil)
        #expect(problem?.property == nil)
        #expect(problem?.message.contains("not valid JSON") == true)
        #expect(problem?.message.contains("at byte 27") == true)
    }

    @Test("JSON that is not a model object is refused")
    func notAModel() {
        #expect(Self.has(Self.problems(ofJSON: "[]"), entity: nil, property: nil, "JSON object"))
        #expect(Self.has(Self.problems(ofJSON: #"{"name": "M"}"#), entity: nil, property: nil, "entities"))
        #expect(Self.has(Self.problems(ofJSON: #"{"name": "", "entities": []}"#), entity: nil, property: nil, "name"))
        #expect(Self.has(Self.problems(ofJSON: #"{"name": "M", "version": 1.5, "entities": []}"#), entity: nil, property: nil, "version"))
    }

    @Test("unknown keys are refused at every level, naming where they are")
    func unknownKeys() {
        let problems = Self.problems(ofJSON: #"""
        {"name": "M", "versoin": 2, "entities": [
          {"name": "A", "atributes": [],
           "attributes": [{"name": "x", "type": "string", "optinal": false}],
           "relationships": [{"name": "bs", "destination": "B", "inverse": "a", "toMany": true, "orderd": true}]},
          {"name": "B", "relationships": [{"name": "a", "destination": "A", "inverse": "bs"}]}
        ]}
        """#)
        #expect(problems.count == 4)
        #expect(Self.has(problems, entity: nil, property: nil, "\"versoin\""))
        #expect(Self.has(problems, entity: "A", property: nil, "\"atributes\""))
        #expect(Self.has(problems, entity: "A", property: "x", "\"optinal\""))
        #expect(Self.has(problems, entity: "A", property: "bs", "\"orderd\""))
        #expect(problems.allSatisfy { $0.message.contains("unknown key") })
    }

    @Test("an unknown delete rule or a non-boolean flag is refused")
    func badRelationshipValues() {
        let problems = Self.problems(ofJSON: Self.modelJSON(
            aRelationships: #"{"name": "bs", "destination": "B", "inverse": "a", "toMany": "yes", "deleteRule": "restrict"}"#,
            bRelationships: #"{"name": "a", "destination": "A", "inverse": "bs"}"#))
        #expect(Self.has(problems, entity: "A", property: "bs", "deleteRule"))
        #expect(Self.has(problems, entity: "A", property: "bs", "toMany"))
    }

    // MARK: Every problem at once

    @Test("several reading problems in one JSON model are all reported in one ModelError")
    func severalJSONProblemsTogether() {
        let problems = Self.problems(ofJSON: #"""
        {"name": "M", "entities": [
          {"name": "A", "attributes": [
             {"name": "size", "type": "huge"},
             {"name": "count", "type": "integer64", "default": true},
             {"name": "title", "type": "string", "min": 3, "colour": "red"}],
           "relationships": [{"name": "bs", "destination": "B"}]},
          {"name": "B", "attributes": [{"name": "when", "type": "date", "default": "yesterday"}]}
        ]}
        """#)
        #expect(Self.has(problems, entity: "A", property: "size", "unknown type"))
        #expect(Self.has(problems, entity: "A", property: "count", "default"))
        #expect(Self.has(problems, entity: "A", property: "title", "min"))
        #expect(Self.has(problems, entity: "A", property: "title", "unknown key"))
        #expect(Self.has(problems, entity: "A", property: "bs", "inverse"))
        #expect(Self.has(problems, entity: "B", property: "when", "default"))
        #expect(problems.count == 6)
    }

    @Test("several structural problems in one Swift model are all reported in one ModelError")
    func severalSwiftProblemsTogether() {
        let problems = Self.problems(of: [
            EntityDescription(
                name: "A",
                attributes: [
                    AttributeDescription(name: "_secret", type: .string),
                    AttributeDescription(name: "code", type: .string, pattern: "[a-"),
                    AttributeDescription(name: "Code", type: .string),
                    AttributeDescription(name: "n", type: .integer16, defaultValue: .integer(1_000_000)),
                ],
                relationships: [
                    RelationshipDescription(name: "ghost", destination: "Ghost", inverse: "a"),
                    RelationshipDescription(name: "b", destination: "B", inverse: "nothing"),
                ],
                uniquenessConstraints: [["missing"]]),
            EntityDescription(name: "B", relationships: [RelationshipDescription(name: "a", destination: "A", inverse: "b")]),
            EntityDescription(name: "b"),
        ])
        #expect(Self.has(problems, entity: "A", property: "_secret", "reserved"))
        #expect(Self.has(problems, entity: "A", property: "code", "regular expression"))
        #expect(Self.has(problems, entity: "A", property: "Code", "duplicate property"))
        #expect(Self.has(problems, entity: "A", property: "n", "default"))
        #expect(Self.has(problems, entity: "A", property: "ghost", "unknown destination"))
        #expect(Self.has(problems, entity: "A", property: "b", "nothing"))
        #expect(Self.has(problems, entity: "A", property: "missing", "uniqueness constraint"))
        #expect(Self.has(problems, entity: "B", property: "a", "does not point back"))
        #expect(Self.has(problems, entity: "b", property: nil, "duplicate entity"))
        #expect(problems.count == 9)
    }

    @Test("a JSON model with both a reading problem and a relationship problem reports both")
    func readingAndStructuralProblemsTogether() {
        // One unknown type (found while reading the JSON) and one inverse that does not point
        // back (found when checking the model): the author must see both in one go.
        let problems = Self.problems(ofJSON: #"""
        {"name": "M", "entities": [
          {"name": "A", "attributes": [{"name": "size", "type": "huge"}],
           "relationships": [{"name": "bs", "destination": "B", "inverse": "a", "toMany": true},
                             {"name": "other", "destination": "B", "inverse": "a"}]},
          {"name": "B", "relationships": [{"name": "a", "destination": "A", "inverse": "other"}]},
          {"name": "_C"}
        ]}
        """#)
        #expect(Self.has(problems, entity: "A", property: "size", "unknown type"))
        #expect(Self.has(problems, entity: "A", property: "bs", "does not point back"))
        #expect(Self.has(problems, entity: "_C", property: nil, "reserved"))
    }

    @Test("ModelError's description names entity and property of every problem")
    func modelErrorDescription() {
        let error = ModelError([
            ModelProblem(entity: "Task", property: "size", message: "unknown type \"huge\""),
            ModelProblem(entity: "Tag", message: "duplicate entity name"),
            ModelProblem(message: "model file is not valid JSON"),
        ])
        #expect(error.description == "invalid model: Task.size: unknown type \"huge\"; Tag: duplicate entity name; model file is not valid JSON")
    }
}
