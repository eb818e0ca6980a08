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
