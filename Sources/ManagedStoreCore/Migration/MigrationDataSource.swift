/// What a migration plan depends on in the stored data, read from the store as it is (tables
/// and columns under the source model's names), in the transaction that opens it or in a
/// read-only look: how many objects an entity has, how many lack a value, whether a new
/// uniqueness constraint already holds. Each store answers in its own query language.
package protocol MigrationDataSource {
    /// How many objects `entity` (a source entity) has.
    func objectCount(_ entity: Entity) throws(StoreError) -> Int
    /// The objects of `entity` whose attribute `column` holds no value.
    func nullCount(_ entity: Entity, column: String) throws(StoreError) -> Int
    /// The objects of `entity` whose to-one `relationship` holds no object.
    func missingLinkCount(_ entity: Entity, _ relationship: Relationship, model: ManagedObjectModel) throws(StoreError) -> Int
    /// Values that more than one object would share under a uniqueness constraint, and how
    /// many objects share them; nil when none do. Each part is an entity (a source entity) and
    /// how its values are found; a constraint of a parent entity spans several, compared with
    /// each other. Objects with no value among them never conflict (as in a unique index).
    func firstDuplicate(across parts: [(entity: Entity, values: [MigrationValue])]) throws(StoreError) -> (values: [AttributeValue], count: Int)?
    /// How many keys more than one of `entities` (source entities) hold.
    func sharedKeyCount(_ entities: [Entity]) throws(StoreError) -> Int
}

/// How a value of a column is found for a uniqueness check: the stored column, the column
/// with a default in place of no value (an attribute that becomes required), or a constant
/// (a new attribute, which every existing object gets as its default).
package enum MigrationValue {
    case column(String, AttributeType)
    case columnOrDefault(String, AttributeValue, AttributeType)
    case constant(AttributeValue, AttributeType)

    package var type: AttributeType {
        switch self {
        case .column(_, let type), .columnOrDefault(_, _, let type), .constant(_, let type): return type
        }
    }
}
