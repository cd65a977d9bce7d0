import Foundation
import Synchronization

/// Where the server's log lines go (standard error): whole lines, appended by any thread to a
/// buffer of its own and written by one writer thread in batches, every few milliseconds.
///
/// A request's line costs an append under a lock no other front thread takes, not a `write`
/// system call: the per-request log is on by default, and a write per request cost a large share
/// of a GET. (One buffer for all threads was contended when a group commit resumed dozens of
/// connections at once.) A line is never torn (it is appended whole, and a batch is written
/// whole) and never lost: the writer writes within `interval` of a line, `flush()` writes at once
/// (a shutdown, a failed start, and every line that is not a request's: those are rare), and the
/// process's exit flushes what is left. Lines of one thread keep their order; lines of several
/// threads within one batch may be written in another order than they were appended. When the
/// writer falls behind (a full pipe), appenders write the batch themselves rather than let a
/// buffer grow without bound.
public final class LogSink: Sendable {
    /// The process's standard error, as the server writes it.
    public static let standardError = LogSink(fileDescriptor: STDERR_FILENO)

    /// How long a line may wait in a buffer, in seconds.
    public static let interval = 0.01
    /// Past this many buffered bytes in one buffer, the appender writes the batch itself.
    static let highWater = 1 << 20
    /// Buffers, one per appending thread up to this many (threads beyond share them).
    static let shardCount = 16

    /// One thread's buffer.
    private final class Shard: Sendable {
        let bytes = Mutex<[UInt8]>([])
    }

    private let destination: @Sendable ([UInt8]) -> Void
    private let shards: [Shard] = (0..<LogSink.shardCount).map { _ in Shard() }
    private let writerStarted = Atomic<Bool>(false)
    /// Serializes writes to the destination, so that batches go out in the order they were taken.
    private let writing = Mutex(())

    /// Lines written to `fileDescriptor`.
    public convenience init(fileDescriptor: Int32) {
        self.init { batch in Self.writeAll(batch, to: fileDescriptor) }
    }

    /// Lines handed to `destination`, a batch of whole lines at a time, one batch at a time.
    public init(destination: @escaping @Sendable ([UInt8]) -> Void) {
        self.destination = destination
    }

    /// Appends whole lines (each ending in a newline); they are written within `interval`.
    public func append(_ line: UnsafeRawBufferPointer) {
        let overfull = shards[Self.threadShard].bytes.withLock { bytes -> Bool in
            bytes.append(contentsOf: line)
            return bytes.count > Self.highWater
        }
        if !writerStarted.load(ordering: .relaxed), !writerStarted.exchange(true, ordering: .acquiringAndReleasing) {
            startWriterThread()
        }
        if overfull { flush() }
    }

    public func append(_ line: String) {
        var line = line
        line.withUTF8 { append(UnsafeRawBufferPointer($0)) }
    }

    /// Writes every line appended so far, before returning.
    public func flush() {
        writing.withLock { _ in
            var batch: [UInt8] = []
            for shard in shards {
                shard.bytes.withLock { bytes in
                    if batch.isEmpty { swap(&batch, &bytes) } else if !bytes.isEmpty { batch += bytes; bytes.removeAll(keepingCapacity: true) }
                }
            }
            if !batch.isEmpty { destination(batch) }
        }
    }

    private func startWriterThread() {
        Self.registerExitFlush()
        let thread = Thread { [self] in
            while true {
                Thread.sleep(forTimeInterval: Self.interval)
                flush()
            }
        }
        thread.name = "managedstore-log"
        thread.start()
    }

    // MARK: Threads' buffers

    /// The calling thread's buffer, given out in turn at a thread's first line.
    private static var threadShard: Int {
        if let given = pthread_getspecific(shardKey) { return Int(bitPattern: given) - 1 }
        let index = nextShard.add(1, ordering: .relaxed).oldValue % shardCount
        pthread_setspecific(shardKey, UnsafeRawPointer(bitPattern: index + 1))
        return index
    }

    private static let nextShard = Atomic<Int>(0)
    private static let shardKey: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    /// Writes all of `bytes`, however many calls it takes (a pipe may take part of a batch).
    private static func writeAll(_ bytes: [UInt8], to fileDescriptor: Int32) {
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let written = write(fileDescriptor, raw.baseAddress! + offset, raw.count - offset)
                if written < 0 {
                    if errno == EINTR || errno == EAGAIN { continue }
                    return  // the log's reader is gone; the server goes on
                }
                offset += written
            }
        }
    }

    // MARK: Exit

    private static let exitFlushRegistered = Mutex(false)

    /// Has the process flush standard error's sink when it exits (another sink, a test's, is
    /// flushed by its owner).
    private static func registerExitFlush() {
        exitFlushRegistered.withLock { registered in
            guard !registered else { return }
            registered = true
            atexit { LogSink.standardError.flush() }
        }
    }
}
