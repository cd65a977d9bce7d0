import Dispatch
import Foundation

/// Catches SIGINT and SIGTERM so the server can stop cleanly (answering what it received).
///
/// Installed before the server starts listening: a signal that arrives between the start-up
/// line and the wait must not find the default action (ending the process at once).
final class SignalWaiter: @unchecked Sendable {
    // @unchecked Sendable: `received` is only touched under `lock`; the rest is constant.
    private let done = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var received = "SIGTERM"
    private let sources: [DispatchSourceSignal]

    /// Starts catching the signals now.
    init() {
        var sources: [DispatchSourceSignal] = []
        for signalNumber in [SIGINT, SIGTERM] {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            sources.append(source)
        }
        self.sources = sources
        for (source, name) in zip(sources, ["SIGINT", "SIGTERM"]) {
            source.setEventHandler { [self] in
                lock.lock()
                received = name
                lock.unlock()
                done.signal()
            }
            source.resume()
        }
    }

    /// Blocks until one of the signals arrived (since `init`); returns its name.
    func wait() -> String {
        done.wait()
        sources.forEach { $0.cancel() }
        lock.lock()
        defer { lock.unlock() }
        return received
    }
}
