/// The SQL schema of a model: a table per entity, foreign-key columns for to-one relationships,
/// join tables for many-to-many, indexes and unique indexes, and ManagedStore's own tables.
enum StoreSchema {
    /// Statements that create an empty store for `model`.
    static func createStatements(for model: ManagedObjectModel) -> [String] {
        var statements: [String] = [
            "CREATE TABLE \"_metadata\" (\"key\" TEXT PRIMARY KEY, \"value\" TEXT NOT NULL)",
            // The largest primary key handed out per entity; keys are never reused, so an object
            // ID (and its URI) never comes to name a different object after a delete.
            "CREATE TABLE \"_sequence\" (\"entity\" TEXT PRIMARY KEY, \"max\" INTEGER NOT NULL)",
        ]
        for entity in model.schema {
            var columns = ["\"_pk\" INTEGER PRIMARY KEY", "\"_version\" INTEGER NOT NULL"]
            for attribute in entity.attributes {
                columns.append(quoteIdentifier(attribute.name) + " " + columnType(attribute.type))
            }
            for r in entity.foreignKeyRelationships {
                columns.append(quoteIdentifier(entity.relationships[r].name) + " INTEGER")
            }
            statements.append("CREATE TABLE \(entity.table) (\(columns.joined(separator: ", ")))")
            // Finding the objects that point at one object (a to-many fault, a delete rule) must
            // not scan the table: index each foreign key.
            for r in entity.foreignKeyRelationships {
                let name = entity.relationships[r].name
                statements.append("CREATE INDEX \(quoteIdentifier("\(entity.name)_fk_\(name)")) ON \(entity.table) (\(quoteIdentifier(name)))")
            }
            for (i, constraint) in entity.uniquenessConstraints.enumerated() {
                let list = constraint.map { quoteIdentifier(entity.attributes[$0].name) }.joined(separator: ", ")
                statements.append("CREATE UNIQUE INDEX \(quoteIdentifier("\(entity.name)_unique_\(i)")) ON \(entity.table) (\(list))")
            }
            for (i, index) in entity.indexes.enumerated() {
                let list = index.map(quoteIdentifier).joined(separator: ", ")
                statements.append("CREATE INDEX \(quoteIdentifier("\(entity.name)_index_\(i)")) ON \(entity.table) (\(list))")
            }
            for relationship in entity.relationships {
                guard case let .joinTable(table, ownColumn, _) = relationship.storage, ownColumn == "\"a\"" else { continue }
                statements.append("CREATE TABLE \(table) (\"a\" INTEGER NOT NULL, \"b\" INTEGER NOT NULL, PRIMARY KEY (\"a\", \"b\")) WITHOUT ROWID")
                let reverse = quoteIdentifier(String(table.dropFirst().dropLast()) + "_b")
                statements.append("CREATE INDEX \(reverse) ON \(table) (\"b\", \"a\")")
            }
        }
        return statements
    }

    static func columnType(_ type: AttributeType) -> String {
        switch type {
        case .integer16, .integer32, .integer64, .boolean: return "INTEGER"
        case .double, .float, .date: return "REAL"
        case .string, .uuid, .uri: return "TEXT"
        case .decimal: return "TEXT COLLATE \(SQLFunctions.decimalCollation)"
        case .binary: return "BLOB"
        }
    }
}
