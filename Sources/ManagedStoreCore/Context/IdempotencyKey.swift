import Foundation

/// A caller's name for one write, so that the write happens once however often it is retried
/// [Stripe's `Idempotency-Key`, and the IETF draft of that header]: a sync client or a job
/// queue that lost track of whether a save went through saves again under the same key, and
/// the store answers with what the first save stored instead of writing twice.
public struct IdempotencyKey: Sendable, Hashable, CustomStringConvertible {
    public let value: String

    /// The most characters a key may have.
    public static let maxLength = 255

    /// A key of 1 to 255 visible ASCII characters (`!` to `~`); nil for anything else.
    public init?(_ value: String) {
        let utf8 = value.utf8
        guard !utf8.isEmpty, utf8.count <= Self.maxLength, utf8.allSatisfy({ $0 >= 0x21 && $0 <= 0x7E }) else { return nil }
        self.value = value
    }

    public var description: String { value }
}

/// What a write under an idempotency key left in the store, found again by a retry.
public struct IdempotencyRecord: Sendable, Hashable {
    public let key: IdempotencyKey
    /// What the caller said identifies its request (a digest of it, say): a retry must give
    /// the same, or it is another request under a key already used.
    public let fingerprint: [UInt8]
    /// The answer the caller stored with the write, as it gave it.
    public let answer: [UInt8]
    /// When the write committed (by this machine's clock).
    public let created: Date

    public init(key: IdempotencyKey, fingerprint: [UInt8], answer: [UInt8], created: Date) {
        self.key = key
        self.fingerprint = fingerprint
        self.answer = answer
        self.created = created
    }
}

/// How a unit of work under an idempotency key went (`PersistentStoreCoordinator.performOnce`).
public enum IdempotentOutcome<Result> {
    /// The key was new (or its record had expired): the work ran, and returned this. What it
    /// wrote and its answer, if it gave one, are in the store together.
    case performed(Result)
    /// The work ran before under this key, for the same request: it did not run again; this
    /// is what was stored then.
    case replayed(IdempotencyRecord)
    /// The key was used before for another request (another fingerprint): nothing ran.
    case keyReused(IdempotencyRecord)
}

extension IdempotentOutcome: Sendable where Result: Sendable {}
