/// A Live Activity as the device keeps it: what `rcagent activity list --json` prints, one per id.
///
/// `state` depends on the clock (an activity turns stale at its stale date), so whoever reads an
/// activity computes it for a given `now` (``LiveActivityRules``, the store's listing).
public struct LiveActivity: Sendable, Equatable {
    /// `active` until its stale date, `stale` after it, `ended` once an end message applied.
    public enum State: String, Sendable {
        case active, stale, ended
    }

    /// The message's `live_activity_token`.
    public var id: String
    public var state: State
    public var attributesType: String
    public var attributes: JSONValue
    public var contentState: JSONValue
    /// The alert of the last applied message; `nil` when that message had none.
    public var alert: LiveActivityMessage.Alert?
    /// The last applied message's `timestamp` (Unix seconds): later messages must be newer.
    public var timestamp: Int64
    /// When this device applied the start, the last message and the end (its own clock).
    public var startedAt: Timestamp
    public var updatedAt: Timestamp
    public var endedAt: Timestamp?
    /// The last applied message's `stale-date`.
    public var staleAt: Timestamp?
    /// When the ended activity is removed: the end's `dismissal-date`, else 4 hours after the end.
    public var dismissAt: Timestamp?

    public init(
        id: String, state: State, attributesType: String, attributes: JSONValue, contentState: JSONValue,
        alert: LiveActivityMessage.Alert?, timestamp: Int64, startedAt: Timestamp, updatedAt: Timestamp,
        endedAt: Timestamp?, staleAt: Timestamp?, dismissAt: Timestamp?
    ) {
        self.id = id
        self.state = state
        self.attributesType = attributesType
        self.attributes = attributes
        self.contentState = contentState
        self.alert = alert
        self.timestamp = timestamp
        self.startedAt = startedAt
        self.updatedAt = updatedAt
        self.endedAt = endedAt
        self.staleAt = staleAt
        self.dismissAt = dismissAt
    }

    /// The state at `now`: ended once ended, else stale from its stale date on.
    public static func state(endedAt: Timestamp?, staleAt: Timestamp?, now: Timestamp) -> State {
        if endedAt != nil { return .ended }
        if let staleAt, now >= staleAt { return .stale }
        return .active
    }

    /// This activity with its state computed for `now`.
    public func at(_ now: Timestamp) -> LiveActivity {
        var copy = self
        copy.state = Self.state(endedAt: endedAt, staleAt: staleAt, now: now)
        return copy
    }

    /// `{"id", "state", "attributesType", "attributes", "contentState", "alert"|null, "timestamp",
    /// "startedAt", "updatedAt", "endedAt"|null, "staleAt"|null, "dismissAt"|null}`, times in ISO 8601.
    public var json: JSONValue {
        func time(_ t: Timestamp?) -> JSONValue { t.map { .string($0.iso8601) } ?? .null }
        return .object([
            ("alert", alert?.json ?? .null),
            ("attributes", attributes),
            ("attributesType", .string(attributesType)),
            ("contentState", contentState),
            ("dismissAt", time(dismissAt)),
            ("endedAt", time(endedAt)),
            ("id", .string(id)),
            ("staleAt", time(staleAt)),
            ("startedAt", time(startedAt)),
            ("state", .string(state.rawValue)),
            ("timestamp", .integer(timestamp)),
            ("updatedAt", time(updatedAt)),
        ])
    }
}

/// What a Live Activity message does to the activity it names, as ActivityKit does it; a pure
/// function of the message, the stored activity and the clock, so the store applies it inside
/// one transaction and tests drive it with any clock.
///
/// - A start creates the activity. A start for an activity that exists and has not ended is an
///   update when its timestamp is newer (the same push sent twice), else ignored.
/// - A start for an ended activity starts it afresh when its timestamp is newer: the id is the
///   push-to-start token, and ActivityKit starts a new activity for every start sent to it.
/// - An update or an end needs an existing activity (refused otherwise), and a timestamp newer
///   than the last applied one (ignored otherwise, as Apple ignores older payloads).
/// - After an end, updates and ends are ignored; only removal follows.
/// - An end sets the removal time to its `dismissal-date`, else 4 hours after the end, and never
///   later than 4 hours after the end; a dismissal date not after `now` removes the activity at once.
/// - A message whose `timestamp` is more than 24 hours ahead of the device's clock is refused: nothing
///   would ever be newer, and the activity would be frozen (and its slot taken) for good.
/// - An activity not ended 8 hours after its start is ended by the device, as if an end without a
///   dismissal date had come then (``expire(_:now:)``), and so removed 4 hours later.
public enum LiveActivityRules {
    /// What applying a message did.
    public enum Outcome: Sendable, Equatable {
        case started(LiveActivity)
        case updated(LiveActivity)
        case ended(LiveActivity)
        /// The activity as it ended, removed at once (its dismissal date had passed).
        case removed(LiveActivity)
        /// Nothing changed, and rightly so (an old or repeated message).
        case ignored(String)
        /// Nothing changed: the message cannot apply (no such activity, a different type).
        case refused(String)

        /// The activity after the change; `nil` when nothing changed.
        public var activity: LiveActivity? {
            switch self {
            case let .started(a), let .updated(a), let .ended(a), let .removed(a): a
            case .ignored, .refused: nil
            }
        }

        /// `activity-started`, `-updated`, `-ended` or `-removed`: the event a change logs.
        public var eventKind: AgentEventKind? {
            switch self {
            case .started: .activityStarted
            case .updated: .activityUpdated
            case .ended: .activityEnded
            case .removed: .activityRemoved
            case .ignored, .refused: nil
            }
        }
    }

    /// How long an ended activity without a dismissal date stays listed (Apple: up to 4 hours).
    public static let defaultDismissal: Duration = .seconds(4 * 3_600)
    /// The longest an ended activity stays listed, whatever its `dismissal-date` says (ActivityKit's).
    public static let maximumDismissal: Duration = .seconds(4 * 3_600)
    /// How long an activity may run before the device ends it (ActivityKit: 8 hours).
    public static let maximumActive: Duration = .seconds(8 * 3_600)
    /// How far ahead of the device's clock a message's `timestamp` may be.
    public static let maximumClockLead: Duration = .seconds(24 * 3_600)

    /// The refusal of a message dated too far ahead of the device's clock, or `nil` when its
    /// timestamp is acceptable. Checked before anything else looks at the message.
    public static func clockRefusal(_ message: LiveActivityMessage, now: Timestamp) -> String? {
        guard isTooFarAhead(message.timestamp, now: now) else { return nil }
        return "\(message.event.rawValue) for \(TextEscaping.logLine(message.token)): timestamp \(message.timestamp) "
            + "is more than 24 h ahead of the device clock (\(now.iso8601)); check the sender's clock "
            + "(milliseconds sent as seconds?)"
    }

    /// Whether a `timestamp` (Unix seconds) is more than ``maximumClockLead`` ahead of `now`.
    public static func isTooFarAhead(_ timestamp: Int64, now: Timestamp) -> Bool {
        timestamp > (now + maximumClockLead).milliseconds / 1_000
    }

    /// When `activity` is due for the device's next step without any message: its removal once
    /// ended, else its end ``maximumActive`` after its start.
    public static func deadline(of activity: LiveActivity) -> Timestamp {
        guard let endedAt = activity.endedAt else { return activity.startedAt + maximumActive }
        // Never later than 4 hours after the end, whatever is stored (an older release kept any date).
        return min(activity.dismissAt ?? endedAt + defaultDismissal, endedAt + maximumDismissal)
    }

    /// The device's own end of an activity ``maximumActive`` after its start: ended then (not later,
    /// whenever the daemon gets to it), removed ``defaultDismissal`` after that, at once when that
    /// has passed too. `nil` while the activity may still run, or once it has ended.
    public static func expire(_ activity: LiveActivity, now: Timestamp) -> Outcome? {
        guard activity.endedAt == nil else { return nil }
        let endAt = activity.startedAt + maximumActive
        guard endAt <= now else { return nil }
        var ended = activity
        ended.endedAt = endAt
        ended.state = .ended
        let dismissAt = endAt + defaultDismissal
        ended.dismissAt = dismissAt
        return dismissAt <= now ? .removed(ended) : .ended(ended)
    }

    public static func apply(_ message: LiveActivityMessage, to existing: LiveActivity?, now: Timestamp) -> Outcome {
        let id = TextEscaping.logLine(message.token)
        if let refusal = clockRefusal(message, now: now) { return .refused(refusal) }
        guard let existing else {
            guard message.event == .start else {
                return .refused("no activity \(id): an \(message.event.rawValue) needs a start first")
            }
            return start(message, now: now)
        }
        if let endedAt = existing.endedAt, message.event != .start {
            return .ignored("\(message.event.rawValue) for \(id): the activity ended at \(endedAt.iso8601)")
        }
        guard message.timestamp > existing.timestamp else {
            return .ignored(
                "\(message.event.rawValue) for \(id): timestamp \(message.timestamp) is not newer than the last "
                    + "applied \(existing.timestamp)")
        }
        if existing.endedAt != nil { return start(message, now: now) }
        switch message.event {
        case .start:
            if message.attributesType != existing.attributesType {
                return .refused(
                    "start for \(id): attributes-type \(LiveActivityMessage.quoted(message.attributesType ?? "")) "
                        + "differs from the activity's \(LiveActivityMessage.quoted(existing.attributesType))")
            }
            return .updated(update(existing, with: message, now: now))
        case .update:
            return .updated(update(existing, with: message, now: now))
        case .end:
            var ended = update(existing, with: message, now: now)
            ended.endedAt = now
            ended.state = .ended
            // ActivityKit honours a dismissal date only within 4 hours of the end.
            let latest = now + maximumDismissal
            let asked = message.dismissalDate.map { Timestamp(milliseconds: $0 * 1_000) } ?? now + defaultDismissal
            let dismissAt = min(asked, latest)
            ended.dismissAt = dismissAt
            return dismissAt <= now ? .removed(ended) : .ended(ended)
        }
    }

    private static func start(_ message: LiveActivityMessage, now: Timestamp) -> Outcome {
        let staleAt = message.staleDate.map { Timestamp(milliseconds: $0 * 1_000) }
        return .started(
            LiveActivity(
                id: message.token, state: LiveActivity.state(endedAt: nil, staleAt: staleAt, now: now),
                attributesType: message.attributesType ?? "", attributes: message.attributes ?? .object([]),
                contentState: message.contentState ?? .object([]), alert: message.alert, timestamp: message.timestamp,
                startedAt: now, updatedAt: now, endedAt: nil, staleAt: staleAt, dismissAt: nil))
    }

    /// The content of `message` applied to a running activity. Each message's stale date replaces
    /// the last one (ActivityKit's `ActivityContent` carries its own), and attributes never change.
    private static func update(_ activity: LiveActivity, with message: LiveActivityMessage, now: Timestamp)
        -> LiveActivity
    {
        var next = activity
        if let contentState = message.contentState { next.contentState = contentState }
        next.alert = message.alert
        next.timestamp = message.timestamp
        next.updatedAt = now
        next.staleAt = message.staleDate.map { Timestamp(milliseconds: $0 * 1_000) }
        next.state = LiveActivity.state(endedAt: nil, staleAt: next.staleAt, now: now)
        return next
    }
}
