import RCCore

/// Why a fetch was asked for. Triggers that arrive while one fetch runs coalesce into the next.
public enum FetchTrigger: Sendable, Equatable {
    /// Daemon start: fetch when stale or older than the interval.
    case startup
    /// The interval, a backoff or a throttle ran out.
    case timer
    /// A push marked the config stale.
    case push
    /// The `file` source changed on disk.
    case sourceChanged
    /// `rcagent fetch`.
    case manual(force: Bool, ignoreThrottle: Bool)
    /// The realtime stream announced a newer template (`target`), or reopened while the cache was
    /// stale (`nil`: a message may have been missed).
    case realtime(attempt: Int, target: Int64? = nil)
    /// A push channel (MQTT) reconnected: a ping may have been missed while it was down.
    case pushReconnect
    /// The network may have come up, or the wall clock was set (a resume from suspend does), while
    /// the cache was stale or the last fetch had failed.
    case systemChange
    /// A reload changed the source or its settings (`newSource`: another source altogether, which
    /// the old one's throttle and backoff do not bind), or the signals templates are evaluated with.
    case reload(newSource: Bool)

    var isForced: Bool {
        switch self {
        case .sourceChanged, .realtime, .pushReconnect, .systemChange, .reload: true
        case let .manual(force, _): force
        default: false
        }
    }

    var ignoresThrottle: Bool {
        switch self {
        case .manual(_, true), .reload(newSource: true): true
        default: false
        }
    }

    /// Whether the round sends the stored ETag: not after a reload, whose new source or signals
    /// must be answered with a whole document, never "not modified".
    var sendsETag: Bool {
        if case .reload = self { false } else { true }
    }

    /// An automatic retry (timer, push) waits out the backoff; a person, a local file change, the
    /// network coming up or a resume (the likely end of what made the fetches fail) does not.
    var waitsOutBackoff: Bool {
        switch self {
        case .timer, .push, .startup, .realtime, .pushReconnect: true
        case .manual, .sourceChanged, .systemChange, .reload: false
        }
    }
}

/// What changed around the agent: the network may have come up (``NetworkMonitor``), or the wall
/// clock was set, by hand, by NTP or by a resume from suspend (``ClockWatch``).
enum SystemChange: String, Sendable {
    case network = "The network changed"
    case clock = "The wall clock was set (or the system resumed)"
}

/// What one fetch round came to, as `rcagent fetch --wait` reports it.
enum FetchOutcome: Sendable {
    /// `deferred`: what holds a fetched template back (a window, a hold), when one does.
    case updated(changedKeys: [String]?, templateVersion: String?, deferred: DeferredActivation? = nil)
    case noChange
    /// Not due (the interval holds and nothing forced it), or deferred by backoff.
    case skipped(reason: String, next: Timestamp?)
    case throttled(until: Timestamp)
    case failed(String)
    case cancelled

    /// The answer to `fetch` with `wait` (and the `fetch` member of a `message` answer).
    var reply: Result<FetchResponse, ControlError> {
        switch self {
        case let .updated(changed, version, deferred):
            .success(.updated(templateVersion: version, changedKeys: changed, deferred: deferred))
        case .noChange: .success(.noChange)
        case let .skipped(reason, next): .success(.skipped(reason: reason, nextFetchAt: next?.iso8601))
        case let .throttled(until):
            .failure(ControlError(.throttled, "fetch refused: the server throttles fetches until \(until.iso8601)"))
        case let .failed(message): .failure(ControlError(.fetchFailed, message))
        case .cancelled: .failure(ControlError(.shuttingDown, "the daemon is shutting down"))
        }
    }
}

extension FetchTrigger {
    /// The trigger a round tells its source: a reload first (no ETag), then the latest realtime
    /// attempt (Firebase names those fetches), else the first request.
    static func representative(of triggers: [FetchTrigger]) -> FetchTrigger {
        if let reload = triggers.first(where: { !$0.sendsETag }) { return reload }
        let attempts = triggers.compactMap { if case let .realtime(attempt, _) = $0 { attempt } else { nil } }
        if let latest = attempts.max() { return .realtime(attempt: latest) }
        return triggers.first ?? .timer
    }
}
