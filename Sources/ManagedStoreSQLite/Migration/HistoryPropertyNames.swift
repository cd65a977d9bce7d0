import ManagedStoreCore

/// Renames (or removes) property names in the persistent history's change rows after a
/// migration renamed (or removed) the properties: a change row names the properties it
/// touched as the members of its `previous` JSON object (and, in rows of format 3, in its
/// `properties` array too). Without this, a merge policy asking which properties the store
/// changed after a version would miss a renamed property's changes from before the
/// migration, and a new property that took a removed one's name would inherit its changes.
struct HistoryPropertyNames {
    let connection: SQLiteConnection

    /// `renames`: per entity name (as the rows now name it), per old property name, its new
    /// name, or nil for a property removed.
    func rename(_ renames: [String: [String: String?]]) throws(StoreError) {
        for (entity, names) in renames.sorted(by: { $0.key < $1.key }) {
            // Read first, write after: the rows that change are collected, not updated under a running SELECT.
            var changed: [(token: Int64, pk: Int64, properties: String?, previous: String?)] = []
            try connection.withStatement(#"""
                SELECT "token", "pk", "properties", "previous" FROM "_history_change"
                WHERE "entity" = ? AND ("properties" IS NOT NULL OR "previous" IS NOT NULL)
                """#) { s throws(StoreError) in
                s.bindText(entity, at: 1)
                while try s.step() {
                    let properties = s.isNull(2) ? nil : s.text(2), previous = s.isNull(3) ? nil : s.text(3)
                    let newProperties = properties.flatMap { HistoryPropertyRenaming.renamedArray($0, names) } ?? properties
                    let newPrevious = previous.flatMap { HistoryPropertyRenaming.renamedObject($0, names) } ?? previous
                    if newProperties != properties || newPrevious != previous {
                        changed.append((s.int64(0), s.int64(1), newProperties, newPrevious))
                    }
                }
            }
            for row in changed {
                try connection.withStatement(#"""
                    UPDATE "_history_change" SET "properties" = ?, "previous" = ? WHERE "token" = ? AND "entity" = ? AND "pk" = ?
                    """#) { s throws(StoreError) in
                    s.bind(row.properties.map(AttributeValue.string) ?? .null, at: 1)
                    s.bind(row.previous.map(AttributeValue.string) ?? .null, at: 2)
                    s.bind(row.token, at: 3)
                    s.bindText(entity, at: 4)
                    s.bind(row.pk, at: 5)
                    try s.execute()
                }
            }
        }
    }
}
