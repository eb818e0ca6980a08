import RCCore
import Testing

@testable import RCAgent
@testable import RCStore

/// The fetch policy on its own: when a fetch is due, when the next one comes,
/// the backoff schedule and what a failure or a throttling server leaves behind.
@Suite struct FetchPolicyTests {
    let now = Timestamp(milliseconds: 1_800_000_000_000)
    let policy = FetchPolicy(minimumInterval: .seconds(12 * 3600))

    func ago(_ seconds: Int64) -> Timestamp { now + .seconds(-seconds) }

    func status(
        stale: Bool = false, lastAttempt: Timestamp? = nil, lastSuccess: Timestamp? = nil, backoffStep: Int = 0,
        nextFetchAt: Timestamp? = nil
    ) -> StoreStatus {
        StoreStatus(
            deviceId: "d", stale: stale ? StaleFlag(isSet: true, reason: "ping", since: now) : .clear,
            active: SnapshotInfo(templateVersion: nil, etag: nil, at: nil, keys: 0),
            fetched: SnapshotInfo(templateVersion: nil, etag: nil, at: nil, keys: 0), pending: false,
            lastAttempt: lastAttempt,
            lastSuccess: lastSuccess, lastStatus: nil, lastError: nil, throttledUntil: nil, backoffStep: backoffStep,
            nextFetchAt: nextFetchAt)
    }

    @Test func dueWhenStaleNeverFetchedOrOlderThanTheInterval() {
        #expect(policy.isDue(status(), now: now), "never fetched")
        #expect(!policy.isDue(status(lastSuccess: ago(3600)), now: now))
        #expect(policy.isDue(status(stale: true, lastSuccess: ago(1)), now: now), "stale bypasses it")
        #expect(policy.isDue(status(lastSuccess: ago(12 * 3600)), now: now))
        #expect(policy.isDue(status(lastSuccess: ago(60), nextFetchAt: ago(1)), now: now))
        #expect(!policy.isDue(status(lastSuccess: ago(60), nextFetchAt: now + .seconds(1)), now: now))
    }

    @Test func nextFetchIsTheRetryElseNowWhenStaleElseOneIntervalOn() {
        let retry = now + .seconds(300)
        #expect(policy.nextFetch(status(stale: true, nextFetchAt: retry), now: now) == retry, "backoff holds stale")
        #expect(policy.nextFetch(status(stale: true, lastSuccess: now), now: now) == now)
        #expect(policy.nextFetch(status(lastSuccess: now), now: now) == now + .seconds(12 * 3600))
        var eager = policy
        eager.minimumInterval = .zero
        #expect(eager.nextFetch(status(lastSuccess: now), now: now) == now + eager.periodicFloor)
    }

    @Test func aClockStepBackIsMeasuredBeyondASecondOfSlack() {
        #expect(policy.clockStepBack(status(lastAttempt: now + .milliseconds(900)), now: now) == nil)
        #expect(policy.clockStepBack(status(lastSuccess: now + .seconds(86_400)), now: now) == .seconds(86_400))
        #expect(policy.clockStepBack(status(lastSuccess: ago(5)), now: now) == nil)
    }

    @Test func backoffDoublesFromTwoMinutesToFourHoursWithinHalfAndOneAndAHalf() {
        for (step, base) in [(1, 120), (2, 240), (3, 480), (7, 7_680), (8, 14_400), (30, 14_400)] {
            #expect(policy.backoff(step: step, random: 0.5) == .seconds(base), "step \(step)")
            #expect(policy.backoff(step: step, random: 0) == .milliseconds(Int64(base) * 500))
            #expect(policy.backoff(step: step, random: 0.999_999) <= .seconds(base) * 1.5)
        }
        #expect(policy.backoff(step: 0, random: 0.5) == .seconds(120), "a step below 1 counts as the first")
    }

    @Test func aFailureAdvancesTheStepAndWaitsTheBackoff() {
        let failure = policy.afterFailure(previousStep: 2, throttled: false, retryAfter: nil, now: now, random: 0.5)
        #expect(failure == FetchPolicy.Failure(backoffStep: 3, nextAttempt: now + .seconds(480), throttledUntil: nil))
    }

    @Test func aThrottleHoldsUntilRetryAfterButNeverLessThanTheFloor() {
        let long = policy.afterFailure(
            previousStep: 0, throttled: true, retryAfter: .seconds(600), now: now, random: 0.5)
        #expect(long.nextAttempt == now + .seconds(600) && long.throttledUntil == now + .seconds(600))
        let zero = policy.afterFailure(previousStep: 0, throttled: true, retryAfter: .zero, now: now, random: 0.5)
        #expect(zero.throttledUntil == now + policy.retryAfterFloor, "Retry-After: 0 must not hammer the server")
        let unnamed = policy.afterFailure(previousStep: 4, throttled: true, retryAfter: nil, now: now, random: 0.5)
        #expect(unnamed.throttledUntil == now + .seconds(1_920) && unnamed.backoffStep == 5, "the backoff holds")
    }
}
