/// How a save resolves a conflict with changes another context committed first [NSMergePolicy].
///
/// Only `error` exists so far: the save fails with every conflict listed and nothing is
/// written. The per-property policies (store-trump, object-trump, overwrite, rollback) come
/// next; they need the conflict's cached, persisted and object snapshots, which every
/// `MergeConflict` already carries.
public enum MergePolicy: String, Sendable, Hashable, CaseIterable {
    /// NSErrorMergePolicy: a conflicting save fails; nothing is written.
    case error
}
