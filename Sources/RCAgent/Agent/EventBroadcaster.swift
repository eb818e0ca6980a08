import Glibc
import RCCore
import RCService
import RCStore

/// Tells the world what the store logged: every `watch` subscriber gets each event as a line, and
/// the hooks hear of activations, of the stale flag changing and of Live Activities (`activity-*`). Owned by the agent and used only
/// on its executor, so it needs no lock of its own.
final class EventBroadcaster {
    private let store: StateStore
    private let log: Logger
    /// A reload that changes `HooksDirectory` or `HookTimeout` reconfigures it in place.
    var hooks: HookRunner
    /// Event-stream subscribers: socket descriptors that `watch` handed over.
    private var watchers: Set<Int32> = []
    /// The id of the last event told. Ids have no gaps (AUTOINCREMENT, and a rolled-back insert
    /// takes its id back), so a gap before the store's next own event is another process's write:
    /// `rcagent mark-stale` setting the flag beside a daemon that did not answer in time.
    private var lastId: Int64 = 0

    init(store: StateStore, hooks: HookRunner, log: Logger) {
        self.store = store
        self.hooks = hooks
        self.log = log
        // What start-up wrote (defaults, a recovery) happened before anyone could watch.
        _ = store.takeCommittedEvents()
        lastId = (try? store.lastEventId()) ?? 0
    }

    /// Adds a `watch` subscriber. Its acknowledgement goes out here, before any event can overtake
    /// it, and without blocking, like the events: a client that filled its socket with unread
    /// answers (278 pipelined pings, then `watch`) held the agent, and with it every request, fetch
    /// and watchdog ping, for the connection's whole send timeout.
    func subscribe(_ fd: Int32) -> Bool {
        guard Self.sendWithoutBlocking(fd, Array((WatchAck().json.compactText + "\n").utf8)) else { return false }
        watchers.insert(fd)
        return true
    }

    func unsubscribe(_ fd: Int32) {
        watchers.remove(fd)
    }

    /// Ends every subscription (the daemon is stopping): each client sees its stream end.
    func closeAll() {
        for fd in watchers { shutdown(fd, Int32(SHUT_RDWR)) }
        watchers = []
    }

    /// Sends the events the agent's writes logged since the last call (the store hands them over;
    /// the log is read only when the ids show another process wrote in between) to every subscriber; the stale flag changing runs the hooks. A
    /// subscriber that does not keep up is dropped (its socket shut down), never allowed to stall
    /// the agent.
    func publish() {
        var events = store.takeCommittedEvents()
        guard let newest = events.last else { return }
        if newest.id - lastId > Int64(events.count) {
            // Another process wrote in between (before or among these): the log has it all, in
            // order. Read only then, and at most 1,000 rows; the store's own events follow them.
            let logged = (try? store.events(after: lastId, limit: Int(min(newest.id - lastId, 1_000)))) ?? []
            let through = logged.last?.id ?? lastId
            events = logged.filter { $0.id <= newest.id } + events.filter { $0.id > through }
        }
        lastId = max(lastId, events.last?.id ?? lastId)
        for event in events {
            // Activations and rollbacks reach the hooks through ``activated(_:)`` and
            // ``rolledBack(_:)``, with their values.
            guard let kind = event.known, kind.reachesHooks, kind != .activated, kind != .rolledBack else { continue }
            hooks.enqueue(
                kind.isActivity
                    ? HookEvent(activity: kind, detail: event.detail)
                    // A deferred activation names the version that waits.
                    : HookEvent(kind: kind, templateVersion: event.detail["templateVersion"]?.stringValue))
        }
        guard !watchers.isEmpty else { return }
        var text = ""
        for event in events { text += Self.watchLine(event).compactText + "\n" }
        let bytes = Array(text.utf8)
        for fd in watchers where !Self.sendWithoutBlocking(fd, bytes) {
            log.warning("Dropping a watch client that does not keep up")
            watchers.remove(fd)
            shutdown(fd, Int32(SHUT_RDWR))
        }
    }

    static func watchLine(_ event: StoredEvent) -> JSONValue {
        WatchEvent(kind: event.kind, at: event.at.iso8601, fields: event.detail.objectMembers ?? []).json
    }

    // MARK: - Hooks

    /// Whether the next activation should carry its values: only when there are hooks to tell.
    var wantsValues: Bool { !hooks.hooks.isEmpty }

    /// Runs the hooks for an activation that changed something, with each key's old and new value
    /// as the activation computed them.
    func activated(_ activation: Activation) {
        enqueueHooks(.activated, activation)
    }

    /// Runs the hooks for a rollback (`RCAGENT_EVENT=rolled-back`) with the keys that changed back.
    func rolledBack(_ activation: Activation) {
        enqueueHooks(.rolledBack, activation)
    }

    private func enqueueHooks(_ kind: AgentEventKind, _ activation: Activation) {
        guard let changes = activation.changes, !changes.isEmpty else { return }
        var event = HookEvent(kind: kind, templateVersion: activation.templateVersion)
        for change in changes {
            event.changes[ByteKey(change.key)] = HookEvent.Change(
                old: change.old, new: change.new, source: change.source)
        }
        hooks.enqueue(event)
    }

    private static func sendWithoutBlocking(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) } == bytes.count
    }
}
