/// One entity row as the store holds it: version, attribute values and stored to-one keys.
package struct StoredRow: Sendable {
    package var version: Int64
    /// Indexed like `Entity.attributes`.
    package var attributes: [AttributeValue]
    /// Indexed like `Entity.foreignKeyRelationships`: the destination's primary key or nil.
    package var foreignKeys: [Int64?]

    package init(version: Int64, attributes: [AttributeValue], foreignKeys: [Int64?]) {
        self.version = version
        self.attributes = attributes
        self.foreignKeys = foreignKeys
    }
}
