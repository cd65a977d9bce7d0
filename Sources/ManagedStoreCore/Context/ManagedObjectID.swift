import Foundation
import Synchronization

/// Hands out temporary keys, unique in the process, to objects inserted but not yet saved.
private let temporaryKeyCounter = Atomic<UInt64>(0)

/// The identity of an object in a store [NSManagedObjectID]: Sendable, so this (not the
/// object) is what crosses from one context or task to another.
///
/// An inserted object has a temporary ID until it is saved or `obtainPermanentIDs` is called;
/// then it has a permanent one naming its primary key. The URI form is
/// `managedstore://<store-uuid>/<Entity>/p<pk>` (`t<n>` for a temporary ID).
public struct ManagedObjectID: Sendable, Hashable, Codable, CustomStringConvertible {
    package enum Key: Hashable, Sendable {
        case permanent(Int64)
        case temporary(UInt64)
    }

    /// The UUID of the store the object belongs to.
    public let storeIdentifier: UUID
    public let entityName: String
    let key: Key

    package init(storeIdentifier: UUID, entityName: String, key: Key) {
        self.storeIdentifier = storeIdentifier
        self.entityName = entityName
        self.key = key
    }

    public static func == (lhs: ManagedObjectID, rhs: ManagedObjectID) -> Bool {
        lhs.key == rhs.key && lhs.entityName == rhs.entityName && lhs.storeIdentifier == rhs.storeIdentifier
    }

    /// Hashes the key only: IDs with the same key in another entity or store are rare in one
    /// table, equality still compares everything, and a save hashes every ID it touches
    /// several times (hashing the UUID and the name was a large share of an insert).
    public func hash(into hasher: inout Hasher) {
        switch key {
        case .permanent(let pk): hasher.combine(pk)
        case .temporary(let n): hasher.combine(~n)
        }
    }

    static func newTemporary(storeIdentifier: UUID, entityName: String) -> ManagedObjectID {
        let n = temporaryKeyCounter.wrappingAdd(1, ordering: .relaxed).newValue
        return ManagedObjectID(storeIdentifier: storeIdentifier, entityName: entityName, key: .temporary(n))
    }

    /// Parses `Entity/pk` (the `description` of a permanent ID) for the store `storeIdentifier`;
    /// nil unless the key is a positive integer. The entity is not checked against a model.
    init?(description text: String, storeIdentifier: UUID) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, let pk = Int64(parts[1]), pk > 0 else { return nil }
        self.init(storeIdentifier: storeIdentifier, entityName: String(parts[0]), key: .permanent(pk))
    }

    public var isTemporaryID: Bool { if case .temporary = key { return true } else { return false } }

    /// The primary key of a permanent ID; nil for a temporary one.
    public var primaryKey: Int64? { if case .permanent(let pk) = key { return pk } else { return nil } }

    /// `Task/42` (the API's form), or `Task/t7` for a temporary ID.
    public var description: String {
        switch key {
        case .permanent(let pk): return "\(entityName)/\(pk)"
        case .temporary(let n): return "\(entityName)/t\(n)"
        }
    }

    /// `managedstore://<store-uuid>/<Entity>/p<pk>` [URIRepresentation].
    public var uriRepresentation: URL {
        let suffix: String
        switch key {
        case .permanent(let pk): suffix = "p\(pk)"
        case .temporary(let n): suffix = "t\(n)"
        }
        return URL(string: "managedstore://\(storeIdentifier.uuidString)/\(entityName)/\(suffix)")!  // all parts are URL-safe
    }

    /// Parses a URI made by `uriRepresentation`; nil when it is not one. Use
    /// `PersistentStoreCoordinator.managedObjectID(forURIRepresentation:)` to also check that
    /// the store and entity are the coordinator's.
    public init?(uriRepresentation uri: URL) {
        guard uri.scheme == "managedstore", let host = uri.host, let store = UUID(uuidString: host) else { return nil }
        let parts = uri.path.split(separator: "/", omittingEmptySubsequences: true)
        guard parts.count == 2, let marker = parts[1].first else { return nil }
        let number = parts[1].dropFirst()
        guard !number.isEmpty, number.allSatisfy(\.isASCII), number.allSatisfy(\.isNumber) else { return nil }
        switch marker {
        case "p":
            guard let pk = Int64(number), pk > 0 else { return nil }
            self.init(storeIdentifier: store, entityName: String(parts[0]), key: .permanent(pk))
        case "t":
            guard let n = UInt64(number) else { return nil }
            self.init(storeIdentifier: store, entityName: String(parts[0]), key: .temporary(n))
        default:
            return nil
        }
    }

    public init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let url = URL(string: text), let id = ManagedObjectID(uriRepresentation: url) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a managedstore:// object ID URI: \(text)")
        }
        self = id
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(uriRepresentation.absoluteString)
    }
}
