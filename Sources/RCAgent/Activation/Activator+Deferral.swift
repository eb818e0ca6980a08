import RCCore
import RCStore
import RCSystem

/// The activator's side of maintenance windows and holds (safe activation): every activation (after a
/// fetch under `Activation=immediate`, at start under `on-start`, `rcagent activate`) asks
/// ``ActivationGate`` first. A deferred one leaves the fetched snapshot pending, recorded in the
/// store (``DeferredActivation``: `status`, the report and a restarted daemon see it), and is looked
/// at again when it is due (a window opens, a hold reaches `HoldLimit=`: a deadline of the loop),
/// when the last hold is let go (``HoldWatch``), when the wall clock is set and after a reload.
/// `rcagent activate --now` and a push carrying `"activate": "now"` pass the gate.
struct ActivationDeferral {
    /// The hold lock's watch (`nil` when it could not be opened: holds then defer nothing).
    var holdWatch: HoldWatch?
    /// What the store holds (read at start, kept in step with every write).
    var current: DeferredActivation?
    /// When each holding process was first seen: a hold whose start `/proc` does not tell counts from then.
    var firstSeen: [Int32: Timestamp] = [:]
    /// Holds already logged as forgotten (past `HoldLimit=`): each is logged once.
    var forgotten: Set<Int32> = []
    /// A push carried `"activate": "now"`: the activation of what its fetch brings passes the gate.
    var overrideNext = false
    /// A due check that finds the window still closed is taken again this much later, at the least
    /// (the loop's clock and the wall clock may disagree by a little).
    static let minimumRecheck = Duration.milliseconds(100)
}

extension Activator {
    /// `rcagent activate [--now]` (and the `on-start` activation): activates the pending snapshot,
    /// or records why it waits and until when.
    func activateOrDefer(now override: Bool, fetchedBeforeStart: Bool = false) throws -> ActivateResponse {
        let now = Timestamp.now()
        // A trial's verdict comes first: activating now would start a second trial over it (and
        // leave the new version without a health check).
        if case let .checking(version, deadline) = trial.phase {
            return .trialRunning(templateVersion: version, deadline: deadline)
        }
        let status = try writer.status()
        guard status.pending else {
            clearDeferral(at: now)
            return .nothingToActivate
        }
        if case let .deferred(until, why) = activationDecision(override: override, at: now) {
            return .deferred(deferActivation(of: status.fetched.templateVersion, until: until, why: why, at: now))
        }
        if override, let waiting = deferral.current {
            log.notice("Activating template \(waiting.templateVersion) now, past maintenance windows and holds")
        }
        let activation = try activate(fetchedBeforeStart: fetchedBeforeStart)
        clearDeferral(at: now)
        guard let activation else { return .nothingToActivate }
        return .activated(templateVersion: activation.templateVersion, changedKeys: activation.changedKeys)
    }

    /// The gate's decision for an activation under `Activation=immediate` after a fetch (`nil` under
    /// the other policies, which do not activate after a fetch). A push's `"activate": "now"` passes.
    func immediateActivationDecision(at now: Timestamp) -> ActivationGate.Decision? {
        guard policy == .immediate else { return nil }
        return activationDecision(override: deferral.overrideNext, at: now)
    }

    /// After a fetch stored a new snapshot: a deferred one is recorded and announced; an activation
    /// ends any deferral; a newer snapshot replacing one that waited waits in its place.
    func settleDeferral(
        after activation: Activation?, of version: String?, decision: ActivationGate.Decision?, at now: Timestamp
    ) {
        if case let .deferred(until, why)? = decision {
            _ = deferActivation(of: version, until: until, why: why, at: now)
        } else if activation != nil {
            clearDeferral(at: now)
        } else if deferral.current != nil {
            recheckDeferred(after: "a newer template was fetched")
        }
    }

    /// A push carried `"activate": "now"` (a kill switch): what waits is activated at once (and the
    /// fetch the push starts, if it marks the config stale, activates what it brings: ``handle``).
    func activateNow(pushedBy channel: String) {
        guard deferral.current != nil else { return }
        log.notice("A push from \(channel) says activate now")
        do { _ = try activateOrDefer(now: true) } catch {
            log.error("Failed to activate the deferred template: \(error)")
        }
    }

    /// Takes a deferral up again: activates the pending snapshot if the gate lets it through now, or
    /// records the new end of the wait.
    func recheckDeferred(after cause: String) {
        guard let waiting = deferral.current else { return }
        let now = Timestamp.now()
        guard let status = try? writer.status(), status.pending else { return clearDeferral(at: now) }
        if case let .deferred(until, why) = activationDecision(override: false, at: now) {
            _ = deferActivation(of: status.fetched.templateVersion, until: until, why: why, at: now)
            return
        }
        log.info("The deferred activation of template \(waiting.templateVersion) is due: \(cause)")
        do { _ = try activateOrDefer(now: false) } catch {
            log.error("Failed to activate the deferred template \(waiting.templateVersion): \(error)")
            loop.reschedule(.activationDue, at: .now + FetchLoop.storeRetry)
        }
    }

    // MARK: - The gate

    private func activationDecision(override: Bool, at now: Timestamp) -> ActivationGate.Decision {
        ActivationGate.decide(
            at: now, windows: settings.windows, holds: holdVerdict(at: now), now: override)
    }

    /// The holds as `HoldLimit=` judges them; a hold that runs past the limit is logged once.
    private func holdVerdict(at now: Timestamp) -> HoldPolicy.Verdict {
        guard let watch = deferral.holdWatch, (try? watch.lock.isHeld()) == true else {
            deferral.firstSeen = [:]
            deferral.forgotten = []
            return .free
        }
        let holders = watch.lock.holders()
        // Held, though /proc/locks does not say by whom (another pid namespace): no limit known.
        guard !holders.isEmpty else { return .held(until: nil) }
        let pids = Set(holders.map(\.pid))
        deferral.firstSeen = deferral.firstSeen.filter { pids.contains($0.key) }
        deferral.forgotten.formIntersection(pids)
        let holds = holders.map { hold in
            var hold = hold
            let seen = deferral.firstSeen[hold.pid] ?? now
            deferral.firstSeen[hold.pid] = seen
            if hold.since == nil { hold.since = seen }
            return hold
        }
        let limit = settings.holdLimit
        for hold in holds where (hold.since ?? now) + limit <= now && !deferral.forgotten.contains(hold.pid) {
            deferral.forgotten.insert(hold.pid)
            let reason = hold.reason.map { " (\(TextEscaping.terminal(StoredText.reason($0))))" } ?? ""
            log.warning(
                "The hold by pid \(hold.pid)\(reason) has run past HoldLimit=\(DurationText.format(limit)); it no longer defers activations"
            )
        }
        return HoldPolicy(limit: limit).verdict(holds, at: now)
    }

    // MARK: - The record

    /// Records that the pending snapshot waits (announced once per template version: a log line and
    /// the `activation-deferred` event) and sets the deadline of the next look.
    private func deferActivation(
        of version: String?, until: Timestamp?, why: ActivationGate.Reason, at now: Timestamp
    ) -> DeferredActivation {
        let previous = deferral.current
        let deferred = DeferredActivation(
            templateVersion: version ?? "-", since: previous?.since ?? now, until: until,
            why: why == .window ? .window : .hold)
        let announce = previous?.templateVersion != deferred.templateVersion
        if previous != deferred {
            do {
                try writer.recordDeferral(deferred, announce: announce, at: now)
                deferral.current = deferred
            } catch {
                log.error("Failed to store the deferred activation of template \(deferred.templateVersion): \(error)")
                deferral.current = deferred
            }
        }
        if announce {
            let when = until.map { "until \($0.iso8601)" } ?? "until the last hold is released"
            let reason = why == .window ? "outside every Window=" : "held by rcagent hold"
            log.notice("Deferred the activation of template \(deferred.templateVersion) \(when) (\(reason))")
        }
        loop.reschedule(
            .activationDue, at: until.map { .now + max($0 - Timestamp.now(), ActivationDeferral.minimumRecheck) })
        return deferred
    }

    private func clearDeferral(at now: Timestamp) {
        loop.scheduler.cancel(.activationDue)
        guard deferral.current != nil else { return }
        do {
            try writer.recordDeferral(nil, announce: false, at: now)
            deferral.current = nil
        } catch {
            log.error("Failed to clear the deferred activation: \(error)")
        }
    }
}
