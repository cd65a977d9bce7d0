import Foundation
import ManagedStoreCore

extension SQLiteStatement {
    /// Reads a column that holds a value of `type`: an attribute's value, or an object's
    /// primary key as its ID (nil for NULL). For dictionary and aggregate results.
    func propertyValue(_ column: Int32, as type: OperandType, model: ManagedObjectModel, storeIdentifier: UUID) -> PropertyValue {
        switch type {
        case .attribute(let attributeType):
            return .attribute(value(column, as: attributeType))
        case .object(let entity):
            return .object(optionalInt64(column).map {
                ManagedObjectID(storeIdentifier: storeIdentifier, entityName: model.schema[entity].name, key: .permanent($0))
            })
        }
    }
}
