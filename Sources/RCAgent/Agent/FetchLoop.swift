import RCCore

/// The fetch loop's own state, apart from the state store (``StateWriter``): where it fetches from,
/// when (the policy and the scheduler's deadlines), and the writes the store refused, kept for the
/// store retry. The agent's rounds (Agent+Rounds.swift) run on it.
struct FetchLoop {
    /// Replaced by a reload with another source; a round under way keeps the one it started with.
    var source: any ConfigSource
    var policy: FetchPolicy
    var scheduler = FetchScheduler()
    /// Gives back the pages a round mapped once the agent has been quiet this long (tests that
    /// watch the loop's waits set it out of their way).
    let settleDelay: Duration
    /// A fetch result the store refused, kept for the store retry.
    var unstored: (result: SourceResult, at: Timestamp, fetchTime: Duration)?
    /// A stale flag the store refused, written by the store retry unless a fetch is stored first.
    var unstoredStale: (reason: String, at: Timestamp)?

    init(source: any ConfigSource, policy: FetchPolicy, settleDelay: Duration) {
        self.source = source
        self.policy = policy
        self.settleDelay = settleDelay
    }
}
