import Dispatch
import Foundation

/// Blocks until SIGINT or SIGTERM, so the server can stop cleanly (answering waiting requests).
enum SignalWaiter {
    static func waitForTermination() {
        let done = DispatchSemaphore(value: 0)
        var sources: [DispatchSourceSignal] = []
        for signalNumber in [SIGINT, SIGTERM] {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler { done.signal() }
            source.resume()
            sources.append(source)
        }
        done.wait()
        sources.forEach { $0.cancel() }
    }
}
