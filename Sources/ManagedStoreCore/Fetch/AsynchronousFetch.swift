import Synchronization

/// A fetch that runs on its context's queue a page at a time, reporting progress between pages
/// and stopping when cancelled [NSAsynchronousFetchRequest].
///
/// Between two pages the queue is free: other blocks of the context run while a long fetch
/// goes on. The pages of a context reading a store file are all read in one snapshot, so the
/// result is what `fetch(_:)` would have answered when the fetch began (the store's state then,
/// with the context's unsaved changes when the fetch ends; see `includesPendingChanges`).
public struct AsynchronousFetchRequest: Sendable {
    public var fetchRequest: FetchRequest
    /// Objects per page: how much the fetch reads in one turn on the queue, and how often it
    /// reports progress.
    public var pageSize: Int

    public init(_ fetchRequest: FetchRequest, pageSize: Int = 1000) {
        self.fetchRequest = fetchRequest
        self.pageSize = pageSize
    }
}

/// How far an asynchronous fetch has come [Progress].
public struct FetchProgress: Sendable, Hashable, CustomStringConvertible {
    /// Objects found so far.
    public var completedCount: Int
    /// Objects the fetch will find: counted when it begins (the final count once it has ended).
    public var totalCount: Int

    public init(completedCount: Int, totalCount: Int) {
        self.completedCount = completedCount
        self.totalCount = totalCount
    }

    /// From 0 to 1; 1 for a fetch that finds nothing.
    public var fractionCompleted: Double {
        totalCount > 0 ? min(1, Double(completedCount) / Double(totalCount)) : 1
    }

    public var description: String { "\(completedCount) of \(totalCount)" }
}

/// A started asynchronous fetch: its progress, and a way to stop it
/// [NSPersistentStoreAsynchronousResult]. Safe to use from any thread.
public final class AsynchronousFetch: Sendable {
    private let cancelRequested = Atomic<Bool>(false)
    private let latest = Mutex(FetchProgress(completedCount: 0, totalCount: 0))

    init() {}

    /// Progress as of the last page read.
    public var progress: FetchProgress { latest.withLock { $0 } }

    /// Stops the fetch before its next page; it then completes with `FetchError.cancelled`.
    /// No effect once it has completed.
    public func cancel() { cancelRequested.store(true, ordering: .relaxed) }

    public var isCancelled: Bool { cancelRequested.load(ordering: .relaxed) }

    func report(_ progress: FetchProgress) { latest.withLock { $0 = progress } }
}
