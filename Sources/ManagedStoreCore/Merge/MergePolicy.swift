/// How a save resolves conflicts with changes committed elsewhere after the version it was
/// based on [NSMergePolicy], property by property.
///
/// For an object based on version B and now at version S in the store, R the properties this
/// context changed and C the properties the store changed after B (from the persistent
/// history; every property when the history no longer reaches B):
///
/// | policy | on conflict |
/// |---|---|
/// | `error` | the save fails with every conflict; nothing is written |
/// | `storeTrump` | R minus C is saved; the store's values win for R ∩ C |
/// | `objectTrump` | all of R is saved; the store's other changes stay |
/// | `overwrite` | R is saved, and the properties in C minus R go back to their values at B |
/// | `rollback` | nothing of the object is saved; it takes the store's values |
///
/// An object this context deleted and the store changed stays (with the store's values) under
/// `storeTrump` and `rollback`, and is deleted under `objectTrump` and `overwrite`. Inserts that
/// break a uniqueness constraint resolve too: `objectTrump` updates the object already holding
/// the values with the insert's (an upsert), `overwrite` replaces its values (what the insert
/// left unset goes back to its default), `storeTrump` and `rollback` keep it as it is; several
/// inserts of one key in one save collapse into one object. Relationships are properties like
/// any other, and their inverses stay consistent.
public enum MergePolicy: Sendable {
    /// NSErrorMergePolicy: a conflicting save fails; nothing is written.
    case error
    /// NSMergeByPropertyStoreTrumpMergePolicy.
    case storeTrump
    /// NSMergeByPropertyObjectTrumpMergePolicy.
    case objectTrump
    /// NSOverwriteMergePolicy.
    case overwrite
    /// NSRollbackMergePolicy.
    case rollback
    /// Conflicts resolved by code of your own.
    case custom(any MergeConflictResolver)

    /// The five built-in policies.
    public static let builtIn: [MergePolicy] = [.error, .storeTrump, .objectTrump, .overwrite, .rollback]

    /// The policy's name: `error`, `store-trump`, `object-trump`, `overwrite`, `rollback`, or
    /// the custom resolver's.
    public var name: String {
        switch self {
        case .error: return "error"
        case .storeTrump: return "store-trump"
        case .objectTrump: return "object-trump"
        case .overwrite: return "overwrite"
        case .rollback: return "rollback"
        case .custom(let resolver): return resolver.name
        }
    }

    /// The built-in policy called `name`; nil for any other name.
    public init?(name: String) {
        guard let policy = Self.builtIn.first(where: { $0.name == name }) else { return nil }
        self = policy
    }
}

/// Resolves a save's conflicts in code [a custom NSMergePolicy subclass].
///
/// `resolve` is called on the saving context's queue with every conflict of the save, after
/// the context took in the store's state of each conflicting object: each object now holds the
/// store's values for the properties this context did not change, its own values for the ones
/// it did (`MergeConflict.changedProperties`), and is based on the store's version. Change the
/// objects as you see fit (set values, call `rollbackChanges(of:)`, delete), and return: the save
/// then runs again. Throw to fail the save with the conflicts.
public protocol MergeConflictResolver: Sendable {
    /// A name for logs and answers (`Merge-Policy-Applied`).
    var name: String { get }
    func resolve(_ conflicts: [MergeConflict], constraintConflicts: [ConstraintConflict], in context: ManagedObjectContext) throws
}
