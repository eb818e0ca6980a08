import CLinux
import Glibc
import RCCore
import RCService
import Synchronization

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
    /// their kind. An activity event folds only into the last waiting event of the same activity,
    /// and only when it is of its kind: an update never jumps ahead of that activity's end or a
    /// new start, and the hooks see each activity's steps in order.
    ///
    /// At most ``maximumPending`` events wait: past that (hooks slower than a flood of activity
    /// messages, each start, end and removal of a new id an event of its own), the oldest waiting
    /// activity event is dropped, and this returns `true` so the caller can say so. Config events,
    /// one per kind at most, are never dropped.
    @discardableResult
    static func queue(_ event: HookEvent, into pending: inout [HookEvent]) -> Bool {
        let index =
            event.kind.isActivity
            ? pending.lastIndex(where: { $0.kind.isActivity && $0.activityId == event.activityId })
                .flatMap { pending[$0].kind == event.kind ? $0 : nil }
            : pending.firstIndex(where: { $0.kind == event.kind })
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

/// Runs the executables in `HooksDirectory` after activations that changed something, on
/// stale-set/stale-cleared and on `activity-*` events (local integration). Hooks run in run-parts
/// order, one at a time, on a thread of their own — never in the daemon's critical path. Each gets
/// `RCAGENT_EVENT`, `RCAGENT_CHANGED_KEYS` (percent-encoded, bounded; see ``HookEvent/environment(maxKeysBytes:)``),
/// `RCAGENT_TEMPLATE_VERSION` and the event as JSON on stdin; its output is logged with its name;
/// it is killed after `HookTimeout`. Events that arrive
/// while hooks run are merged per kind, so a burst runs them once more, not once per event.
final class HookRunner: Sendable {
    /// Where the hooks are and how long each may run: a reload changes them in place, so the one
    /// hook thread stays the only one (a replaced runner let its hook overlap the new runner's).
    /// Read once per event: the directory is listed again for each, and one event's hooks all come
    /// from one directory, with one timeout, even when a reload lands while they run.
    private let settings: Mutex<(directory: String, timeout: Duration)>
    private let log: Logger
    /// The events waiting for the hook thread, and whether that thread runs.
    private struct Queue {
        var pending: [HookEvent] = []
        var running = false
        /// The overflow warning went out for the current backlog (cleared when the queue empties).
        var overflowReported = false
    }
    private let queue = Mutex(Queue())

    init(directory: String, timeout: Duration, log: Logger) {
        settings = Mutex((directory, timeout))
        self.log = log
    }

    /// Applies a reloaded `HooksDirectory=` and `HookTimeout=` from the next hook run on.
    func configure(directory: String, timeout: Duration) {
        settings.withLock { $0 = (directory, timeout) }
    }

    /// The hooks that would run now, in order: executable regular files, no hidden files, editor
    /// backups or package-manager leftovers.
    var hooks: [String] { Self.hooks(in: settings.withLock { $0.directory }) }

    /// The hooks in `directory` that would run now (see ``hooks``).
    static func hooks(in directory: String) -> [String] {
        FileBytes.directoryEntries(directory)
            .filter { name in
                !name.hasPrefix(".") && !name.hasSuffix("~") && !(name.hasPrefix("#") && name.hasSuffix("#"))
                    && ![".dpkg-old", ".dpkg-new", ".dpkg-dist", ".dpkg-tmp", ".swp", ".bak", ".orig", ".rej"]
                        .contains(where: name.hasSuffix)
            }
            .sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
            .filter { name in
                var info = stat()
                let path = directory + "/" + name
                return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG && access(path, X_OK) == 0
            }
    }

    /// Queues `event` for the hooks, merged into a waiting event of its kind, and starts the hook thread
    /// unless it runs already.
    func enqueue(_ event: HookEvent) {
        let (start, dropped) = queue.withLock { queue -> (Bool, Bool) in
            let dropped = HookEvent.queue(event, into: &queue.pending)
            // Said once per backlog, not once per dropped event: a flood must not flood the journal.
            let report = dropped && !queue.overflowReported
            if dropped { queue.overflowReported = true }
            defer { queue.running = true }
            return (!queue.running, report)
        }
        if dropped {
            log.warning(
                "Hooks fall behind: \(HookEvent.maximumPending) events wait; dropping the oldest activity events "
                    + "until they catch up")
        }
        guard start else { return }
        if !DetachedThread.start({ [self] in drain() }) {
            // No thread now: leave the events queued and let the next event try again, rather than
            // stay "running" with nothing running, which would stop hooks for good.
            queue.withLock { $0.running = false }
            log.error("Failed to start the hook thread; the hooks run with the next event")
        }
    }

    /// The hook thread's loop: runs every hook for each queued event, oldest first, until the queue is
    /// empty (then the next event starts a thread again).
    private func drain() {
        while let event = queue.withLock({ queue -> HookEvent? in
            if queue.pending.isEmpty {
                queue.running = false
                queue.overflowReported = false
                return nil
            }
            return queue.pending.removeFirst()
        }) {
            let (directory, timeout) = settings.withLock { $0 }
            for name in Self.hooks(in: directory) { run(name, event, directory: directory, timeout: timeout) }
        }
    }

    /// Runs one hook for one event (see ``SupervisedProcess``): the event as JSON on stdin, its output
    /// logged line by line under its name, killed at ``HookTimeout``.
    private func run(_ name: String, _ event: HookEvent, directory: String, timeout: Duration) {
        let environment = Environment.current().merging(event.environment()) { $1 }
        let (outcome, _) = SupervisedProcess.run(
            directory + "/" + name, label: "hook \(name)", environment: environment, stdin: Array(event.stdin.utf8),
            timeout: timeout, log: log)
        switch outcome {
        case let .notStarted(reason):
            // Loud: the hook did not see this event at all.
            log.error(
                "Failed to run hook \(name) for \(event.kind.rawValue) (\(event.changes.count) changed keys): "
                    + reason + "; the hook missed this event")
        case .timedOut:
            log.warning("Hook \(name) timed out after \(DurationText.format(timeout)); killed")
        case let .signaled(signal):
            log.warning("Hook \(name) was killed by signal \(signal)")
        case let .exited(code) where code != 0:
            log.warning("Hook \(name) exited with status \(code)")
        case .exited:
            break
        }
    }
}
