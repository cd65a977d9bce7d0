#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Which context's block the current thread is running, if any: what `assertOnQueue` checks.
///
/// Every access to a context or one of its objects asks this, so it must be cheap. A thread
/// key read costs a few instructions; `DispatchQueue.getSpecific` takes a lock and a lookup
/// per call, a large share of a bulk insert. Contexts run code only through `perform` and `performAndWait`,
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

    /// The contexts whose blocks this thread is running further out, innermost first: a block of
    /// one context that called another's `performAndWait`, whose `queue.sync` ran on this same
    /// thread. A list of `Enclosing` nodes on the thread's stack; nil when no block is nested.
    private static let enclosingKey: pthread_key_t = {
        var key = pthread_key_t()
        let status = pthread_key_create(&key, nil)
        precondition(status == 0, "pthread_key_create failed (\(status))")
        return key
    }()

    /// One enclosing block: its context, and the node of the block around it.
    private struct Enclosing {
        let context: UnsafeMutableRawPointer
        let outer: UnsafeMutableRawPointer?
    }

    /// Runs `body` with the thread marked as running `context`'s block.
    static func run<T>(_ context: ManagedObjectContext, _ body: () throws -> T) rethrows -> T {
        let previous: UnsafeMutableRawPointer? = pthread_getspecific(key)
        // A block nested in another context's block (rare) remembers that one as enclosing; an
        // outermost block, the common case, does nothing more than before.
        if let previous { return try runNested(context, inside: previous, body) }
        pthread_setspecific(key, Unmanaged.passUnretained(context).toOpaque())
        defer { pthread_setspecific(key, nil) }
        return try body()
    }

    private static func runNested<T>(_ context: ManagedObjectContext, inside previous: UnsafeMutableRawPointer,
                                      _ body: () throws -> T) rethrows -> T {
        let outer: UnsafeMutableRawPointer? = pthread_getspecific(enclosingKey)
        var node = Enclosing(context: previous, outer: outer)
        return try withUnsafeMutablePointer(to: &node) { pointer in
            // The node lives until this closure returns, and the key is reset before it does.
            pthread_setspecific(enclosingKey, UnsafeMutableRawPointer(pointer))
            pthread_setspecific(key, Unmanaged.passUnretained(context).toOpaque())
            defer {
                pthread_setspecific(key, previous)
                pthread_setspecific(enclosingKey, outer)
            }
            return try body()
        }
    }

    /// True when this thread runs `context`'s block further out, around the current block: its
    /// queue is held by this thread, so waiting for it here would wait forever. A child context
    /// asked for data by a block of its parent (`ManagedObjectContext.askParent`) runs the
    /// parent's part right here instead, as a reentrant `performAndWait` would.
    static func encloses(_ context: ManagedObjectContext) -> Bool {
        let target = Unmanaged.passUnretained(context).toOpaque()
        var next: UnsafeMutableRawPointer? = pthread_getspecific(enclosingKey)
        while let raw = next {
            let node = raw.assumingMemoryBound(to: Enclosing.self).pointee
            if node.context == target { return true }
            next = node.outer
        }
        return false
    }
}
