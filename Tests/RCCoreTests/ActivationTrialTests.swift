import RCCore
import RCSystem
import Testing

/// The rules of a trial and of `HoldLimit=`, as plain values.
@Suite struct ActivationTrialTests {
    private let t0 = Timestamp(milliseconds: 1_700_000_000_000)

    @Test func aPassedCheckWithinTheTimeoutCommits() {
        var trial = ActivationTrial()
        #expect(trial.start(version: "2", at: t0, timeout: .seconds(60)) == .runCheck(deadline: t0 + .seconds(60)))
        #expect(trial.verdict(.passed, at: t0 + .seconds(5)) == .commit)
        #expect(trial.phase == .idle)
    }

    @Test func aFailedCheckRollsBackWithItsExitStatus() {
        var trial = ActivationTrial()
        _ = trial.start(version: "2", at: t0, timeout: .seconds(60))
        #expect(trial.verdict(.failed(exitCode: 3), at: t0 + .seconds(1)) == .rollBack(.healthCheckFailed(exitCode: 3)))
    }

    @Test func aHangingCheckRollsBackAtTheDeadlineAndItsLateVerdictCountsForNothing() {
        var trial = ActivationTrial()
        _ = trial.start(version: "2", at: t0, timeout: .seconds(60))
        #expect(trial.tick(at: t0 + .seconds(59)) == .nothing)
        #expect(trial.tick(at: t0 + .seconds(60)) == .rollBack(.timedOut))
        #expect(trial.verdict(.passed, at: t0 + .seconds(61)) == .nothing)
    }

    @Test func aPassThatArrivesAfterTheDeadlineIsATimeout() {
        var trial = ActivationTrial()
        _ = trial.start(version: "2", at: t0, timeout: .seconds(60))
        #expect(trial.verdict(.passed, at: t0 + .seconds(61)) == .rollBack(.timedOut))
        #expect(trial.verdict(.timedOut, at: t0) == .nothing)
    }

    @Test func aTrialFoundPendingAtStartRollsBackAsInterrupted() {
        #expect(ActivationTrial.resume(pendingFound: true) == .rollBack(.interrupted))
        #expect(ActivationTrial.resume(pendingFound: false) == .nothing)
        #expect(RollbackReason.interrupted.description == "interrupted")
        #expect(RollbackReason.healthCheckFailed(exitCode: 7).description == "health check failed (exit 7)")
    }

    @Test func holdsDeferUntilTheYoungestReachesTheLimit() {
        let policy = HoldPolicy(limit: .seconds(3600))
        #expect(policy.verdict([], at: t0) == .free)
        let old = Hold(pid: 10, since: t0 + .seconds(-3000), reason: "payment")
        let young = Hold(pid: 11, since: t0 + .seconds(-60), reason: nil)
        #expect(policy.verdict([old, young], at: t0) == .held(until: t0 + .seconds(3540)))
        #expect(policy.verdict([old], at: t0) == .held(until: t0 + .seconds(600)))
    }

    @Test func aForgottenHoldStopsDeferring() {
        let policy = HoldPolicy(limit: .seconds(3600))
        let forgotten = Hold(pid: 10, since: t0 + .seconds(-3600), reason: "call")
        #expect(policy.verdict([forgotten], at: t0) == .expired([forgotten]))
        // A hold whose start is unknown counts from now.
        let unknown = Hold(pid: 12, since: nil, reason: nil)
        #expect(policy.verdict([unknown], at: t0) == .held(until: t0 + .seconds(3600)))
    }
}
