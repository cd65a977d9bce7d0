import ManagedStoreCore

// Where the destinations of a relationship are read from, for the reads of many owners at once
// (`PGSession.destinationKeys`) and of one object's row with its destinations (a GET).

extension PGSchema {
    /// The destinations of a relationship that the owner's row does not hold: the table they
    /// are read from (as `d`), its owner and destination key columns, and their order (by key,
    /// after the place of each when the relationship is ordered). nil for a to-one whose key the
    /// owner's row holds.
    struct DestinationSource {
        let from: String
        let owner: String
        let destination: String
        let order: String
        /// Whether the rows read are the destinations' own (they hold the owner's key), whose
        /// attributes are `d`'s columns; else they are links, and `destination` names the row.
        let readsDestinationRows: Bool
    }

    func destinationSource(_ entity: Entity, _ r: Int) -> DestinationSource? {
        let relationship = entity.relationships[r]
        let source: (from: String, owner: String, destination: String)
        switch relationship.storage {
        case .foreignKey:
            return nil
        case .inverseForeignKey:
            source = (tables[relationship.destinationIndex].kindsSource, PGValues.quote(relationship.destinationKeyName), "_pk")
        case let .joinTable(table, isFirstSide):
            source = (PGValues.quote(table), isFirstSide ? "a" : "b", isFirstSide ? "b" : "a")
        }
        // The place sits beside the key that makes the link: in `d` either way.
        let key = "d.\(source.destination)"
        let order = relationship.positionName.map { "d.\(PGValues.quote($0)) NULLS LAST, \(key)" } ?? key
        return DestinationSource(from: "\(source.from) AS d", owner: "d.\(source.owner)", destination: key, order: order,
                                 readsDestinationRows: relationship.storage == .inverseForeignKey)
    }

    /// One object's row (`$1` its key) with an array of the destination keys of each
    /// relationship its row does not hold, in `relationships`' order: a GET in one statement.
    struct RowWithDestinations {
        let sql: String
        let relationships: [Int]
    }

    func rowWithDestinations(_ entity: Entity) -> RowWithDestinations {
        var arrays = ""
        var relationships: [Int] = []
        for r in entity.relationships.indices {
            guard let source = destinationSource(entity, r) else { continue }
            arrays += ", ARRAY(SELECT \(source.destination) FROM \(source.from) WHERE \(source.owner) = t._pk ORDER BY \(source.order))"
            relationships.append(r)
        }
        let table = self[entity]
        return RowWithDestinations(sql: "SELECT \(table.selectColumns)\(arrays) FROM \(table.table) AS t WHERE t._pk = $1",
                                   relationships: relationships)
    }
}
