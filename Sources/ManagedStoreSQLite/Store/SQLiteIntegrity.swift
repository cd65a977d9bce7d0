import ManagedStoreCore

/// The SQLite store's own checks (`PersistentStoreCoordinator.checkIntegrity`).
enum SQLiteIntegrity {
    /// SQLite's integrity check, every stored link pointing at an existing object, versions at
    /// least 1, and the key sequence ahead of every key: the problems found.
    static func problems(_ connection: SQLiteConnection, model: ManagedObjectModel) throws -> [String] {
        var problems: [String] = []
        let verdict = try connection.withStatement("PRAGMA integrity_check") { s throws(StoreError) in try s.step() ? s.text(0) : "" }
        if verdict != "ok" { problems.append("integrity_check: \(verdict)") }
        for entity in model.schema {
            if let n = try connection.scalarInt("SELECT count(*) FROM \(entity.table) WHERE \"_version\" < 1"), n > 0 {
                problems.append("\(entity.name): \(n) rows with a version below 1")
            }
            let maxKey = try connection.scalarInt("SELECT max(\"_pk\") FROM \(entity.table)") ?? 0
            // Its hierarchy's keys come from one sequence (the root's; older stores kept one each).
            let sharers = entity.keySharers.map { "'\(model.schema[$0].name)'" }.joined(separator: ", ")
            let sequence = try connection.scalarInt("SELECT max(\"max\") FROM \"_sequence\" WHERE \"entity\" IN (\(sharers))") ?? 0
            if maxKey > sequence { problems.append("\(entity.name): key \(maxKey) is past the sequence (\(sequence))") }
            for relationship in entity.relationships {
                let destination = model.schema[relationship.destinationIndex]
                switch relationship.sql {
                case .foreignKey(let column):
                    let sql = "SELECT count(*) FROM \(entity.table) AS t WHERE t.\(column) IS NOT NULL "
                        + "AND NOT EXISTS (SELECT 1 FROM \(destination.kindsSource(model)) AS d WHERE d.\"_pk\" = t.\(column))"
                    if let n = try connection.scalarInt(sql), n > 0 {
                        problems.append("\(entity.name).\(relationship.name): \(n) links to missing \(destination.name) objects")
                    }
                case let .joinTable(table, ownColumn, _):
                    let sql = "SELECT count(*) FROM \(table) AS j WHERE NOT EXISTS "
                        + "(SELECT 1 FROM \(model.linkOwner(of: entity, relationship).kindsSource(model)) AS e WHERE e.\"_pk\" = j.\(ownColumn))"
                    if let n = try connection.scalarInt(sql), n > 0 {
                        problems.append("\(entity.name).\(relationship.name): \(n) join rows for missing \(entity.name) objects")
                    }
                case .inverseForeignKey:
                    break  // checked from the side that stores the key
                }
            }
        }
        return problems
    }
}
