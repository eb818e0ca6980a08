import RCCore

/// What the agent does next, and when: the fetch requests waiting for a round, and the deadlines
/// of its timers (the periodic fetch, the store retry, giving memory back, the debounce after a
/// network or clock change, jittered push fetches). A plain value with no clock of its own: the
/// agent passes `now` in, so tests drive it with made-up instants.
struct FetchScheduler {
    typealias Instant = ContinuousClock.Instant
    typealias Reply = @Sendable (FetchOutcome) -> Void

    /// What a deadline does when it comes.
    enum Job: Sendable {
        /// The interval, a backoff or a throttle ran out: fetch (``FetchTrigger/timer``).
        case timer
        /// Write again what a full or read-only disk refused.
        case storeRetry
        /// The agent has been quiet for a while: give back the pages the last round used.
        case settle
        /// The network or the clock (or both) stopped changing: decide whether that calls for a fetch.
        case systemChange(Set<SystemChange>)
        /// A fetch asked for after a random wait (push channels must not stampede the server).
        case delayed(FetchTrigger)
        /// An ended Live Activity reached its dismissal date: remove it (and any others due).
        case dismissal
        /// A deferred activation is due (a window opens, a hold reaches `HoldLimit=`): look again.
        case activationDue

        /// Jobs of one kind replace each other; delayed fetches only one with the same trigger.
        fileprivate var replaces: (Job) -> Bool {
            switch self {
            case .timer: { if case .timer = $0 { true } else { false } }
            case .storeRetry: { if case .storeRetry = $0 { true } else { false } }
            case .settle: { if case .settle = $0 { true } else { false } }
            case .systemChange: { if case .systemChange = $0 { true } else { false } }
            case let .delayed(trigger): { if case .delayed(trigger) = $0 { true } else { false } }
            case .dismissal: { if case .dismissal = $0 { true } else { false } }
            case .activationDue: { if case .activationDue = $0 { true } else { false } }
            }
        }
    }

    /// Requests that the next round answers, each with whoever waits for its outcome.
    private(set) var pending: [(trigger: FetchTrigger, reply: Reply?)] = []
    private var deadlines: [(at: Instant, job: Job)] = []

    mutating func request(_ trigger: FetchTrigger, reply: Reply? = nil) {
        pending.append((trigger, reply))
    }

    /// Hands the waiting requests to a round: all of them, so a burst of pings costs one fetch.
    mutating func takePending() -> [(trigger: FetchTrigger, reply: Reply?)] {
        defer { pending = [] }
        return pending
    }

    /// Sets `job` to happen at `at`, replacing a job of the same kind. System changes add up: the
    /// network and the clock changing within one debounce are both reported.
    mutating func schedule(_ job: Job, at: Instant) {
        var job = job
        if case let .systemChange(changes) = job {
            for case (_, .systemChange(let earlier)) in deadlines { job = .systemChange(changes.union(earlier)) }
        }
        deadlines.removeAll { job.replaces($0.job) }
        deadlines.append((at, job))
    }

    /// Sets `job` unless one of its kind is already set (the store retry keeps its first deadline;
    /// a delayed fetch waiting for its turn covers another of the same trigger, see
    /// ``Agent/requestAfterJitter(_:jitter:)``).
    mutating func scheduleIfUnset(_ job: Job, at: Instant) {
        guard !isScheduled(job) else { return }
        deadlines.append((at, job))
    }

    mutating func cancel(_ job: Job) {
        deadlines.removeAll { job.replaces($0.job) }
    }

    func isScheduled(_ job: Job) -> Bool {
        deadlines.contains { job.replaces($0.job) }
    }

    /// When the next job is due: how long the agent may wait for input.
    var earliest: Instant? {
        deadlines.map(\.at).min()
    }

    /// Removes and returns the jobs due at `now`, earliest first.
    mutating func takeDue(now: Instant) -> [Job] {
        let due = deadlines.filter { $0.at <= now }.sorted { $0.at < $1.at }
        deadlines.removeAll { $0.at <= now }
        return due.map(\.job)
    }
}
