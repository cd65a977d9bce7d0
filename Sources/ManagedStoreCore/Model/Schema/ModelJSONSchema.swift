/// The JSON Schema of the JSON model format: the one source of `openapi/model.schema.json`
/// (`managedstore model schema` prints it; a test keeps the file equal to it), and what
/// `managedstore model check` applies before reading a JSON model. An editor that knows JSON
/// Schema completes and checks a model file whose `"$schema"` names the file.
///
/// The schema says what each key is; what it cannot say (a default of the attribute's own
/// type, a destination that exists, an inverse that points back) the model reader checks.
package enum ModelJSONSchema {
    package static let text = #"""
        {
          "$schema": "https://json-schema.org/draft/2020-12/schema",
          "$id": "urn:managedstore:model-format:1",
          "title": "ManagedStore model",
          "description": "A data model in ManagedStore's JSON model format: what Core Data's .xcdatamodel holds, as JSON. managedstore model convert turns one into the other.",
          "type": "object",
          "required": ["name", "entities"],
          "additionalProperties": false,
          "properties": {
            "$schema": {"type": "string", "description": "Where this schema is, for editors; not read otherwise."},
            "name": {"type": "string", "minLength": 1, "description": "The model's name, shown by the server and recorded in every store made from it."},
            "version": {"type": "integer", "description": "The model's version (1 when left out). A store made from another version is migrated when it is opened (lightweight migration)."},
            "entities": {"type": "array", "items": {"$ref": "#/$defs/entity"}, "description": "The entities, each a table of objects."},
            "fetchRequests": {"type": "array", "items": {"$ref": "#/$defs/fetchRequest"}, "description": "Stored fetch requests (Core Data's fetch request templates), fetched by name with a value for each $VARIABLE."}
          },
          "$defs": {
            "identifier": {
              "type": "string",
              "pattern": "^[A-Za-z][A-Za-z0-9_]*$",
              "description": "Letters, digits and _, starting with a letter."
            },
            "renamingIdentifier": {
              "type": "string",
              "minLength": 1,
              "description": "The name this element had in the model version a store was made with: a migration keeps its data under the new name (Core Data's renaming identifier)."
            },
            "fetchRequest": {
              "type": "object",
              "required": ["name", "entity"],
              "additionalProperties": false,
              "properties": {
                "name": {"type": "string", "minLength": 1},
                "entity": {"$ref": "#/$defs/identifier"},
                "predicate": {"type": "string", "description": "NSPredicate format, with $NAME for each substitution variable."},
                "sort": {"type": "array", "items": {"type": "string", "pattern": "^-?[^-].*$"}, "description": "Key paths, each with - before it for descending."},
                "limit": {"type": "integer", "minimum": 1}
              }
            },
            "entity": {
              "type": "object",
              "required": ["name"],
              "additionalProperties": false,
              "properties": {
                "name": {"$ref": "#/$defs/identifier"},
                "parent": {"$ref": "#/$defs/identifier", "description": "The entity this one inherits from: its objects have the parent's properties, constraints and indexes too, and a fetch of the parent includes them."},
                "abstract": {"type": "boolean", "description": "An abstract entity has no objects of its own, only its sub-entities do (false when left out)."},
                "attributes": {"type": "array", "items": {"$ref": "#/$defs/attribute"}},
                "relationships": {"type": "array", "items": {"$ref": "#/$defs/relationship"}},
                "uniquenessConstraints": {"$ref": "#/$defs/propertyLists", "description": "Each a list of attribute names whose values no two objects share."},
                "indexes": {"$ref": "#/$defs/propertyLists", "description": "Each a list of property names the store indexes, in order."},
                "renamingIdentifier": {"$ref": "#/$defs/renamingIdentifier"},
                "fetchedProperties": {"type": "array", "items": {"$ref": "#/$defs/fetchedProperty"}, "description": "Fetched properties (Core Data's): each a fetch of another entity's objects, $FETCH_SOURCE in its predicate standing for the object asked; answered at GET /v1/objects/{Entity}/{pk}/{name}, never stored."}
              }
            },
            "fetchedProperty": {
              "type": "object",
              "required": ["name", "entity"],
              "additionalProperties": false,
              "properties": {
                "name": {"$ref": "#/$defs/identifier"},
                "entity": {"$ref": "#/$defs/identifier"},
                "predicate": {"type": "string", "description": "NSPredicate format; $FETCH_SOURCE is the object whose property is asked, $FETCH_SOURCE.key a value of it."}
              }
            },
            "attribute": {
              "type": "object",
              "required": ["name", "type"],
              "additionalProperties": false,
              "properties": {
                "name": {"$ref": "#/$defs/identifier"},
                "type": {"enum": ["integer16", "integer32", "integer64", "decimal", "double", "float", "string", "boolean", "date", "binary", "uuid", "uri"]},
                "optional": {"type": "boolean", "description": "Whether an object may be saved without a value (true when left out)."},
                "default": {"description": "The value a new object starts with, in the attribute's JSON form (a date as RFC 3339 text, binary as base64, a decimal as a number or text)."},
                "min": {"description": "The smallest value allowed, of the attribute's type."},
                "max": {"description": "The largest value allowed, of the attribute's type."},
                "minLength": {"type": "integer", "minimum": 0, "description": "For strings: the fewest characters allowed."},
                "maxLength": {"type": "integer", "minimum": 0, "description": "For strings: the most characters allowed."},
                "pattern": {"type": "string", "description": "For strings: a regular expression the whole value must match."},
                "valueTransformer": {"type": "string", "minLength": 1, "description": "For binary attributes: the value transformer of the Core Data Transformable it comes from. The bytes the transformer writes are kept and served as they are; only the app turns them into objects."},
                "transient": {"type": "boolean", "description": "A transient attribute (Core Data's isTransient): part of the model, never stored; an object holds its value in memory while it lives. Not in objects' JSON."},
                "renamingIdentifier": {"$ref": "#/$defs/renamingIdentifier"}
              }
            },
            "relationship": {
              "type": "object",
              "required": ["name", "destination", "inverse"],
              "additionalProperties": false,
              "properties": {
                "name": {"$ref": "#/$defs/identifier"},
                "destination": {"$ref": "#/$defs/identifier", "description": "The entity at the other end."},
                "inverse": {"type": ["string", "null"], "pattern": "^[A-Za-z][A-Za-z0-9_]*$", "description": "The destination's relationship back, or null for a one-way relationship (the key is required either way)."},
                "toMany": {"type": "boolean", "description": "A to-many relationship (false when left out: to-one)."},
                "deleteRule": {"enum": ["nullify", "cascade", "deny", "noAction"], "description": "What deleting an object does to its destinations (nullify when left out)."},
                "optional": {"type": "boolean", "description": "Whether an object may be saved without a destination (true when left out); a non-optional to-many means minCount 1, as in Core Data."},
                "minCount": {"type": "integer", "minimum": 0, "description": "For a to-many: the fewest destinations a saved object may hold."},
                "maxCount": {"type": "integer", "minimum": 0, "description": "For a to-many: the most destinations a saved object may hold."},
                "ordered": {"type": "boolean", "description": "For a to-many: its destinations keep the order they were given (false when left out)."},
                "renamingIdentifier": {"$ref": "#/$defs/renamingIdentifier"}
              }
            },
            "propertyLists": {
              "type": "array",
              "items": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/identifier"}}
            }
          }
        }
        """#
}
