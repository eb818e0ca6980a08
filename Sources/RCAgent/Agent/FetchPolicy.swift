import RCCore
import RCStore

/// When the next fetch may happen, in one place for every source: the minimum
/// interval unless stale or forced, exponential backoff with jitter after failures, and the
/// server's throttle, which only `--ignore-throttle` overrides.
public struct FetchPolicy: Sendable {
    public var minimumInterval: Duration
    /// Firebase's schedule: about 2 minutes, doubling, at most 4 hours.
    public var backoffBase: Duration = .seconds(120)
    public var backoffCap: Duration = .seconds(4 * 3600)

    public init(minimumInterval: Duration) {
        self.minimumInterval = minimumInterval
    }

    /// The agent's own periodic fetches are at least this far apart, even with
    /// `MinimumFetchInterval=0` (which only lets every requested fetch through).
    public var periodicFloor: Duration = .seconds(60)

    /// Whether the cache wants a fetch now: stale, never fetched, a retry that has come due,
    /// or older than the interval.
    public func isDue(_ status: StoreStatus, now: Timestamp) -> Bool {
        if status.stale.isSet { return true }
        if let retry = status.nextFetchAt, retry <= now { return true }
        guard let success = status.lastSuccess else { return true }
        return now - success >= minimumInterval
    }

    /// When the agent should fetch by itself next: the backoff or throttle time when one is set,
    /// else now for a stale cache, else one interval (at least ``periodicFloor``) after the last success.
    public func nextFetch(_ status: StoreStatus, now: Timestamp) -> Timestamp {
        if let next = status.nextFetchAt { return next }
        if status.stale.isSet { return now }
        guard let success = status.lastSuccess else { return now }
        return success + max(minimumInterval, periodicFloor)
    }

    /// How far the wall clock has stepped back behind the fetch times the store holds, if it has
    /// (an RTC that lost power, NTP correcting a clock that ran ahead). Left alone, a step back of
    /// a day would hold every interval, backoff and throttle for a day more. A second of slack
    /// keeps ordinary clock adjustments out.
    public func clockStepBack(_ status: StoreStatus, now: Timestamp) -> Duration? {
        guard let latest = [status.lastAttempt, status.lastSuccess].compactMap({ $0 }).max(),
            latest - now > .seconds(1)
        else { return nil }
        return latest - now
    }

    /// A server's `Retry-After` is honoured, but never below this: a `Retry-After: 0` loop must not
    /// hammer it.
    public var retryAfterFloor: Duration = .seconds(30)

    /// What a failed fetch leaves behind: the failure count, when to try again, and, when the server
    /// asked for a pause, until when every fetch is held (forced ones too, unless `--ignore-throttle`).
    public struct Failure: Sendable, Equatable {
        public var backoffStep: Int
        public var nextAttempt: Timestamp
        public var throttledUntil: Timestamp?
    }

    /// The state after a failure that followed `previousStep` failures in a row. A throttling answer
    /// (429/503) holds fetches until its `Retry-After` (at least ``retryAfterFloor``), or for the
    /// backoff when it names no time.
    public func afterFailure(
        previousStep: Int, throttled: Bool, retryAfter: Duration?, now: Timestamp,
        random: Double = Double.random(in: 0..<1)
    ) -> Failure {
        let step = previousStep + 1
        var next = now + backoff(step: step, random: random)
        var throttledUntil: Timestamp?
        if throttled {
            next = retryAfter.map { now + max($0, retryAfterFloor) } ?? next
            throttledUntil = next
        }
        return Failure(backoffStep: step, nextAttempt: next, throttledUntil: throttledUntil)
    }

    /// The wait after the `step`-th consecutive failure (1-based), with ±50% jitter.
    public func backoff(step: Int, random: Double = Double.random(in: 0..<1)) -> Duration {
        Jitter.halfAround(Backoff.step(failures: step, base: backoffBase, cap: backoffCap), random: random)
    }
}
