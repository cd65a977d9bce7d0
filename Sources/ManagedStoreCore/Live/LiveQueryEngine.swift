import Dispatch
import Foundation

/// Keeps live queries current: one window per distinct query, advanced once per commit (or
/// per run of commits that came together) from the persistent history, which records every
/// save, batch updates and deletes and other processes' saves included.
///
/// After a commit, in one read snapshot: the history since the engine's token says which
/// objects changed; each is read once (the snapshot's context keeps it for every window);
/// each window whose entity they are matches them with the in-memory evaluator and places them
/// by its sort, or is fetched again when its predicate or sort follows a relationship to an
/// entity the commit touched. A changed answer becomes steps (`LiveDiff`) for its subscribers.
/// The writer only signals the engine (`addCommitObserver`), and never waits for it.
///
/// `@unchecked Sendable`: everything but `pendingAdvance` and `windowCount` (the windows, their
/// index, the token, the progress rounds' state, the subscriptions' delivery state) is touched
/// only on `queue`; those two under `lock`.
package final class LiveQueryEngine: @unchecked Sendable {
    /// How long a window without subscribers is kept, so that a client that reconnects gets
    /// a diff instead of the whole answer.
    package static let unwatchedWindowLifetime: Duration = .seconds(60)
    /// Distinct objects one advance reads one by one; a bigger run of commits fetches every
    /// window again instead.
    static let changedObjectsLimit = 20_000
    /// History transactions read per query while advancing.
    static let historyPage = 1_000

    private unowned let coordinator: PersistentStoreCoordinator
    private let queue = DispatchQueue(label: "ManagedStore.live-queries")
    private let lock = NSLock()
    private var pendingAdvance = false
    private var windowCount = 0

    // On `queue` only:
    private var windows: [LiveWindowKey: LiveWindow] = [:]
    /// Every window's answer is current at this token (or at its own `since`, if later).
    private var token: PersistentHistoryToken = .zero
    private var ticker: DispatchSourceTimer?
    private let index = LiveWindowIndex()
    /// Subscriptions that hear of every run of commits (`subscribe(promptProgress:)`).
    private var promptSubscriptions: [ObjectIdentifier: LiveSubscription] = [:]
    /// Commits were read since the last progress round: subscribers whose answer they left as
    /// it was are owed a progress.
    private var progressDue = false
    private var lastProgressRound: DispatchTime?
    private var progressRoundScheduled = false

    init(coordinator: PersistentStoreCoordinator) {
        self.coordinator = coordinator
        coordinator.addCommitObserver { [weak self] in self?.committed() }
    }

    deinit { ticker?.cancel() }

    // MARK: Subscribing

    /// Starts a subscription to `spec`: `deliver` is called on the engine's queue, in order,
    /// first with the answer (`snapshot`), or, resuming from `since`, with a diff from it (or a
    /// `reset` when the engine no longer knows the answer at `since`). `isReady` says whether
    /// the subscriber can take another event now; while it cannot, changes are held back and
    /// later sent squashed into one diff. `promptProgress`: a progress after every run of
    /// commits that left the answer as it was, not at most once a second (an in-process
    /// controller, for which an event costs nothing on a wire).
    /// The query is checked first: a bad one throws here.
    package func subscribe(_ spec: LiveQuerySpec, since: PersistentHistoryToken? = nil, promptProgress: Bool = false,
                           isReady: @escaping @Sendable () -> Bool = { true },
                           deliver: @escaping @Sendable (LiveEvent) -> Void) throws(FetchError) -> LiveSubscription {
        _ = try coordinator.prepareFetch(spec.request)
        let subscription = LiveSubscription(engine: self, promptProgress: promptProgress, isReady: isReady, deliver: deliver)
        queue.async { [self] in join(subscription, spec, since: since) }
        return subscription
    }

    /// Live queries (windows) held now, shared or not.
    package var windowsHeld: Int {
        lock.lock()
        defer { lock.unlock() }
        return windowCount
    }

    private func join(_ subscription: LiveSubscription, _ spec: LiveQuerySpec, since: PersistentHistoryToken?) {
        guard !subscription.isCancelled else { return }
        advance()
        let window: LiveWindow
        do {
            if let existing = windows[spec.windowKey] {
                window = existing
            } else {
                window = try makeWindow(spec)
                windows[window.key] = window
                index.add(window)
                lock.lock()
                windowCount = windows.count
                lock.unlock()
                startTicking()
            }
        } catch {
            subscription.deliver(.failed(error))
            return
        }
        window.subscribers.append(subscription)
        if subscription.promptProgress { promptSubscriptions[ObjectIdentifier(subscription)] = subscription }
        window.unwatchedSince = nil
        subscription.window = window
        let now = currentToken(of: window)
        guard let since else {
            subscription.held = now
            subscription.deliver(.snapshot(token: now, members: window.members, more: window.more, isReset: false))
            return
        }
        subscription.held = since
        if since > now { return }  // a token of a commit this engine has not read yet: answered when it has
        catchUp(subscription, window, inRound: true)  // a new stream has had no progress yet
    }

    /// A window's answer, fetched in a snapshot together with the token it holds at.
    private func makeWindow(_ spec: LiveQuerySpec) throws(FetchError) -> LiveWindow {
        do {
            return try coordinator.withReadSnapshot { context, session in
                let at = try session.lastHistoryToken()
                let prepared = try context.prepare(spec.request)
                let window = LiveWindow(spec: spec, prepared: prepared, model: coordinator.model, at: at)
                try window.load(in: context)
                // With no other window, the engine has not been following: it starts here.
                if windows.isEmpty && token < at { token = at }
                return window
            }
        } catch let error as FetchError {
            throw error
        } catch let error as StoreError {
            throw .store(error)
        } catch {
            throw .store(StoreError(wrapping: error))
        }
    }

    private func currentToken(of window: LiveWindow) -> PersistentHistoryToken { max(window.since, token) }

    /// Sends `subscription` what turns the answer it holds into the current one: a progress
    /// when the answer is the same, a diff when the window still knows the answer it holds,
    /// else a reset. Held back while the subscriber is not ready. `held` is always the token
    /// of the last event delivered: the `from` the subscriber checks a diff against.
    ///
    /// A progress goes out only in a progress round (`inRound`), so that a stream hears one at
    /// most once a second, or to a subscription that asked for every one; otherwise the next
    /// round sends it.
    private func catchUp(_ subscription: LiveSubscription, _ window: LiveWindow, inRound: Bool = false) {
        guard let held = subscription.held else { return }
        let now = currentToken(of: window)
        guard held < now else { return }
        guard subscription.isReady() else {
            subscription.isBehind = true
            return
        }
        let mayProgress = inRound || subscription.promptProgress
        var change: (ops: [LiveOp], more: Bool)?
        if held >= window.since {
            change = nil
        } else if let (members, more) = window.answer(at: held) {
            let ops = LiveDiff.ops(from: members, to: window.members)
            change = ops.isEmpty && more == window.more ? nil : (ops, window.more)
        } else {
            subscription.isBehind = false
            subscription.held = now
            return subscription.deliver(.snapshot(token: now, members: window.members, more: window.more, isReset: true))
        }
        guard let change else {
            guard mayProgress else {
                progressDue = true
                return
            }
            subscription.isBehind = false
            subscription.held = now
            return subscription.deliver(.progress(token: now))
        }
        subscription.isBehind = false
        subscription.held = now
        subscription.deliver(.diff(from: held, to: now, ops: change.ops, more: change.more))
    }

    func leave(_ subscription: LiveSubscription) {
        queue.async {
            self.promptSubscriptions[ObjectIdentifier(subscription)] = nil
            guard let window = subscription.window else { return }
            subscription.window = nil
            window.subscribers.removeAll { $0 === subscription }
            if window.subscribers.isEmpty { window.unwatchedSince = .now() }
        }
    }

    // MARK: Advancing

    private func committed() {
        lock.lock()
        let start = windowCount > 0 && !pendingAdvance
        if start { pendingAdvance = true }
        lock.unlock()
        guard start else { return }
        queue.async { [self] in
            lock.lock()
            pendingAdvance = false
            lock.unlock()
            advance()
        }
    }

    /// Brings every window to the store's newest commit.
    private func advance() {
        guard !windows.isEmpty else { return }
        do {
            try coordinator.withReadSnapshot { context, session in try advance(context, session) }
        } catch {
            // A store that cannot be read now: the next commit (or tick) tries again.
        }
    }

    private func advance(_ context: ManagedObjectContext, _ session: any StoreReadSession) throws {
        let last = try session.lastHistoryToken()
        guard last > token else { return }
        let (changed, everything) = try changedObjects(after: token, upTo: last, session)
        var answers: [(LiveWindow, () throws -> (members: [LiveMember], more: Bool)?)] = []
        if everything {
            for window in windows.values { answers.append((window, { try window.fetchAnswer(in: context) })) }
        } else {
            let touched = Set(changed.keys.map(\.entityName))
            for window in index.following.values where !window.pathEntities.isDisjoint(with: touched) {
                answers.append((window, { try window.fetchAnswer(in: context) }))
            }
            for route in index.routes(changed, in: context).values {
                answers.append((route.window, { try route.window.incrementalAnswer(changed: route.objects, mayHaveLeft: route.mayHaveLeft, in: context) }))
            }
        }
        var changedWindows: [(LiveWindow, [LiveMember], Bool)] = []
        for (window, read) in answers where window.since < last {
            let answer: (members: [LiveMember], more: Bool)?
            do {
                answer = try read()
            } catch let error as FetchError {
                if case .store = error { throw error }  // the snapshot failed: every window tries again
                fail(window, error)
                continue
            }
            guard let answer else { continue }
            if answer.more == window.more && answer.members.count == window.members.count
                && zip(answer.members, window.members).allSatisfy({ $0.id == $1.id && $0.payload == $1.payload }) { continue }
            changedWindows.append((window, answer.members, answer.more))
        }
        token = last
        for (window, members, more) in changedWindows {
            let before = window.members
            let from = window.since
            window.replace(members: members, more: more, at: last)
            let ops = LiveDiff.ops(from: before, to: members)
            for subscription in window.subscribers {
                guard let held = subscription.held else { continue }
                if held >= from && !subscription.isBehind && subscription.isReady() {
                    subscription.held = last
                    subscription.deliver(.diff(from: held, to: last, ops: ops, more: more))
                } else {
                    catchUp(subscription, window)
                }
            }
        }
        // Subscribers whose answer did not change hear of it now if they asked, else in a
        // progress round.
        for subscription in promptSubscriptions.values {
            if let window = subscription.window { catchUp(subscription, window) }
        }
        progressDue = true
        progressRoundIfDue()
    }

    /// The objects the commits after `after` changed, each once with what the history says of
    /// it; `everything` when the history no longer reaches `after` (pruned) or the run of
    /// commits is too big to read object by object: then every window is fetched again.
    private func changedObjects(after: PersistentHistoryToken, upTo last: PersistentHistoryToken,
                                _ session: any StoreReadSession) throws -> (changed: [ManagedObjectID: ChangedObject], everything: Bool) {
        guard after >= (try session.oldestHistoryToken()) else { return ([:], true) }
        var changed: [ManagedObjectID: ChangedObject] = [:]
        var from = after
        while from < last {
            let page = try session.historyTransactions(after: from, limit: Self.historyPage, entities: nil)
            guard let end = page.last?.token else { break }
            for transaction in page where transaction.token <= last {
                for change in transaction.changes {
                    changed[change.objectID, default: ChangedObject(inserted: change.changeType == .insert)].add(change)
                }
            }
            if changed.count > Self.changedObjectsLimit { return ([:], true) }
            from = end
        }
        return (changed, false)
    }

    private func fail(_ window: LiveWindow, _ error: FetchError) {
        for subscription in window.subscribers {
            subscription.window = nil
            promptSubscriptions[ObjectIdentifier(subscription)] = nil
            subscription.deliver(.failed(error))
        }
        windows[window.key] = nil
        index.remove(window)
        lock.lock()
        windowCount = windows.count
        lock.unlock()
    }

    // MARK: Ticks

    /// A progress to every subscriber whose answer the commits read left as it was: at once when
    /// the last round was a second ago or more, else when it will be. So a progress comes at
    /// most once a second and at most a second after a commit, as the contract says, and a
    /// client that waits for its own write's token seldom waits long.
    private func progressRoundIfDue() {
        guard progressDue else { return }
        // (Not `DispatchTime(uptimeNanoseconds: 0)` for "never": dispatch reads 0 as now.)
        if let last = lastProgressRound, case let due = last + .seconds(1), DispatchTime.now() < due {
            guard !progressRoundScheduled else { return }
            progressRoundScheduled = true
            queue.asyncAfter(deadline: due) { [weak self] in
                guard let self else { return }
                progressRoundScheduled = false
                advance()
                progressRoundIfDue()
            }
            return
        }
        progressDue = false
        lastProgressRound = .now()
        for window in windows.values {
            for subscription in window.subscribers { catchUp(subscription, window, inRound: true) }
        }
    }

    /// Once a second: held-back changes to subscribers that can take them again, and windows
    /// unwatched too long dropped.
    private func startTicking() {
        guard ticker == nil else { return }
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + 1, repeating: 1)
        timer.setEventHandler { [weak self] in self?.tick() }
        timer.resume()
        ticker = timer
    }

    private func tick() {
        advance()
        let expiry = DispatchTime.now().uptimeNanoseconds
        let lifetime = UInt64(Self.unwatchedWindowLifetime.components.seconds) * 1_000_000_000
        for (key, window) in windows {
            if window.subscribers.isEmpty, let since = window.unwatchedSince, since.uptimeNanoseconds + lifetime < expiry {
                windows[key] = nil
                index.remove(window)
                continue
            }
            for subscription in window.subscribers where subscription.isBehind { catchUp(subscription, window) }
        }
        progressRoundIfDue()
        lock.lock()
        windowCount = windows.count
        lock.unlock()
    }
}

/// One subscriber of a live query. Cancel it to stop (the engine forgets it).
///
/// `@unchecked Sendable`: `held`, `isBehind` and `window` are touched only on
/// the engine's queue; `cancelled` under `lock`.
package final class LiveSubscription: @unchecked Sendable {
    private weak var engine: LiveQueryEngine?
    let isReady: @Sendable () -> Bool
    let promptProgress: Bool
    private let send: @Sendable (LiveEvent) -> Void
    private let lock = NSLock()
    private var cancelled = false

    /// The token of the answer the subscriber holds (nil before the first).
    var held: PersistentHistoryToken?
    /// Changes were held back while the subscriber was not ready.
    var isBehind = false
    var window: LiveWindow?

    init(engine: LiveQueryEngine, promptProgress: Bool, isReady: @escaping @Sendable () -> Bool, deliver: @escaping @Sendable (LiveEvent) -> Void) {
        self.engine = engine
        self.promptProgress = promptProgress
        self.isReady = isReady
        self.send = deliver
    }

    var isCancelled: Bool {
        lock.lock()
        defer { lock.unlock() }
        return cancelled
    }

    func deliver(_ event: LiveEvent) {
        guard !isCancelled else { return }
        send(event)
    }

    /// Stops the subscription; nothing is delivered after this returns (on the engine's queue)
    /// or soon after (elsewhere).
    package func cancel() {
        lock.lock()
        let first = !cancelled
        cancelled = true
        lock.unlock()
        if first { engine?.leave(self) }
    }
}
