import RCCore
import RCService
import RCStore
import RCSystem

/// The fetch loop's own state, apart from the state store (``StateWriter``): where it fetches from,
/// when (the policy and the scheduler's deadlines), the writes the store refused, kept for the
/// store retry, and the `STATUS=` line that shows when the next fetch is. The agent's rounds
/// (Agent+Rounds.swift) run on it; the activator (``Activator``) sets its deadline in it. Owned by
/// the agent and used only on its executor, like the writer.
final class FetchLoop {
    /// Retries a write the store refused this often.
    static let storeRetry = Duration.seconds(5)
    /// A network or clock change is acted on once nothing more has changed for this long.
    static let systemChangeDebounce = Duration.seconds(1)

    /// Replaced by a reload with another source; a round under way keeps the one it started with.
    var source: any ConfigSource
    var policy: FetchPolicy
    var scheduler = FetchScheduler()
    /// Every request to fetch, whoever sends it, comes through here to the agent's `run()`.
    let inbox: Inbox<AgentInput>
    let notifier: SystemdNotifier
    /// Gives back the pages a round mapped once the agent has been quiet this long (tests that
    /// watch the loop's waits set it out of their way).
    let settleDelay: Duration
    /// A fetch result the store refused, kept for the store retry.
    var unstored: (result: SourceResult, at: Timestamp, fetchTime: Duration)?
    /// A stale flag the store refused, written by the store retry unless a fetch is stored first.
    var unstoredStale: (reason: String, at: Timestamp)?

    init(
        source: any ConfigSource, policy: FetchPolicy, inbox: Inbox<AgentInput>, notifier: SystemdNotifier,
        settleDelay: Duration
    ) {
        self.inbox = inbox
        self.source = source
        self.policy = policy
        self.notifier = notifier
        self.settleDelay = settleDelay
    }

    /// Sets `job`'s deadline (`nil`: cancels it) and has the loop take its wait again: it may be
    /// waiting for a later deadline.
    func reschedule(_ job: FetchScheduler.Job, at deadline: ContinuousClock.Instant?) {
        if let deadline { scheduler.schedule(job, at: deadline) } else { scheduler.cancel(job) }
        inbox.send(.rescheduled)
    }

    /// Sets the `STATUS=` line systemd shows from `status` (nothing when it could not be read).
    func showStatus(_ status: StoreStatus?, now: Timestamp) {
        guard let status else { return }
        notifier.status(
            StatusText.line(status, nextFetch: source.isConfigured ? policy.nextFetch(status, now: now) : nil))
    }
}
