#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Which context's block the current thread is running, if any: what `assertOnQueue` checks.
///
/// Every access to a context or one of its objects asks this, so it must be cheap. A thread
/// key read costs a few instructions; `DispatchQueue.getSpecific` cost about 190 per call,
/// a tenth of a bulk insert. Contexts run code only through `perform` and `performAndWait`,
/// which mark the thread for the length of the block and restore the previous mark after, so
/// a `performAndWait` on another context nested inside a block sees that context, as
/// `DispatchQueue.getSpecific` would.
enum RunningContext {
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        let status = pthread_key_create(&key, nil)
        precondition(status == 0, "pthread_key_create failed (\(status))")
        return key
    }()

    /// True when `context`'s block is running on this thread now.
    static func isRunning(_ context: ManagedObjectContext) -> Bool {
        // Optional explicitly: the C function's result is implicitly unwrapped, nil off any block.
        let running: UnsafeMutableRawPointer? = pthread_getspecific(key)
        return running == Unmanaged.passUnretained(context).toOpaque()
    }

    /// Runs `body` with the thread marked as running `context`'s block.
    static func run<T>(_ context: ManagedObjectContext, _ body: () throws -> T) rethrows -> T {
        let previous: UnsafeMutableRawPointer? = pthread_getspecific(key)
        pthread_setspecific(key, Unmanaged.passUnretained(context).toOpaque())
        defer { pthread_setspecific(key, previous) }
        return try body()
    }
}
