import Foundation

// Persistent history [NSPersistentHistoryTransaction]: every committed save is recorded as a
// transaction with a token that only grows, its time, author and context, and per object the
// kind of change, the properties it touched and their values before. A store is read by many
// contexts, and by whatever they serve; history is how each learns what the others
// changed since it last looked, and how a merge policy knows which properties the store
// changed after the version a change was based on.

/// A position in the store's history: the token of one committed save [NSPersistentHistoryToken].
/// Tokens only grow; `zero` comes before every save.
public struct PersistentHistoryToken: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    public let rawValue: Int64

    public init(rawValue: Int64) { self.rawValue = rawValue }

    /// Reads the text form (`"19"`); nil unless it is a whole number, 0 or more.
    public init?(_ text: String) {
        guard let value = Int64(text), value >= 0 else { return nil }
        rawValue = value
    }

    /// Before the first save.
    public static let zero = PersistentHistoryToken(rawValue: 0)

    public var description: String { String(rawValue) }

    public static func < (a: PersistentHistoryToken, b: PersistentHistoryToken) -> Bool { a.rawValue < b.rawValue }
}

/// What happened to one object in a recorded save.
public enum PersistentHistoryChangeType: String, Sendable, Hashable {
    case insert, update, delete
}

/// The value of one property before a change, as the history keeps it.
public enum PersistentHistoryValue: Sendable, Hashable {
    /// An attribute's value before the change.
    case attribute(AttributeValue)
    /// A relationship, kept as what the change did to it: the destinations it gained and lost.
    /// (Keeping the whole previous set would make history grow with the square of a to-many's
    /// size as it fills up.)
    case destinations(added: [ManagedObjectID], removed: [ManagedObjectID])
}

/// One object changed by a recorded save [NSPersistentHistoryChange].
public struct PersistentHistoryChange: Sendable, Hashable {
    public let objectID: ManagedObjectID
    public let changeType: PersistentHistoryChangeType
    /// The properties the save changed: every property for an insert, none for a delete.
    public let updatedProperties: [String]
    /// The object's version after the change; nil when only relationships stored on other
    /// objects changed (a project whose task moved: its version stays), or for a delete.
    public let version: Int64?
    /// The values of `updatedProperties` before the change; for a delete, every property's.
    /// Empty for an insert.
    public let previousValues: [String: PersistentHistoryValue]

    package init(objectID: ManagedObjectID, changeType: PersistentHistoryChangeType, updatedProperties: [String], version: Int64?, previousValues: [String: PersistentHistoryValue]) {
        self.objectID = objectID
        self.changeType = changeType
        self.updatedProperties = updatedProperties
        self.version = version
        self.previousValues = previousValues
    }
}

/// One committed save [NSPersistentHistoryTransaction].
public struct PersistentHistoryTransaction: Sendable, Hashable {
    public let token: PersistentHistoryToken
    public let timestamp: Date
    /// The saving context's `transactionAuthor` [transactionAuthor].
    public let author: String?
    /// The saving context's name.
    public let contextName: String?
    public let changes: [PersistentHistoryChange]

    package init(token: PersistentHistoryToken, timestamp: Date, author: String?, contextName: String?, changes: [PersistentHistoryChange]) {
        self.token = token
        self.timestamp = timestamp
        self.author = author
        self.contextName = contextName
        self.changes = changes
    }
}
