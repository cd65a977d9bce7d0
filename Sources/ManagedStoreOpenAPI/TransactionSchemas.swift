import ManagedStoreCore

/// The body of `POST /v1/transactions` for a loaded model: each operation one of an insert of
/// one of its entities (`entity` named, its mandatory attributes required), an update of an
/// object of one of its entities (its values that entity's), an update of an earlier insert
/// by its ref, or a delete. What no schema can say stays the server's to answer: whether an
/// ID names an object that exists (404 or 422 `invalid-relationship`), and what a ref names.
struct TransactionSchemas {
    let model: ManagedObjectModel

    /// The schemas to add, by name: `TransactionRequest` (replacing the generic one),
    /// `TransactionOperation`, `RefUpdateOperation`, `DeleteOperation`, and per entity
    /// `EInsertOperation` and `EUpdateOperation`.
    var components: [(String, JSONValue)] {
        var result: [(String, JSONValue)] = [("TransactionRequest", request), ("TransactionOperation", operation),
                                             ("RefUpdateOperation", refUpdate), ("DeleteOperation", delete)]
        for entity in model.entities {
            let schemas = EntitySchemas(entity: entity, model: model)
            result.append((entity.name + "InsertOperation", object(required: ["op", "entity"] + (schemas.hasRequiredAttributes ? ["values"] : []), [
                ("op", Self.constant("insert")),
                ("entity", Self.constant(entity.name)),
                ("ref", .object([("type", .string("string")), ("minLength", .number("1")),
                                 ("description", .string("A name later operations use where an object ID goes."))])),
                ("values", schemas.transactionValues(requiring: true)),
            ])))
            result.append((entity.name + "UpdateOperation", object(required: ["op", "object"], [
                ("op", Self.constant("update")),
                ("object", EntitySchemas.id(of: entity.name)),
                ("version", EntitySchemas.version("The version the update is based on.")),
                ("values", schemas.transactionValues(requiring: false)),
            ])))
        }
        return result
    }

    private var request: JSONValue {
        object(required: ["operations"], [
            ("operations", .object([("type", .string("array")), ("items", reference("TransactionOperation"))])),
        ])
    }

    private var operation: JSONValue {
        // An abstract entity has no objects of its own: no insert, and no ID to update.
        let choices = model.entities.filter { !$0.isAbstract }.flatMap { [reference($0.name + "InsertOperation"), reference($0.name + "UpdateOperation")] }
            + [reference("RefUpdateOperation"), reference("DeleteOperation")]
        return .object([("oneOf", .array(choices))])
    }

    /// An update of an object inserted earlier in the transaction, named by its ref: its
    /// values are those of the ref's entity, which only the server can tell.
    private var refUpdate: JSONValue {
        object(required: ["op", "object"], [
            ("op", Self.constant("update")),
            ("object", .object([("type", .string("string")), ("pattern", .string(refPattern)),
                                ("description", .string("The ref of an earlier insert."))])),
            ("version", EntitySchemas.version("The version the update is based on.")),
            ("values", .object([("type", .string("object"))])),
        ])
    }

    private var delete: JSONValue {
        object(required: ["op", "object"], [
            ("op", Self.constant("delete")),
            ("object", .object([("type", .string("string")), ("minLength", .number("1")),
                                ("description", .string("An object ID, or the ref of an earlier insert."))])),
            ("version", EntitySchemas.version("The version the delete is based on.")),
        ])
    }

    /// Any text but an object ID of the model (a lookahead: a `not` schema is one that Apple's
    /// swift-openapi-generator skips).
    private var refPattern: String {
        "^(?!" + ModelParameterSchemas.alternation(model.entities.map(\.name)) + "/[1-9][0-9]*$)."
    }

    /// One value only: an enum of one, which generators make a typed enum (a `const` they do not).
    private static func constant(_ value: String) -> JSONValue {
        .object([("type", .string("string")), ("enum", .array([.string(value)]))])
    }

    private func reference(_ name: String) -> JSONValue { .object([("$ref", .string("#/components/schemas/" + name))]) }

    private func object(required: [String], _ properties: [(String, JSONValue)]) -> JSONValue {
        .object([("type", .string("object")), ("required", .array(required.map { .string($0) })),
                 ("properties", .object(properties)), ("additionalProperties", .bool(false))])
    }
}
