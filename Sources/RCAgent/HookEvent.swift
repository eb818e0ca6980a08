import RCCore

/// One event the hooks hear about: an activation (with its changed keys), the stale flag
/// changing, or a Live Activity starting, changing, ending or going away (with the activity).
struct HookEvent: Sendable {
    /// One of the kinds that ``AgentEventKind/reachesHooks``.
    typealias Kind = AgentEventKind

    struct Change: Sendable {
        var old: String?
        var new: String?
        var source: ValueSource?
    }

    var kind: Kind
    var templateVersion: String?
    /// By the keys' bytes, as the store keeps them: two keys that only look alike are two changes.
    var changes: [ByteKey: Change] = [:]
    /// The Live Activity's id (activity events only).
    var activityId: String?
    /// The activity as the event logged it: `LiveActivity.json`, or for a removal
    /// `{"activity", "id", "reason"}` (activity events only).
    var activityDetail: JSONValue?

    init(kind: Kind, templateVersion: String? = nil) {
        self.kind = kind
        self.templateVersion = templateVersion
    }

    /// An `activity-*` event from the detail the store logged with it.
    init(activity kind: Kind, detail: JSONValue) {
        self.kind = kind
        activityId = detail["id"]?.stringValue
        activityDetail = detail
    }

    /// Adds `event` to the events waiting for the hooks. Config events fold into the waiting one of
    /// their kind; an activation or a rollback only into the last waiting one of the two, when it is
    /// of its kind (the hooks end on the values that are active). An activity event folds only into the last waiting event of the same activity,
    /// and only when it is of its kind: an update never jumps ahead of that activity's end or a
    /// new start, and the hooks see each activity's steps in order.
    ///
    /// At most ``maximumPending`` events wait: past that (hooks slower than a flood of activity
    /// messages, each start, end and removal of a new id an event of its own), the oldest waiting
    /// activity event is dropped, and this returns `true` so the caller can say so. Config events
    /// are never dropped (one per kind, except activations and rollbacks that alternate: one per trial).
    @discardableResult
    static func queue(_ event: HookEvent, into pending: inout [HookEvent]) -> Bool {
        let index =
            if event.kind.isActivity {
                pending.lastIndex(where: { $0.kind.isActivity && $0.activityId == event.activityId })
                    .flatMap { pending[$0].kind == event.kind ? $0 : nil }
            } else if event.kind.changesValues {
                // An activation never folds into one waiting before a rollback (or the other way):
                // the hooks would end on the values of the event that ran last, not the ones active.
                pending.lastIndex(where: { $0.kind.changesValues }).flatMap {
                    pending[$0].kind == event.kind ? $0 : nil
                }
            } else {
                pending.firstIndex(where: { $0.kind == event.kind })
            }
        if let index {
            pending[index].absorb(event)
            return false
        }
        pending.append(event)
        guard pending.count > maximumPending, let oldest = pending.firstIndex(where: { $0.kind.isActivity }) else {
            return false
        }
        pending.remove(at: oldest)
        return true
    }

    /// The most events waiting for the hooks (each up to about 10 KiB with its activity).
    static let maximumPending = 256

    /// Folds a later event of the same kind into this one (a burst runs the hooks once). An
    /// activity event takes the later content whole: the latest is what a renderer wants.
    mutating func absorb(_ later: HookEvent) {
        if kind.isActivity {
            activityDetail = later.activityDetail
            return
        }
        templateVersion = later.templateVersion ?? templateVersion
        for (key, change) in later.changes {
            changes[key] = Change(old: changes[key]?.old ?? change.old, new: change.new, source: change.source)
        }
    }

    var stdin: String {
        if kind.isActivity {
            // `{"event", "id", "activity"[, "reason"]}`: the activity with its alert, whatever the kind.
            let detail = activityDetail ?? .object([])
            var members: [(key: String, value: JSONValue)] = [
                ("event", .string(kind.rawValue)), ("id", activityId.map(JSONValue.string) ?? .null),
                ("activity", detail["activity"] ?? detail),
            ]
            if let reason = detail["reason"] { members.append(("reason", reason)) }
            return JSONValue.object(members).compactText + "\n"
        }
        let members = changes.sorted { $0.key < $1.key }.map { key, change in
            (
                key: key.text,
                value: JSONValue.object([
                    ("old", change.old.map(JSONValue.string) ?? .null),
                    ("new", change.new.map(JSONValue.string) ?? .null),
                    ("source", change.source.map { .string($0.rawValue) } ?? .null),
                ])
            )
        }
        return JSONValue.object([
            ("event", .string(kind.rawValue)), ("templateVersion", templateVersion.map(JSONValue.string) ?? .null),
            ("changes", .object(members)),
        ]).compactText + "\n"
    }

    /// The `RCAGENT_*` variables a hook gets for this event. Remote text (keys, the template version)
    /// is percent-encoded (``TextEscaping/percentEncoded(_:)``): no NUL, newline or space inside, so
    /// the space-separated key list is unambiguous. Each variable stays far below the kernel's
    /// 128 KiB limit on one environment string (MAX_ARG_STRLEN; past it execve fails with E2BIG):
    /// a key list longer than `maxKeysBytes` is cut after the last whole key that fits and
    /// `RCAGENT_CHANGED_KEYS_COMPLETE=no` tells the hook to read the full list from stdin.
    ///
    /// Activity events add `RCAGENT_ACTIVITY_ID`, as it is: the message parser accepts only
    /// printable ASCII without spaces, bounded, for it. Their key list is empty, so a hook written
    /// for config events (with `set -u`, say) still finds every variable it reads.
    func environment(maxKeysBytes: Int = HookEvent.maxKeysBytes) -> [String: String] {
        var keys = ""
        var complete = true
        for key in changes.keys.sorted() {
            let encoded = TextEscaping.percentEncoded(key.text)
            if keys.utf8.count + (keys.isEmpty ? 0 : 1) + encoded.utf8.count > maxKeysBytes {
                complete = false
                break
            }
            keys += (keys.isEmpty ? "" : " ") + encoded
        }
        var environment = [
            "RCAGENT_EVENT": kind.rawValue, "RCAGENT_CHANGED_KEYS": keys,
            "RCAGENT_CHANGED_KEYS_COMPLETE": complete ? "yes" : "no",
            "RCAGENT_CHANGED_KEYS_COUNT": String(changes.count),
            "RCAGENT_TEMPLATE_VERSION": TextEscaping.truncated(
                TextEscaping.percentEncoded(templateVersion ?? ""), maxBytes: HookEvent.maxVersionBytes),
        ]
        if kind.isActivity {
            environment["RCAGENT_ACTIVITY_ID"] = TextEscaping.truncated(
                activityId ?? "", maxBytes: LiveActivityMessage.maximumTokenBytes)
        }
        return environment
    }

    /// 64 KiB: half of MAX_ARG_STRLEN, leaving room for the rest of the environment too.
    static let maxKeysBytes = 64 * 1024
    static let maxVersionBytes = 1024
}

extension AgentEventKind {
    /// An activation or a rollback: an event that carries the changed keys and their values.
    var changesValues: Bool { self == .activated || self == .rolledBack }
}
