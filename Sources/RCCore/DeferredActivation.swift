/// A fetched snapshot whose activation waits (safe activation): outside every `Window=`, or while an
/// `rcagent hold` runs. The daemon keeps it in the state database beside the pending snapshot, so
/// `status` (the `activation.deferred` member), the device report and a restarted daemon see it.
public struct DeferredActivation: Sendable, Equatable {
    /// What holds the activation back.
    public enum Reason: String, Sendable, Equatable {
        case window, hold
    }

    public var templateVersion: String
    /// When the activation was first held back (a newer fetch meanwhile keeps it).
    public var since: Timestamp
    /// When it is due: a window opens, or a hold reaches `HoldLimit=`; `nil` when not known (a hold
    /// ends when its command does).
    public var until: Timestamp?
    public var why: Reason

    public init(templateVersion: String, since: Timestamp, until: Timestamp?, why: Reason) {
        self.templateVersion = templateVersion
        self.since = since
        self.until = until
        self.why = why
    }

    /// `{"templateVersion", "since", "until", "why"}` as `status --json` shows it.
    public var json: JSONValue {
        .object([
            ("templateVersion", .string(templateVersion)), ("since", .string(since.iso8601)),
            ("until", until.map { .string($0.iso8601) } ?? .null), ("why", .string(why.rawValue)),
        ])
    }

    /// Reads ``json`` back; `nil` for anything else (a record written by another version).
    public init?(json: JSONValue) {
        guard let version = json["templateVersion"]?.stringValue, let sinceText = json["since"]?.stringValue,
            let since = Timestamp(iso8601: sinceText), let why = json["why"]?.stringValue.flatMap(Reason.init)
        else { return nil }
        var until: Timestamp?
        if let text = json["until"]?.stringValue {
            guard let time = Timestamp(iso8601: text) else { return nil }
            until = time
        }
        self.init(templateVersion: version, since: since, until: until, why: why)
    }

    /// `template 8 waits until 2026-12-02T02:00:00Z (outside every maintenance window)`.
    public var text: String {
        let when = until.map { "until \($0.iso8601)" } ?? "until the last hold is released"
        let reason = why == .window ? "outside every maintenance window" : "held by rcagent hold"
        return "template \(templateVersion) waits \(when) (\(reason)), since \(since.iso8601)"
    }
}

/// The `activation` member of `status --json`: a deferred activation, a trial under way, the last
/// rollback and the rejected versions.
public struct ActivationStatus: Sendable, Equatable {
    public var deferred: DeferredActivation?
    /// The version on trial and since when.
    public var trial: (templateVersion: String, since: Timestamp)?
    /// The last rollback: the version rolled back, when, and why.
    public var lastRollback: (templateVersion: String, at: Timestamp, reason: String)?
    public var rejected: [String] = []

    public init(deferred: DeferredActivation? = nil) { self.deferred = deferred }

    public static func == (a: ActivationStatus, b: ActivationStatus) -> Bool {
        a.deferred == b.deferred && a.trial?.templateVersion == b.trial?.templateVersion
            && a.trial?.since == b.trial?.since && a.lastRollback?.templateVersion == b.lastRollback?.templateVersion
            && a.lastRollback?.at == b.lastRollback?.at && a.lastRollback?.reason == b.lastRollback?.reason
            && a.rejected == b.rejected
    }

    public var json: JSONValue {
        .object([
            ("deferred", deferred?.json ?? .null),
            (
                "trial",
                trial.map {
                    .object([("templateVersion", .string($0.templateVersion)), ("since", .string($0.since.iso8601))])
                }
                    ?? .null
            ),
            (
                "lastRollback",
                lastRollback.map {
                    .object([
                        ("templateVersion", .string($0.templateVersion)), ("at", .string($0.at.iso8601)),
                        ("reason", .string($0.reason)),
                    ])
                } ?? .null
            ),
            ("rejected", .array(rejected.map(JSONValue.string))),
        ])
    }
}
