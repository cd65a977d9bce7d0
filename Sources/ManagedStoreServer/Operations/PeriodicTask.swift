import Foundation

/// Work the server does now and then in the background (pruning the history, expiring
/// idempotency records): run at once and then every `interval`, on a utility queue of its own,
/// one run at a time.
///
/// `@unchecked Sendable`: `timer` is set in `start` and `stop`, which the server calls once
/// each from one thread; the work runs on `queue` only.
final class PeriodicTask: @unchecked Sendable {
    private let queue: DispatchQueue
    private let interval: Double
    private let work: @Sendable () -> Void
    private var timer: DispatchSourceTimer?

    /// `interval` in seconds, kept between a quarter of a second and an hour.
    init(label: String, interval: Double, work: @escaping @Sendable () -> Void) {
        self.queue = DispatchQueue(label: label, qos: .utility)
        self.interval = min(3_600, max(0.25, interval))
        self.work = work
    }

    func start() {
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now(), repeating: interval)
        timer.setEventHandler { [work] in work() }
        timer.resume()
        self.timer = timer
    }

    /// Stops the timer; a run under way ends first.
    func stop() {
        timer?.cancel()
        timer = nil
        queue.sync {}
    }
}
