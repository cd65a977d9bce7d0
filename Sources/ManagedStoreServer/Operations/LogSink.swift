import Foundation
import Synchronization

/// Where the server's log lines go (standard error): whole lines, appended by any thread to one
/// buffer and written by one writer thread in batches, every few milliseconds.
///
/// A request's line costs an append under a short lock, not a `write` system call: the per-request
/// log is on by default, and a write per request cost a large share of a GET. A line is never
/// torn (it is appended whole, and a batch is written whole) and never lost: the writer writes
/// within `interval` of a line, `flush()` writes at once (a shutdown, a failed start, and every
/// line that is not a request's: those are rare, and their order beside the requests' is kept),
/// and the process's exit flushes what is left. When the writer falls behind (a full pipe),
/// appenders write the batch themselves rather than let the buffer grow without bound.
public final class LogSink: Sendable {
    /// The process's standard error, as the server writes it.
    public static let standardError = LogSink(fileDescriptor: STDERR_FILENO)

    /// How long a line may wait in the buffer, in seconds.
    public static let interval = 0.01
    /// Past this many buffered bytes, the appender writes the batch itself.
    static let highWater = 4 << 20

    private struct Buffer: ~Copyable {
        var bytes: [UInt8] = []
        var writerStarted = false
    }

    private let destination: @Sendable ([UInt8]) -> Void
    private let buffer = Mutex(Buffer())
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
        let (startWriter, overfull) = buffer.withLock { state -> (Bool, Bool) in
            state.bytes.append(contentsOf: line)
            let start = !state.writerStarted
            state.writerStarted = true
            return (start, state.bytes.count > Self.highWater)
        }
        if startWriter { startWriterThread() }
        if overfull { flush() }
    }

    public func append(_ line: String) {
        var line = line
        line.withUTF8 { append(UnsafeRawBufferPointer($0)) }
    }

    /// Writes every line appended so far, before returning.
    public func flush() {
        writing.withLock { _ in
            let batch = buffer.withLock { state -> [UInt8] in
                var taken: [UInt8] = []
                swap(&taken, &state.bytes)
                return taken
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
