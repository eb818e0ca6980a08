import RCCore
import RCService
import RCStore
import RCSystem

/// Safe activation: every activation of the daemon goes through here. The gate (maintenance
/// windows, holds: Activator+Deferral.swift) decides whether it happens now; the writer records it
/// (in the history, with `HealthCheck=` as a trial in the same transaction); the trial's check runs
/// on a thread of its own and its verdict commits or rolls back (Activator+Trials.swift).
///
/// Owned by the agent beside the writer and the fetch loop, and used only on the agent's executor.
/// It writes through the ``StateWriter``, sets its one deadline (`activationDue`) in the
/// ``FetchLoop``, and hears from other threads (the hold lock's watch, a health check's verdict)
/// through the loop's inbox, in order with everything else the agent is asked.
final class Activator {
    let writer: StateWriter
    let loop: FetchLoop
    let log: Logger
    /// `Activation=`: when a fetched snapshot is activated.
    var policy: ActivationPolicy
    /// Maintenance windows and holds: the activation that waits.
    var deferral = ActivationDeferral()
    /// The trial whose health check runs now, if any.
    var trial = ActivationTrial()

    /// `[Activation]` as configured (the writer records with the same).
    var settings: ActivationSettings { writer.activationSettings }

    init(policy: ActivationPolicy, settings: ActivationSettings, writer: StateWriter, loop: FetchLoop, log: Logger) {
        self.policy = policy
        self.writer = writer
        self.loop = loop
        self.log = log
        writer.activationSettings = settings
    }

    /// A reload: another policy, other windows, hold limit or health check. Other windows or
    /// another hold limit may end a wait, or start one.
    func configure(policy: ActivationPolicy, settings: ActivationSettings) {
        self.policy = policy
        writer.activationSettings = settings
        recheckDeferred(after: "the config was reloaded")
    }

    /// At start, before anything is served: a trial the daemon (or the device) died during rolls
    /// back before anything else activates; then the hold lock is watched, a deferral a previous
    /// run recorded is taken up, and the `on-start` activation made, all through the gate.
    func start(stateDirectory: String) throws {
        rollBackInterruptedTrial()
        let path = HoldLock.path(stateDirectory: stateDirectory)
        do {
            deferral.holdWatch = try HoldWatch(path: path) { [inbox = loop.inbox] in inbox.send(.holdReleased) }
        } catch {
            log.error("Failed to watch the hold lock \(path): \(error); holds do not defer activations")
        }
        deferral.current = try? writer.store.deferredActivation()
        if policy == .onStart {
            _ = try activateOrDefer(now: false, fetchedBeforeStart: true)
        } else {
            recheckDeferred(after: "the daemon started")
        }
    }

    /// Activates the fetched snapshot past the gate (manual and on-start policies: the gate asked
    /// first). `nil` when nothing was pending. `fetchedBeforeStart`: the daemon's own activation
    /// at start (`Activation=on-start`).
    func activate(fetchedBeforeStart: Bool = false) throws -> Activation? {
        let activation = try writer.activate(at: .now())
        if let activation {
            let when = fetchedBeforeStart ? " fetched before this start" : ""
            log.info(
                "Activated template \(activation.templateVersion ?? "-")\(when): \(StatusText.describe(activation.changedKeys))"
            )
            showStatus()
            startTrialIfPending()
        }
        return activation
    }

    /// After a fetch stored a snapshot and perhaps activated it with its record (`activation`):
    /// its trial starts; a deferred one is recorded and announced; an activation ends any
    /// deferral; a newer snapshot replacing one that waited waits in its place.
    func fetched(_ version: String?, activation: Activation?, decision: ActivationGate.Decision?, at now: Timestamp) {
        if activation != nil { startTrialIfPending() }
        settleDeferral(after: activation, of: version, decision: decision, at: now)
    }

    /// `rcagent rollback [VERSION]`: re-activates a kept snapshot, rejecting the versions after it.
    func rollback(to version: String?) throws -> Result<Activation, RollbackRefusal> {
        let result = try writer.rollback(to: version, at: .now())
        switch result {
        case let .success(activation):
            log.notice(
                "Rolled back to template \(activation.templateVersion ?? "-") (rcagent rollback): \(StatusText.describe(activation.changedKeys))"
            )
            showStatus()
        case let .failure(refusal):
            log.info("Not rolling back: \(refusal)")
        }
        return result
    }

    /// The `STATUS=` line, after an activation or a rollback changed what is active.
    func showStatus() {
        loop.showStatus(try? writer.status(), now: .now())
    }
}
