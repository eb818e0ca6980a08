import Glibc
import RCCore
import RCService
import RCStore
import RCSystem

/// What enters the agent from outside its own calls: fetch requests from any thread (control
/// connections, push channels, watches), in the order they were sent (see ``Inbox``).
enum AgentInput: Sendable {
    /// Fetch in the next round; `reply` hears that round's outcome.
    case fetch(FetchTrigger, reply: (@Sendable (FetchOutcome) -> Void)?)
    /// Fetch after a random wait of up to `jitter`.
    case fetchAfter(FetchTrigger, jitter: Duration)
    /// The network or the wall clock changed (debounced: the last of a burst counts).
    case systemChanged(SystemChange)
    /// A deadline was set from outside the loop (a reload moved the timer): the loop's wait was
    /// computed from the old ones and must be taken again.
    case rescheduled
    /// The last hold of the hold lock was let go (``HoldWatch``): a deferred activation may be due.
    case holdReleased
    /// The health check of the trial of `version` answered (on its own thread).
    case trialChecked(version: String?, verdict: HealthVerdict)
}

/// The daemon's state and behaviour, as one actor over three parts: the one writer of the state
/// store (``StateWriter``: writes, their events, the status board), the fetch loop (``FetchLoop``:
/// source, policy, deadlines; its rounds are ``run()``, in Agent+Rounds.swift) and safe activation
/// (``Activator``: the gate, the trials). The agent itself handles requests, pings and reloads.
/// It runs on its own queue (``QueueExecutor``) because SQLite commits block on fsync, which must
/// stay off the two-thread cooperative pool.
actor Agent {
    /// Replaced as a whole by ``reconfigure(_:source:)`` (a reload).
    private(set) var config: AgentConfig
    let log: Logger
    private let executor = QueueExecutor(label: "rcagent.agent")
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    /// Runs the fetch loop (``run()``) with the agent's queue as its task's executor too: a request
    /// from a control connection, a transfer's result, a source's reading of its document resume on
    /// that queue at once, not first on the cooperative pool (a thread woken per hop, BENCHMARKS.md).
    nonisolated func runOnOwnQueue() async {
        await withTaskExecutorPreference(executor.taskExecutor) { await run() }
    }

    /// Every request to fetch, whoever sends it, comes through here to ``run()``.
    nonisolated let inbox = Inbox<AgentInput>()
    /// The fetch loop's own state: the source, the policy, the deadlines, the refused writes.
    let loop: FetchLoop
    /// The one writer of the state: store writes, their events, the status board.
    let writer: StateWriter
    /// Every activation: the gate (windows, holds), the trials and rollbacks.
    let activation: Activator
    /// When the daemon started (the metrics' `rcagent_start_time_seconds`).
    let startTime = Timestamp.now()

    init(
        config: AgentConfig, store: StateStore, source: any ConfigSource, log: Logger, notifier: SystemdNotifier,
        settleDelay: Duration = .seconds(10)
    ) throws {
        self.config = config
        loop = FetchLoop(
            source: source, policy: FetchPolicy(minimumInterval: config.minimumFetchInterval), inbox: inbox,
            notifier: notifier, settleDelay: settleDelay)
        self.log = log
        writer = StateWriter(
            store: store, hooks: HookRunner(directory: config.hooksDirectory, timeout: config.hookTimeout, log: log),
            config: config, log: log)
        activation = Activator(
            policy: config.activation, settings: config.activationSettings, writer: writer, loop: loop, log: log)
    }

    // MARK: - Requests from any thread

    /// Asks for a fetch; `reply` gets the outcome of the round that handles it (`.cancelled` once
    /// the agent has stopped).
    nonisolated func request(_ trigger: FetchTrigger, reply: (@Sendable (FetchOutcome) -> Void)? = nil) {
        if !inbox.send(.fetch(trigger, reply: reply)) { reply?(.cancelled) }
    }

    /// Asks for a fetch after a random wait in 0...`jitter`.
    ///
    /// A delayed fetch of the same trigger that is still waiting covers the new request: it comes
    /// after it, so it sees whatever the new one would. A broker that drops its clients twice while
    /// coming back (a cluster recovering) so costs one fetch per device, not one per reconnect, and
    /// a burst of pings one fetch.
    nonisolated func requestAfterJitter(_ trigger: FetchTrigger, jitter: Duration) {
        inbox.send(.fetchAfter(trigger, jitter: jitter))
    }

    /// The network or the clock changed. Once nothing more has changed for a second, the timer is
    /// set again (its wall-clock deadlines may have moved), and the agent fetches if the cache is
    /// stale or the last fetch failed.
    nonisolated func systemChanged(_ change: SystemChange) {
        inbox.send(.systemChanged(change))
    }

    // MARK: - Reload

    /// Applies a reloaded config: the new source, interval, activation policy and hooks. A new
    /// source, or new signals to evaluate templates with, fetches at once, with no ETag.
    func reconfigure(_ new: AgentConfig, source newSource: (any ConfigSource)?) {
        let old = config
        config = new
        writer.board.config = new
        loop.policy.minimumInterval = new.minimumFetchInterval
        if new.hooksDirectory != old.hooksDirectory || new.hookTimeout != old.hookTimeout {
            // The same runner: its one thread keeps hooks one at a time across the reload.
            writer.events.hooks.configure(directory: new.hooksDirectory, timeout: new.hookTimeout)
        }
        if let newSource {
            let another = newSource.name != loop.source.name
            loop.source = newSource
            // What the old source fetched and the disk refused must not land after the new one's.
            loop.unstored = nil
            if newSource.isConfigured {
                request(.reload(newSource: another))
            } else {
                loop.scheduler.cancel(.timer)
            }
        } else {
            scheduleTimer()
            // The loop may be waiting for a later deadline (a shorter interval, a stale flag).
            inbox.send(.rescheduled)
        }
        updateStatusLine()
        refreshInstalledApp()
        writer.publishStatus()
        activation.configure(policy: new.activation, settings: new.activationSettings)
    }

    /// Re-reads the defaults file (a reload).
    func reloadDefaults() {
        StateRecovery.loadDefaults(into: writer.store, config: config, log: log)
        writer.publishStatus()  // the update keys may have new defaults
    }

    // MARK: - Commands

    /// At start, before anything is served: an interrupted trial rolls back, the hold lock is
    /// watched and the `on-start` activation made (``Activator/start(stateDirectory:)``).
    func startActivation() throws { try activation.start(stateDirectory: config.stateDirectory) }

    /// `rcagent activate [--now]`: activates the pending snapshot, or says why it waits and until when.
    func activateOrDefer(now: Bool) throws -> ActivateResponse { try activation.activateOrDefer(now: now) }

    /// `rcagent rollback [VERSION]`: re-activates a kept snapshot, rejecting the versions after it.
    func rollback(to version: String?) throws -> Result<Activation, RollbackRefusal> {
        try activation.rollback(to: version)
    }

    /// Asks for a fetch and, with `wait`, returns the outcome of the round that handles it.
    /// Not isolated: the answer goes out as soon as the round hands it over, not once the agent
    /// has finished what follows the round (its status line, the idle work).
    nonisolated func fetch(_ trigger: FetchTrigger, wait: Bool) async -> FetchOutcome? {
        guard wait else {
            request(trigger)
            return nil
        }
        return await withCheckedContinuation { continuation in
            request(trigger) { continuation.resume(returning: $0) }
        }
    }

    /// The same for a plain thread (a control connection's), which it blocks until the round hands
    /// over the outcome: no task in between (one woke two more threads a fetch, BENCHMARKS.md).
    nonisolated func fetchBlocking(_ trigger: FetchTrigger, wait: Bool) -> FetchOutcome? {
        guard wait else {
            request(trigger)
            return nil
        }
        let outcome = Handoff<FetchOutcome>()
        request(trigger) { outcome.put($0) }
        return outcome.take()
    }

    /// Sets the stale flag (persisted before anything else) and asks for a fetch, after a random
    /// delay of up to `jitter` (push channels: a fleet must not stampede the config server).
    func markStale(reason: String, wait: Bool = false, jitter: Duration = .zero) async throws
        -> (newlySet: Bool, outcome: FetchOutcome?)
    {
        // As the store keeps it: the log lines and the retry below carry no more than the database.
        let reason = StoredText.reason(reason)
        let newlySet: Bool
        do {
            newlySet = try writer.markStale(reason: reason, at: .now())
        } catch {
            // The flag cannot be stored (a full or read-only disk): the sender hears so, the fetch
            // happens all the same, and the flag is written when the disk takes it, unless a
            // fetch is stored first.
            log.error("Failed to store the stale flag (\(reason)): \(error); fetching anyway")
            if loop.unstoredStale == nil { loop.unstoredStale = (reason, .now()) }
            scheduleStoreRetry()
            request(.push)
            throw error
        }
        if newlySet { log.notice("Config marked stale: \(reason)") }
        if jitter > .zero && !wait {
            requestAfterJitter(.push, jitter: jitter)
            return (newlySet, nil)
        }
        return (newlySet, await fetch(.push, wait: wait))
    }

    /// What the push channel (MQTT) is doing, for status.
    func setPushState(_ state: PushState?) {
        guard writer.board.push != state else { return }
        writer.board.push = state
        writer.publishStatus()
    }

    /// Handles an FCM-style message exactly as a push channel delivers it: its Live Activity, if it
    /// carries one, is applied first, then its `CONFIG_STATE` marks the config stale. With `wait`,
    /// the response also carries the outcome of the fetch the message started. With `strict` (the
    /// control socket) a Live Activity that cannot apply throws and nothing at all changes.
    func handle(
        _ message: PushMessage, from channel: String, wait: Bool = false, jitter: Duration = .zero,
        strict: Bool = false
    ) async throws -> MessageResponse {
        let activity = try applyActivity(of: message, from: channel, strict: strict)
        if message.activatesNow { activation.activateNow(pushedBy: channel) }
        guard message.marksStale else {
            return .ignored("no CONFIG_STATE in data", activity: activity)
        }
        if let announced = message.templateVersion, let current = try currentTemplateVersion(), announced <= current {
            log.info("Ignoring a stale ping from \(channel) for template \(announced): template \(current) is current")
            return .ignored("template \(announced) is at or below the current \(current)", activity: activity)
        }
        // Cut before it is copied into the reason: the sender chose its size, the device keeps 256 bytes.
        let state = StoredText.reason(message.data["CONFIG_STATE"] ?? "")
        let version = message.templateVersion.map { ", template \($0)" } ?? ""
        // The fetch this ping starts activates what it brings past windows and holds.
        if message.activatesNow { activation.deferral.overrideNext = true }
        let (newlySet, outcome) = try await markStale(
            reason: "\(channel): CONFIG_STATE=\(state)\(version)", wait: wait, jitter: jitter)
        return .markedStale(newlySet: newlySet, fetch: outcome?.reply, activity: activity)
    }

    /// Fetches after a realtime invalidation until the template reaches `target` (up to three
    /// attempts, each after a random wait of up to `[Push] Jitter=`: the SDKs wait 0–3 s, the
    /// default), or once after a (re)opened stream found the cache stale (`nil`).
    func refetch(toReach target: Int64?) async {
        for attempt in 1...3 {
            // The same spread as the MQTT channel's, from the same setting: Jitter=0 fetches at once.
            if let target {
                let wait = Jitter.upTo(config.jitter)
                if attempt == 1 {
                    let when = wait > .zero ? "in \(DurationText.format(wait))" : "at once"
                    log.info("Realtime: template \(target) published; fetching \(when)")
                }
                if wait > .zero { try? await Task.sleep(for: wait) }
            }
            let outcome = await fetch(.realtime(attempt: attempt, target: target), wait: true)
            guard let target else { return }
            if let current = try? currentTemplateVersion(), current >= target { return }
            switch outcome {
            case .throttled?, .skipped?, .cancelled?: return
            default: continue
            }
        }
        log.warning("Realtime announced template \(target ?? 0), but three fetches did not reach it")
    }

    /// Whether a (re)opened realtime stream should fetch by itself: only when the cache is stale or
    /// was never fetched. A newer template is announced by the stream itself (its first message,
    /// against the version sent in `lastKnownVersionNumber`, as the SDKs compare it), and the
    /// interval is the timer's: a stream that keeps reconnecting must not spend the fetch quota. Nor
    /// while a round runs (the start-up fetch, as the stream opens beside it): that round settles the
    /// cache, and if it fails, its own backoff retries.
    func wantsFetchOnStreamOpen() -> Bool {
        guard !isFetching else { return false }
        guard let status = try? writer.status() else { return true }
        return status.stale.isSet || status.lastSuccess == nil
    }

    /// Whether a fetch round runs now.
    var isFetching: Bool { writer.board.fetching }

    /// Whether a realtime announcement of `version` is news.
    func isNewer(_ version: Int64) -> Bool {
        guard let current = try? currentTemplateVersion() else { return true }
        return version > current
    }

    /// A note a channel keeps across restarts (``NoteKeeper``): `nil` when none, or unreadable.
    func note(_ note: StateNote) -> String? { writer.note(note) }

    func setNote(_ note: StateNote, _ value: String?) { writer.setNote(note, value) }

    /// The newest template version the agent has, fetched or active.
    func currentTemplateVersion() throws -> Int64? {
        try writer.status().newestTemplateVersion
    }

    /// The store's status as the board has it (read again only after a write).
    func status() throws -> StoreStatus { try writer.status() }

    /// The board for the socket's `status` answer.
    func statusBoard() -> AgentStatus {
        AgentStatus(
            fetching: writer.board.fetching, nextFetch: nextFetch, push: writer.board.push, config: config.digest,
            report: writer.board.report)
    }

    /// Returns at once: the watchdog pings only while the actor still answers.
    func heartbeat() {}

    /// When the agent fetches by itself next (`nil` without a source).
    var nextFetch: Timestamp? {
        let now = Timestamp.now()
        guard loop.source.isConfigured, let status = try? fetchState(now: now) else { return nil }
        return loop.policy.nextFetch(status, now: now)
    }

    // MARK: - Watch subscribers

    func subscribe(_ fd: Int32) -> Bool { writer.events.subscribe(fd) }

    func unsubscribe(_ fd: Int32) { writer.events.unsubscribe(fd) }

    /// Sets the `STATUS=` line systemd shows.
    func updateStatusLine() {
        let now = Timestamp.now()
        loop.showStatus(try? fetchState(now: now), now: now)
    }
}
