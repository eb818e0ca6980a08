import RCCore
import RCStore
import RCSystem

/// The fetch loop: one round at a time, every request that arrived before a round answered by it,
/// and the agent's timers as deadlines of the loop's wait (``FetchScheduler``).
extension Agent {
    /// Runs fetch rounds until the calling task is cancelled (the daemon stopping); then answers
    /// what is still waiting with `.cancelled` and ends every `watch` stream.
    func run() async {
        loop.scheduler.request(.startup)
        // Activity ends and removals that came due while the daemon was down happen at once; the next
        // one is a deadline of the loop, read from the store.
        scheduleDismissal()
        while !Task.isCancelled {
            // Everything already sent joins the coming round: a burst of pings costs one fetch.
            while let input = inbox.poll() { receive(input) }
            runDueJobs()
            if !loop.scheduler.pending.isEmpty {
                await round()
                continue
            }
            // Nothing to do until an input arrives or the earliest deadline comes.
            if let input = await inbox.next(until: loop.scheduler.earliest) { receive(input) }
        }
        for item in loop.scheduler.takePending() { item.reply?(.cancelled) }
        for case let .fetch(_, reply) in inbox.close() { reply?(.cancelled) }
        writer.events.closeAll()
    }

    /// Takes one input into the scheduler: a fetch request joins the next round; a jittered fetch and a
    /// system change become deadlines (a later change within the debounce moves the deadline on).
    private func receive(_ input: AgentInput) {
        switch input {
        case let .fetch(trigger, reply):
            loop.scheduler.request(trigger, reply: reply)
        case let .fetchAfter(trigger, jitter):
            let delay = Jitter.upTo(jitter)
            loop.scheduler.scheduleIfUnset(.delayed(trigger), at: .now + delay)
        case let .systemChanged(change):
            loop.scheduler.schedule(.systemChange([change]), at: .now + FetchLoop.systemChangeDebounce)
        case .rescheduled:
            break  // the loop takes its next wait from the deadlines as they are now
        case .holdReleased:
            activation.recheckDeferred(after: "the last hold was released")
        case let .trialChecked(version, verdict):
            activation.trialChecked(version, verdict)
        }
    }

    /// Runs the jobs whose deadlines have come, earliest first. A timer or delayed fetch only adds a
    /// request, so everything due now shares the round that follows.
    private func runDueJobs() {
        for job in loop.scheduler.takeDue(now: .now) {
            switch job {
            case .timer: loop.scheduler.request(.timer)
            case .storeRetry: retryUnstored()
            case .settle: if loop.scheduler.pending.isEmpty { IdlePages.releaseOnceWaiting() }
            case let .systemChange(changes): afterSystemChange(changes)
            case let .delayed(trigger): loop.scheduler.request(trigger)
            case .dismissal: removeDismissedActivities()
            case .activationDue: activation.recheckDeferred(after: "its wait is over")
            }
        }
    }

    /// One fetch round for every waiting request: each hears the same outcome. Then the timer is set
    /// from what the round stored, the memory release is scheduled and systemd's status line updated.
    private func round() async {
        let batch = loop.scheduler.takePending()
        let outcome = await fetchRound(batch.map(\.trigger))
        // A push's "activate": "now" covers the round it asked for, and no later one.
        if batch.contains(where: { $0.trigger == .push }) { activation.deferral.overrideNext = false }
        for item in batch { item.reply?(outcome) }
        // One read of the fetch state serves the timer and the status line.
        let now = Timestamp.now()
        let status = try? fetchState(now: now)
        scheduleTimer(status, now: now)
        loop.scheduler.schedule(.settle, at: .now + loop.settleDelay)
        loop.showStatus(status, now: now)
        // A dpkg upgrade of the app, and the fetch's own outcome, reach the report.
        refreshInstalledApp()
        writer.publishStatus()
    }

    /// Decides whether the round fetches at all (the interval, the server's throttle, the backoff, in
    /// that order, each waived by the triggers that may) and, if it does, asks the source and records
    /// what came back.
    private func fetchRound(_ triggers: [FetchTrigger]) async -> FetchOutcome {
        // The round keeps the source it started with, should a reload replace it meanwhile.
        let source = loop.source
        guard source.isConfigured else { return .failed(UnconfiguredSource.message) }
        let now = Timestamp.now()
        let status: StoreStatus
        do { status = try fetchState(now: now) } catch { return storeFailure("read the fetch state", error) }
        if !triggers.contains(where: \.isForced) && !loop.policy.isDue(status, now: now) {
            let next = loop.policy.nextFetch(status, now: now)
            return .skipped(
                reason:
                    "the last fetch is recent (MinimumFetchInterval=\(DurationText.format(config.minimumFetchInterval)))",
                next: next)
        }
        // Rounds asked for only by realtime announcements whose templates a round before this one already
        // brought (the start-up fetch, as the stream announced the same template beside it) fetch nothing:
        // the project's fetch quota is not spent twice on one template.
        let targets: [Int64?] = triggers.map { trigger in
            if case let .realtime(_, target?) = trigger { target } else { nil }
        }
        if let highest = targets.compactMap({ $0 }).max(), !targets.contains(nil),
            let current = status.newestTemplateVersion, current >= highest
        {
            return .skipped(reason: "template \(current) is already here", next: nil)
        }
        if let until = status.throttledUntil, until > now, !triggers.contains(where: \.ignoresThrottle) {
            return .throttled(until: until)
        }
        if triggers.allSatisfy(\.waitsOutBackoff), status.backoffStep > 0, let next = status.nextFetchAt, next > now {
            return .skipped(reason: "backing off after \(status.backoffStep) failed fetch(es)", next: next)
        }

        writer.board.fetching = true
        defer { writer.board.fetching = false }
        loop.notifier.status(
            status.stale.isSet
                ? "Stale since \(StatusText.clock(status.stale.since)); fetching from \(source.name)"
                : "Fetching from \(source.name)")
        let trigger = FetchTrigger.representative(of: triggers)
        let clock = ContinuousClock()
        let started = clock.now
        let result: SourceResult
        do {
            result = try await source.fetch(etag: trigger.sendsETag ? status.fetched.etag : nil, trigger: trigger)
        } catch {
            return recordFailure(error, status: status, source: source)
        }
        return record(result, at: .now(), fetchTime: clock.now - started, source: source)
    }

    /// Stores what a source returned. When the store refuses it (a full or read-only disk), the
    /// result is kept and the write retried every few seconds, so the config lands as soon as the
    /// disk takes it again, without asking the source twice; readers keep the last good values.
    private func record(_ result: SourceResult, at finished: Timestamp, fetchTime: Duration, source: any ConfigSource)
        -> FetchOutcome
    {
        do {
            let outcome = try store(result, at: finished, fetchTime: fetchTime, source: source)
            if loop.unstored != nil || loop.unstoredStale != nil { log.notice("The state database takes writes again") }
            // A stored fetch answers every stale ping before it.
            loop.unstored = nil
            loop.unstoredStale = nil
            return outcome
        } catch let error as SQLiteError where !error.isStorageFailure {
            // Not the disk: the database refused this document itself (a constraint). Writing it
            // again cannot help, so it is a failed fetch like any other bad document.
            loop.unstored = nil
            guard let status = try? writer.status() else {
                return .failed("cannot store the fetched config: \(error)")
            }
            return recordFailure(
                SourceError(.badDocument, "the state database refused the document: \(error)"), status: status,
                source: source)
        } catch {
            if loop.unstored == nil {
                log.error("Failed to store the fetched config: \(error); retrying every \(FetchLoop.storeRetry)")
            }
            loop.unstored = (result, finished, fetchTime)
            scheduleStoreRetry()
            return .failed("cannot store the fetched config: \(error)")
        }
    }

    /// Retries the refused write in ``storeRetry``, unless a retry is already due (the first deadline
    /// holds, so a burst of refusals does not keep pushing it back).
    func scheduleStoreRetry() {
        loop.scheduler.scheduleIfUnset(.storeRetry, at: .now + FetchLoop.storeRetry)
    }

    /// Writes what the store refused last time: the fetched result first (it answers any stale flag
    /// too), else the stale flag alone. A write refused again waits for the next retry.
    private func retryUnstored() {
        if let unstored = loop.unstored {
            let outcome = record(unstored.result, at: unstored.at, fetchTime: unstored.fetchTime, source: loop.source)
            if case .failed = outcome { return }
        } else if let stale = loop.unstoredStale {
            guard (try? writer.markStale(reason: stale.reason, at: stale.at)) != nil else {
                scheduleStoreRetry()
                return
            }
            log.notice("The state database takes writes again: stored the stale flag (\(stale.reason))")
            loop.unstoredStale = nil
        }
        scheduleTimer()
        updateStatusLine()
    }

    /// Records a result in one transaction (fetch, activation under `Activation=immediate`, stale
    /// flag cleared), then tells subscribers and hooks and logs what changed and how long it took.
    private func store(_ result: SourceResult, at finished: Timestamp, fetchTime: Duration, source: any ConfigSource)
        throws -> FetchOutcome
    {
        let storing = ContinuousClock.now
        switch result {
        case .notModified, .document(.noChange, _):
            try writer.recordFetch(.noChange, at: finished, activate: false)
            return .noChange
        case let .document(.update(values, version), etag):
            let decision = activation.immediateActivationDecision(at: finished)
            let activated = try writer.recordFetch(
                .update(values: values, templateVersion: version, etag: etag), at: finished,
                activate: decision == .activate)
            let timing =
                "fetched in \(StatusText.milliseconds(fetchTime)), stored in \(StatusText.milliseconds(ContinuousClock.now - storing))"
            if let activated {
                log.info(
                    "Activated template \(version ?? "-") from \(source.name) (\(timing)): \(StatusText.describe(activated.changedKeys))"
                )
            } else if let version, (try? writer.store.isRejected(version)) == true {
                log.info("Fetched template \(version) from \(source.name) (\(timing)); it is rejected on this device")
            } else if case let .checking(trialVersion, _) = activation.trial.phase {
                log.info(
                    "Fetched template \(version ?? "-") from \(source.name) (\(timing)); it waits for the trial of template \(trialVersion ?? "-")"
                )
            } else {
                let policy = decision == nil ? config.activation.rawValue : "deferred"
                log.info("Fetched template \(version ?? "-") from \(source.name) (\(timing)); activation is \(policy)")
            }
            // The trial, or what waits for a window or a hold, and why.
            activation.fetched(version, activation: activated, decision: decision, at: finished)
            let deferred =
                activated == nil
                ? activation.deferral.current.flatMap { $0.templateVersion == version ? $0 : nil } : nil
            return .updated(changedKeys: activated?.changedKeys, templateVersion: version, deferred: deferred)
        }
    }

    /// The store's fetch state, first rebased to `now` if the wall clock stepped back behind it.
    func fetchState(now: Timestamp) throws -> StoreStatus {
        let status = try writer.status()
        guard let step = loop.policy.clockStepBack(status, now: now) else { return status }
        log.warning(
            "The wall clock went back \(DurationText.format(step)) behind the last fetch; fetch times are rebased to it"
        )
        try writer.rebaseFetchTimes(back: step, at: now)
        return try writer.status()
    }

    /// Records a failed fetch with the backoff or throttle ``FetchPolicy/afterFailure`` computes from
    /// the stored step, so the schedule survives restarts.
    private func recordFailure(_ error: SourceError, status: StoreStatus, source: any ConfigSource) -> FetchOutcome {
        let now = Timestamp.now()
        var retryAfter: Duration?
        var throttled = false
        if case let .throttled(serverDelay) = error.kind {
            throttled = true
            retryAfter = serverDelay
        }
        let failure = loop.policy.afterFailure(
            previousStep: status.backoffStep, throttled: throttled, retryAfter: retryAfter, now: now)
        do {
            try writer.recordFetch(
                .failure(
                    error: error.message, backoffStep: failure.backoffStep, nextAttempt: failure.nextAttempt,
                    throttledUntil: failure.throttledUntil),
                at: now, activate: false)
        } catch {
            log.error("Failed to record a fetch failure: \(error)")
        }
        log.warning(
            "Failed to fetch from \(source.name): \(error.message); retrying at \(StatusText.clock(failure.nextAttempt))"
        )
        return .failed(error.message)
    }

    /// The round could not even read its state: logged, and the round fails without touching it.
    private func storeFailure(_ what: String, _ error: any Error) -> FetchOutcome {
        log.error("Failed to \(what): \(error)")
        return .failed("cannot \(what): \(error)")
    }

    /// Sets the periodic fetch's deadline from the stored fetch state. Without a source there is
    /// nothing to fetch by itself (no wake-ups while unprovisioned).
    func scheduleTimer() {
        let now = Timestamp.now()
        scheduleTimer(try? fetchState(now: now), now: now)
    }

    /// The timer from an already read fetch state (a round reads it once for this and the status line).
    private func scheduleTimer(_ status: StoreStatus?, now: Timestamp) {
        guard loop.source.isConfigured, let status else {
            loop.scheduler.cancel(.timer)
            return
        }
        // Never less than a second: whatever the stored times say, the loop cannot spin.
        let delay = max(loop.policy.nextFetch(status, now: now) - now, .seconds(1))
        loop.scheduler.schedule(.timer, at: .now + delay)
    }

    /// After the network or the clock settled: fetch when the cache is stale or the last fetch failed
    /// (that is when the change may be what the agent was waiting for), else only set the timer again,
    /// since a clock step moves its wall-clock deadline.
    private func afterSystemChange(_ changes: Set<SystemChange>) {
        // A clock step moves every dismissal date's distance from now.
        if changes.contains(.clock) {
            scheduleDismissal()
            activation.recheckDeferred(after: "the wall clock was set")
        }
        guard loop.source.isConfigured, let status = try? fetchState(now: .now()) else { return }
        let fetch = status.stale.isSet || status.lastStatus == .failure
        let decision =
            !fetch
            ? "not fetching (the cache is fresh)"
            : "fetching (\(status.stale.isSet ? "the cache is stale" : "the last fetch failed"))"
        for change in changes.sorted(by: { $0.rawValue < $1.rawValue }) { log.info("\(change.rawValue); \(decision)") }
        if fetch { loop.scheduler.request(.systemChange) } else { scheduleTimer() }
    }
}

extension StoreStatus {
    /// The newest template version the device has, active or fetched.
    var newestTemplateVersion: Int64? {
        [active.templateVersion, fetched.templateVersion].compactMap { $0.flatMap { Int64($0) } }.max()
    }
}
