/// A stored row already read into memory, lent as a `StoredRowSource` (stores that copy a row
/// out to lend it); its to-many destinations are read when asked for.
package final class LentRow: StoredRowSource {
    private let row: StoredRow
    private let entity: Entity
    private let destinations: (_ relationship: Int) throws -> [Int64]

    /// `destinations(r)`: the keys of relationship `r`'s destinations, ascending, read in the
    /// same snapshot as the row.
    package init(row: StoredRow, entity: Entity, destinations: @escaping (_ relationship: Int) throws -> [Int64]) {
        self.row = row
        self.entity = entity
        self.destinations = destinations
    }

    package var version: Int64 { row.version }

    package func value(ofAttributeAt index: Int) -> AttributeValue { row.attributes[index] }

    package func writeJSON(ofAttributeAt index: Int, into writer: inout JSONWriter) { writer.write(row.attributes[index]) }

    package func storedForeignKey(ofRelationship relationship: Int) -> Int64?? {
        guard let position = entity.foreignKeyRelationships.firstIndex(of: relationship) else { return nil }
        return .some(row.foreignKeys[position])
    }

    package func forEachDestinationKey(ofRelationship relationship: Int, _ body: (Int64) throws -> Void) throws {
        for key in try destinations(relationship) { try body(key) }
    }
}

/// The keys of one fetch, found at once in a snapshot and handed out a few at a time
/// (`StoreSnapshot.openKeyStream`, for stores that do not page in the engine).
package final class ListedKeyStream: StoreKeyStream {
    private var keys: ArraySlice<Int64>

    package init(keys: [Int64]) { self.keys = keys[...] }

    package func next(_ count: Int) throws(FetchError) -> [Int64] {
        let page = keys.prefix(count)
        keys = keys.dropFirst(count)
        return Array(page)
    }
}
