/// What an event of the agent's log says happened: the one list of kinds the store logs, the hooks
/// hear (`RCAGENT_EVENT`), `watch` streams and `status`, `activity` and the report read. The raw
/// values are the spellings on the wire and in the database, and never change.
///
/// A log written by another version may hold a kind this one does not know: readers keep the
/// text (``StoredEvent/kind``, `WatchEvent.kind`) and look the kind up with `init(rawValue:)`.
public enum AgentEventKind: String, Sendable, CaseIterable {
    /// A fetch stored a new snapshot (or found the old one current).
    case fetched
    /// A fetch failed.
    case fetchFailed = "fetch-failed"
    /// The fetched snapshot became the active one.
    case activated
    /// A push marked the config stale.
    case staleSet = "stale-set"
    /// A fetch cleared the stale flag.
    case staleCleared = "stale-cleared"
    /// A Live Activity started, changed, ended or went away.
    case activityStarted = "activity-started"
    case activityUpdated = "activity-updated"
    case activityEnded = "activity-ended"
    case activityRemoved = "activity-removed"
    /// The wall clock stepped back behind the stored fetch times, which moved back with it.
    case clockSteppedBack = "clock-stepped-back"
    /// A damaged database was moved aside and a new one started (status shows the last one).
    case databaseRecovered = "database-recovered"
    /// A fetched snapshot waits for a maintenance window or the end of a hold.
    case activationDeferred = "activation-deferred"
    /// A trial failed its health check (or a rollback was asked for): the previous snapshot is active again.
    case rolledBack = "rolled-back"

    /// The prefix every Live Activity kind starts with, for readers of kinds they may not know.
    public static let activityPrefix = "activity-"

    /// A Live Activity event.
    public var isActivity: Bool { rawValue.hasPrefix(Self.activityPrefix) }

    /// The kinds the hooks hear (`RCAGENT_EVENT`): activations (and deferred ones), the stale flag and activities.
    public var reachesHooks: Bool {
        switch self {
        case .activated, .rolledBack, .activationDeferred, .staleSet, .staleCleared, .activityStarted, .activityUpdated,
            .activityEnded,
            .activityRemoved:
            true
        case .fetched, .fetchFailed, .clockSteppedBack, .databaseRecovered: false
        }
    }
}
