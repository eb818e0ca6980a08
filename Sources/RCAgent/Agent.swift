import Glibc
import RCCore
import RCStore

/// The daemon's state and behaviour: the one writer of the state store, the fetch loop, activation,
/// push messages and the event stream (SPEC §4). It runs on its own queue (``QueueExecutor``) because
/// SQLite commits block on fsync.
actor Agent {
    let config: AgentConfig
    private let store: StateStore
    private let source: any ConfigSource
    private let policy: FetchPolicy
    private let log: Logger
    private let notifier: SystemdNotifier
    private let executor = QueueExecutor(label: "rcagent.agent")
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    private typealias Reply = @Sendable (FetchOutcome) -> Void
    private var pending: [(trigger: FetchTrigger, reply: Reply?)] = []
    private var wakeup: CheckedContinuation<Void, Never>?
    private var timerTask: Task<Void, Never>?
    private var stopping = false
    private(set) var fetching = false

    private let hooks: HookRunner

    /// Event-stream subscribers: socket descriptors that `watch` handed over.
    private var watchers: Set<Int32> = []
    private var lastEventId: Int64

    init(config: AgentConfig, store: StateStore, source: any ConfigSource, log: Logger, notifier: SystemdNotifier)
        throws
    {
        self.config = config
        self.store = store
        self.source = source
        self.policy = FetchPolicy(minimumInterval: config.minimumFetchInterval)
        self.log = log
        self.notifier = notifier
        hooks = HookRunner(directory: config.hooksDirectory, timeout: config.hookTimeout, log: log)
        lastEventId = try store.lastEventId()
    }

    // MARK: - The fetch loop

    /// Runs fetch rounds until ``stop()``. Every trigger that arrived before a round starts is
    /// answered by that round, so a burst of pings costs one fetch.
    func runFetchLoop() async {
        request(.startup)
        while !stopping {
            if pending.isEmpty {
                await withCheckedContinuation { wakeup = $0 }
                continue
            }
            let batch = pending
            pending = []
            let outcome = await fetchRound(batch.map(\.trigger))
            for item in batch { item.reply?(outcome) }
            scheduleTimer()
            scheduleSettle()
            updateStatusLine()
        }
        for item in pending { item.reply?(.cancelled) }
        pending = []
    }

    func stop() {
        stopping = true
        timerTask?.cancel()
        storeRetryTask?.cancel()
        settleTask?.cancel()
        changeTask?.cancel()
        wakeup?.resume()
        wakeup = nil
        for fd in watchers { shutdown(fd, Int32(SHUT_RDWR)) }
        watchers = []
    }

    /// Asks for a fetch; `reply` gets the outcome of the round that handles it.
    func request(_ trigger: FetchTrigger, reply: (@Sendable (FetchOutcome) -> Void)? = nil) {
        guard !stopping else {
            reply?(.cancelled)
            return
        }
        pending.append((trigger, reply))
        wakeup?.resume()
        wakeup = nil
    }

    private func fetchRound(_ triggers: [FetchTrigger]) async -> FetchOutcome {
        if source is UnconfiguredSource { return .failed(UnconfiguredSource.message) }
        let now = Timestamp.now()
        let status: StoreStatus
        do { status = try fetchState(now: now) } catch { return storeFailure("read the fetch state", error) }
        let forced = triggers.contains { $0.isForced }
        let ignoreThrottle = triggers.contains { $0.ignoresThrottle }
        if !forced && !policy.isDue(status, now: now) {
            let next = policy.nextFetch(status, now: now)
            return .skipped(
                reason:
                    "the last fetch is recent (MinimumFetchInterval=\(DurationText.format(config.minimumFetchInterval)))",
                next: next)
        }
        if let until = status.throttledUntil, until > now, !ignoreThrottle {
            return .throttled(until: until)
        }
        if triggers.allSatisfy({ $0.waitsOutBackoff }), status.backoffStep > 0, let next = status.nextFetchAt,
            next > now
        {
            return .skipped(reason: "backing off after \(status.backoffStep) failed fetch(es)", next: next)
        }

        fetching = true
        defer { fetching = false }
        notifier.status(
            status.stale.isSet
                ? "Stale since \(Self.clock(status.stale.since)); fetching from \(source.name)"
                : "Fetching from \(source.name)")
        let result: SourceResult
        let clock = ContinuousClock()
        let started = clock.now
        do {
            let realtimeAttempt = triggers.compactMap { if case let .realtime(attempt) = $0 { attempt } else { nil } }
                .max()
            if let firebase = source as? FirebaseSource, let realtimeAttempt {
                result = try await firebase.fetch(etag: status.fetched.etag, type: "REALTIME/\(realtimeAttempt)")
            } else {
                result = try await source.fetch(etag: status.fetched.etag)
            }
        } catch {
            return recordFailure(error, status: status)
        }
        return record(result, at: .now(), fetchTime: clock.now - started)
    }

    /// Stores what a source returned. When the store refuses it (a full or read-only disk), the
    /// result is kept and the write retried every few seconds, so the config lands as soon as the
    /// disk takes it again, without asking the source twice; readers keep the last good values.
    private func record(_ result: SourceResult, at finished: Timestamp, fetchTime: Duration) -> FetchOutcome {
        do {
            let outcome = try store(result, at: finished, fetchTime: fetchTime)
            if unstored != nil || unstoredStale != nil { log.notice("The state database takes writes again") }
            // A stored fetch answers every stale ping before it.
            unstored = nil
            unstoredStale = nil
            return outcome
        } catch let error as SQLiteError where !error.isStorageFailure {
            // Not the disk: the database refused this document itself (a constraint). Writing it
            // again cannot help, so it is a failed fetch like any other bad document.
            unstored = nil
            guard let status = try? store.status() else { return .failed("cannot store the fetched config: \(error)") }
            return recordFailure(
                SourceError(.badDocument, "the state database refused the document: \(error)"), status: status)
        } catch {
            if unstored == nil {
                log.error("Failed to store the fetched config: \(error); retrying every \(Self.storeRetry)")
            }
            unstored = (result, finished, fetchTime)
            scheduleStoreRetry()
            return .failed("cannot store the fetched config: \(error)")
        }
    }

    /// A fetch result the store refused, kept for ``retryUnstored()``.
    private var unstored: (result: SourceResult, at: Timestamp, fetchTime: Duration)?
    /// A stale flag the store refused, written by ``retryUnstored()`` unless a fetch is stored first.
    private var unstoredStale: (reason: String, at: Timestamp)?
    private var storeRetryTask: Task<Void, Never>?
    static let storeRetry = Duration.seconds(5)

    private func scheduleStoreRetry() {
        guard storeRetryTask == nil, !stopping else { return }
        storeRetryTask = Task { [weak self] in
            try? await Task.sleep(for: Self.storeRetry)
            await self?.retryUnstored()
        }
    }

    private func retryUnstored() {
        storeRetryTask = nil
        guard !stopping else { return }
        if let unstored {
            if case .failed = record(unstored.result, at: unstored.at, fetchTime: unstored.fetchTime) { return }
        } else if let stale = unstoredStale {
            guard (try? store.markStale(reason: stale.reason, at: stale.at)) != nil else {
                scheduleStoreRetry()
                return
            }
            log.notice("The state database takes writes again: stored the stale flag (\(stale.reason))")
            unstoredStale = nil
            publishEvents()
        }
        scheduleTimer()
        updateStatusLine()
    }

    private func store(_ result: SourceResult, at finished: Timestamp, fetchTime: Duration) throws -> FetchOutcome {
        let storing = ContinuousClock.now
        switch result {
        case .notModified, .document(.noChange, _):
            try store.recordFetch(.noChange, at: finished, activate: false)
            publishEvents()
            return .noChange
        case let .document(.update(values, version), etag):
            let before = config.activation == .immediate ? effectiveValuesIfHooks() : nil
            let activation = try store.recordFetch(
                .update(values: values, templateVersion: version, etag: etag), at: finished,
                activate: config.activation == .immediate)
            if let activation, let before { runHooks(for: activation, before: before) }
            publishEvents()
            let timing =
                "fetched in \(Self.milliseconds(fetchTime)), stored in \(Self.milliseconds(ContinuousClock.now - storing))"
            if let activation {
                log.info(
                    "Activated template \(version ?? "-") from \(source.name) (\(timing)): \(Self.describe(activation.changedKeys))"
                )
            } else {
                log.info(
                    "Fetched template \(version ?? "-") from \(source.name) (\(timing)); activation is \(config.activation.rawValue)"
                )
            }
            return .updated(changedKeys: activation?.changedKeys, templateVersion: version)
        }
    }

    /// The store's fetch state, first rebased to `now` if the wall clock stepped back behind it.
    private func fetchState(now: Timestamp) throws -> StoreStatus {
        let status = try store.status()
        guard let step = policy.clockStepBack(status, now: now) else { return status }
        log.warning(
            "The wall clock went back \(DurationText.format(step)) behind the last fetch; fetch times are rebased to it"
        )
        try store.rebaseFetchTimes(back: step, at: now)
        publishEvents()
        return try store.status()
    }

    private func recordFailure(_ error: SourceError, status: StoreStatus) -> FetchOutcome {
        let now = Timestamp.now()
        var throttled = false
        var retryAfter: Duration?
        if case let .throttled(serverDelay) = error.kind {
            throttled = true
            retryAfter = serverDelay
        }
        let failure = policy.afterFailure(
            previousStep: status.backoffStep, throttled: throttled, retryAfter: retryAfter, now: now)
        let next = failure.nextAttempt
        do {
            try store.recordFetch(
                .failure(
                    error: error.message, backoffStep: failure.backoffStep, nextAttempt: next,
                    throttledUntil: failure.throttledUntil),
                at: now, activate: false)
        } catch {
            log.error("Failed to record a fetch failure: \(error)")
        }
        publishEvents()
        log.warning("Failed to fetch from \(source.name): \(error.message); retrying at \(Self.clock(next))")
        return .failed(error.message)
    }

    private func storeFailure(_ what: String, _ error: any Error) -> FetchOutcome {
        log.error("Failed to \(what): \(error)")
        return .failed("cannot \(what): \(error)")
    }

    private func scheduleTimer() {
        timerTask?.cancel()
        // Without a source there is nothing to fetch by itself (no wake-ups while unprovisioned).
        let now = Timestamp.now()
        guard !stopping, !(source is UnconfiguredSource), let status = try? fetchState(now: now) else { return }
        let next = policy.nextFetch(status, now: now)
        // Never less than a second: whatever the stored times say, the loop cannot spin.
        let delay = max(next - now, .seconds(1))
        timerTask = Task { [weak self] in
            try? await Task.sleep(for: delay)
            guard !Task.isCancelled else { return }
            await self?.request(.timer)
        }
    }

    /// What changed around the agent: the network may have come up (``NetworkMonitor``), or the wall
    /// clock was set, by hand, by NTP or by a resume from suspend (``ClockWatch``).
    enum SystemChange: String, Sendable {
        case network = "The network changed"
        case clock = "The wall clock was set (or the system resumed)"
    }

    /// Once nothing more has changed for a second, the timer is set again (its wall-clock deadlines
    /// may have moved), and the agent fetches if the cache is stale or the last fetch failed (SPEC §6).
    func systemChanged(_ change: SystemChange) {
        changeTask?.cancel()
        changeTask = Task { [weak self] in
            try? await Task.sleep(for: .seconds(1))
            guard !Task.isCancelled else { return }
            await self?.afterSystemChange(change)
        }
    }

    private var changeTask: Task<Void, Never>?

    private func afterSystemChange(_ change: SystemChange) {
        guard !stopping, !(source is UnconfiguredSource), let status = try? fetchState(now: .now()) else { return }
        guard status.stale.isSet || status.lastStatus == .failure else {
            if !fetching { scheduleTimer() }
            return
        }
        log.info(
            "\(change.rawValue); fetching (\(status.stale.isSet ? "the cache is stale" : "the last fetch failed"))")
        request(.systemChange)
    }

    /// Gives back the pages a round mapped once the agent has been quiet for ``settleDelay``.
    private var settleTask: Task<Void, Never>?
    static let settleDelay = Duration.seconds(10)

    private func scheduleSettle() {
        settleTask?.cancel()
        settleTask = Task { [weak self] in
            try? await Task.sleep(for: Self.settleDelay)
            guard !Task.isCancelled else { return }
            await self?.settle()
        }
    }

    private func settle() {
        guard !fetching, pending.isEmpty, !stopping else { return }
        IdlePages.release()
    }

    // MARK: - Commands

    /// Activates the fetched snapshot (manual and on-start policies). `nil` when nothing was pending.
    /// `fetchedBeforeStart`: the daemon's own activation at start (`Activation=on-start`).
    func activate(fetchedBeforeStart: Bool = false) throws -> Activation? {
        let before = effectiveValuesIfHooks()
        let activation = try store.activate(at: .now())
        if let activation, let before { runHooks(for: activation, before: before) }
        publishEvents()
        if let activation {
            let when = fetchedBeforeStart ? " fetched before this start" : ""
            log.info(
                "Activated template \(activation.templateVersion ?? "-")\(when): \(Self.describe(activation.changedKeys))"
            )
            updateStatusLine()
        }
        return activation
    }

    /// Asks for a fetch and, with `wait`, returns the outcome of the round that handles it.
    func fetch(_ trigger: FetchTrigger, wait: Bool) async -> FetchOutcome? {
        guard wait else {
            request(trigger)
            return nil
        }
        return await withCheckedContinuation { continuation in
            request(trigger) { continuation.resume(returning: $0) }
        }
    }

    /// Sets the stale flag (persisted before anything else) and asks for a fetch, after a random
    /// delay of up to `jitter` (push channels: a fleet must not stampede the config server).
    func markStale(reason: String, wait: Bool = false, jitter: Duration = .zero) async throws
        -> (newlySet: Bool, outcome: FetchOutcome?)
    {
        let newlySet: Bool
        do {
            newlySet = try store.markStale(reason: reason, at: .now())
        } catch {
            // The flag cannot be stored (a full or read-only disk): the sender hears so, the fetch
            // happens all the same, and the flag is written when the disk takes it, unless a
            // fetch is stored first.
            log.error("Failed to store the stale flag (\(reason)): \(error); fetching anyway")
            if unstoredStale == nil { unstoredStale = (reason, .now()) }
            scheduleStoreRetry()
            request(.push)
            throw error
        }
        publishEvents()
        if newlySet { log.notice("Config marked stale: \(reason)") }
        if jitter > .zero && !wait {
            requestAfterJitter(.push, jitter: jitter)
            return (newlySet, nil)
        }
        return (newlySet, await fetch(.push, wait: wait))
    }

    /// Asks for a fetch after a random wait in 0...`jitter`.
    func requestAfterJitter(_ trigger: FetchTrigger, jitter: Duration) {
        let delay = Duration.milliseconds(Int64.random(in: 0...max(jitter.milliseconds, 0)))
        Task { [weak self] in
            try? await Task.sleep(for: delay)
            await self?.request(trigger)
        }
    }

    /// What the push channel (MQTT) is doing, for status.
    private(set) var pushState: String?

    func setPushState(_ state: String?) {
        pushState = state
    }

    /// Handles an FCM-style message exactly as a push channel delivers it (SPEC §4.1, §4.4). With
    /// `wait`, the response also carries the outcome of the fetch the message started.
    func handle(_ message: PushMessage, from channel: String, wait: Bool = false, jitter: Duration = .zero) async throws
        -> MessageResponse
    {
        guard message.marksStale else {
            let note =
                message.hasLiveActivity ? "live activity messages are not handled yet" : "no CONFIG_STATE in data"
            return .ignored(note)
        }
        if let announced = message.templateVersion, let current = try currentTemplateVersion(), announced <= current {
            log.info("Ignoring a stale ping from \(channel) for template \(announced): template \(current) is current")
            return .ignored("template \(announced) is at or below the current \(current)")
        }
        let state = message.data["CONFIG_STATE"] ?? ""
        let version = message.templateVersion.map { ", template \($0)" } ?? ""
        let (newlySet, outcome) = try await markStale(
            reason: "\(channel): CONFIG_STATE=\(state)\(version)", wait: wait, jitter: jitter)
        return .markedStale(newlySet: newlySet, fetch: outcome?.reply)
    }

    /// Fetches after a realtime invalidation until the template reaches `target` (up to three
    /// attempts, each after a random 0–3 s wait as the SDKs do), or once after a reconnect (`nil`).
    func refetch(toReach target: Int64?) async {
        for attempt in 1...3 {
            if target != nil { try? await Task.sleep(for: .milliseconds(Int.random(in: 0...3_000))) }
            let outcome = await fetch(.realtime(attempt: attempt), wait: true)
            guard let target else { return }
            if let current = try? currentTemplateVersion(), current >= target { return }
            switch outcome {
            case .throttled?, .skipped?, .cancelled?: return
            default: continue
            }
        }
        log.warning("Realtime announced template \(target ?? 0), but three fetches did not reach it")
    }

    /// Whether a realtime announcement of `version` is news.
    func isNewer(_ version: Int64) -> Bool {
        guard let current = try? currentTemplateVersion() else { return true }
        return version > current
    }

    func note(_ key: String) -> String? { try? store.note(key) }

    func setNote(_ key: String, _ value: String?) {
        do { try store.setNote(key, value) } catch { log.error("Failed to store \(key): \(error)") }
    }

    /// The newest template version the agent has, fetched or active.
    func currentTemplateVersion() throws -> Int64? {
        let status = try store.status()
        return [status.active.templateVersion, status.fetched.templateVersion].compactMap { $0.flatMap { Int64($0) } }
            .max()
    }

    func status() throws -> StoreStatus { try store.status() }

    /// Re-reads the defaults file (SIGHUP).
    func reloadDefaults() {
        StateRecovery.loadDefaults(into: store, config: config, log: log)
    }

    /// Returns at once: the watchdog pings only while the actor still answers.
    func heartbeat() {}

    var nextFetch: Timestamp? {
        let now = Timestamp.now()
        guard !(source is UnconfiguredSource), let status = try? fetchState(now: now) else { return nil }
        return policy.nextFetch(status, now: now)
    }

    // MARK: - Events

    /// Adds a `watch` subscriber. Events are written without blocking; a subscriber that does not
    /// keep up is dropped (its socket shut down), never allowed to stall the agent.
    func subscribe(_ fd: Int32) -> Bool {
        // The acknowledgement goes out here, on the actor, so no event can overtake it.
        let ack = Array((WatchAck().json.compactText + "\n").utf8)
        // Without blocking, like the events: a client that filled its socket with unread answers
        // (278 pipelined pings, then `watch`) held the actor, and with it every request, fetch and
        // watchdog ping, for the connection's whole send timeout (5 s per connection, any peer).
        let sent = ack.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) }
        guard sent == ack.count else { return false }
        watchers.insert(fd)
        return true
    }

    func unsubscribe(_ fd: Int32) {
        watchers.remove(fd)
    }

    /// Every value as `get` sees it, when there are hooks to tell about changes (else `nil`).
    private func effectiveValuesIfHooks() -> [String: String]? {
        guard !hooks.hooks.isEmpty, let values = try? store.allValues() else { return nil }
        return Dictionary(values.map { ($0.key, $0.text) }) { $1 }
    }

    /// Runs the hooks for an activation that changed something, with each key's old and new value.
    private func runHooks(for activation: Activation, before: [String: String]) {
        guard !activation.changedKeys.isEmpty else { return }
        var event = HookEvent(kind: .activated, templateVersion: activation.templateVersion)
        for key in activation.changedKeys {
            let now = try? store.value(forKey: key)
            event.changes[key] = HookEvent.Change(old: before[key], new: now?.text, source: now?.source)
        }
        hooks.enqueue(event)
    }

    /// Sends the events the store logged since the last call to every subscriber.
    private func publishEvents() {
        guard let events = try? store.events(after: lastEventId) else { return }
        guard let last = events.last else { return }
        lastEventId = last.id
        for event in events {
            switch event.kind {
            case "stale-set": hooks.enqueue(HookEvent(kind: .staleSet))
            case "stale-cleared": hooks.enqueue(HookEvent(kind: .staleCleared))
            default: break
            }
        }
        guard !watchers.isEmpty else { return }
        var text = ""
        for event in events { text += Self.watchLine(event).compactText + "\n" }
        let bytes = Array(text.utf8)
        for fd in watchers {
            let sent = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) }
            if sent != bytes.count {
                log.warning("Dropping a watch client that does not keep up")
                watchers.remove(fd)
                shutdown(fd, Int32(SHUT_RDWR))
            }
        }
    }

    static func watchLine(_ event: StoredEvent) -> JSONValue {
        WatchEvent(kind: event.kind, at: event.at.iso8601, fields: event.detail.objectMembers ?? []).json
    }

    // MARK: - Status line

    func updateStatusLine() {
        let now = Timestamp.now()
        guard let status = try? fetchState(now: now) else { return }
        var text: String
        if status.stale.isSet {
            text = "Stale since \(Self.clock(status.stale.since))"
        } else {
            text = "Template \(status.active.templateVersion ?? "-") active, \(status.active.keys) keys"
        }
        if let error = status.lastError, status.lastStatus == .failure {
            text += "; last fetch failed (\(error))"
        }
        if status.pending { text += "; fetched template \(status.fetched.templateVersion ?? "-") awaits activation" }
        text +=
            source is UnconfiguredSource
            ? "; no source configured" : "; next fetch \(Self.clock(policy.nextFetch(status, now: now)))"
        notifier.status(text)
    }

    /// `HH:MM:SS` UTC, for status lines.
    static func clock(_ t: Timestamp?) -> String {
        guard let t else { return "-" }
        let iso = t.iso8601
        return String(iso.dropFirst(11).prefix(8)) + " UTC"
    }

    static func milliseconds(_ duration: Duration) -> String {
        let micros = duration.components.seconds * 1_000_000 + duration.components.attoseconds / 1_000_000_000_000
        return "\(micros / 1_000).\(String(micros % 1_000 / 100)) ms"
    }

    static func describe(_ keys: [String]) -> String {
        keys.isEmpty
            ? "no keys changed"
            : "\(keys.count) key(s) changed: " + keys.prefix(10).joined(separator: ", ")
                + (keys.count > 10 ? ", ..." : "")
    }
}
