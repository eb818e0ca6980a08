import RCCore
import RCStore
import RCSystem

/// The activator's trials: with `HealthCheck=`, an activation is a trial (persisted by the
/// store with the activation itself), whose check runs on a thread of its own (a blocking wait on a
/// child process, off the cooperative pool and off the agent's queue). Its verdict commits the trial
/// or rolls it back; a trial found pending at start rolls back. Each outcome is one log line.
extension Activator {
    /// At start, before anything else activates: a trial still pending was interrupted (the daemon
    /// or the device died during it, perhaps because of its values), so it rolls back.
    func rollBackInterruptedTrial() {
        guard let pending = try? writer.store.pendingTrial() else { return }
        guard case .rollBack(let reason) = ActivationTrial.resume(pendingFound: true) else { return }
        rollBack(pending.templateVersion, reason)
    }

    /// After an activation: when the store holds a trial and no check runs for it, runs the check.
    /// A trial left pending after `HealthCheck=` was removed by a reload is committed: nothing can
    /// judge it any more.
    func startTrialIfPending() {
        guard case .idle = trial.phase else { return }
        let pending: PendingTrial?
        do { pending = try writer.store.pendingTrial() } catch {
            log.error("Failed to read the pending trial: \(error)")
            return
        }
        guard let pending else { return }
        guard let path = settings.healthCheck else {
            log.notice(
                "Committed the trial of template \(pending.templateVersion ?? "-"): HealthCheck= is no longer set")
            commitTrial()
            return
        }
        let now = Timestamp.now()
        _ = trial.start(version: pending.templateVersion, at: now, timeout: settings.healthTimeout)
        let previous = (try? writer.store.history())?.first { $0.id < pending.historyID && $0.outcome == .superseded }
        let check = HealthCheck(path: path, timeout: settings.healthTimeout)
        let version = pending.templateVersion
        let log = self.log
        log.info(
            "Trial of template \(version ?? "-") started: running \(path) (HealthTimeout=\(DurationText.format(settings.healthTimeout)))"
        )
        let started = DetachedThread.start { [inbox = loop.inbox] in
            let result = check.run(templateVersion: version, previousVersion: previous?.templateVersion, log: log)
            // In order with the rest of the agent's inputs; one that comes after the stop is lost,
            // and the trial, still pending, rolls back at the next start: the safe side.
            inbox.send(.trialChecked(version: version, verdict: result.verdict))
        }
        if !started {
            log.error("Failed to start the health check of template \(version ?? "-"): no thread; rolling back")
            trialChecked(version, .failed(exitCode: 126))
        }
    }

    /// The check of the trial of `version` answered: commit, or roll back.
    func trialChecked(_ version: String?, _ verdict: HealthVerdict) {
        switch trial.verdict(verdict, at: .now()) {
        case .commit:
            commitTrial()
            log.info("Trial of template \(version ?? "-") passed its health check; committed")
        case let .rollBack(reason):
            rollBack(version, reason)
        case .runCheck, .nothing:
            break
        }
        showStatus()
        // A newer snapshot fetched while the check ran waited for its verdict; it is tried now.
        if policy == .immediate, (try? writer.status().pending) == true {
            _ = try? activate()
        }
    }

    private func commitTrial() {
        do { try writer.commitTrial(at: .now()) } catch {
            // The trial stays pending: the next start rolls it back, the safe side.
            log.error("Failed to commit the trial: \(error)")
        }
    }

    private func rollBack(_ version: String?, _ reason: RollbackReason) {
        do {
            guard let activation = try writer.rollBackTrial(reason, at: .now()) else { return }
            log.warning(
                "Rolled back template \(version ?? "-") (\(reason.description)); template \(activation.templateVersion ?? "-") is active again and \(version ?? "-") rejected: \(StatusText.describe(activation.changedKeys))"
            )
        } catch {
            // The trial stays pending: the next start (or the next verdict) rolls it back.
            log.error("Failed to roll back template \(version ?? "-") (\(reason.description)): \(error)")
        }
    }
}
