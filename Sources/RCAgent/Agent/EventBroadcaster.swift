import Glibc
import RCCore
import RCStore

/// Tells the world what the store logged: every `watch` subscriber gets each event as a line, and
/// the hooks hear of activations and of the stale flag changing. Owned by the agent and used only
/// on its executor, so it needs no lock of its own.
final class EventBroadcaster {
    private let store: StateStore
    private let log: Logger
    /// Replaced by a reload that changes `HooksDirectory` or `HookTimeout`.
    var hooks: HookRunner
    /// Event-stream subscribers: socket descriptors that `watch` handed over.
    private var watchers: Set<Int32> = []
    /// The last event sent; the next ``publish()`` starts after it.
    private var lastEventId: Int64

    init(store: StateStore, hooks: HookRunner, log: Logger) throws {
        self.store = store
        self.hooks = hooks
        self.log = log
        lastEventId = try store.lastEventId()
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

    /// Sends the events the store logged since the last call to every subscriber; the stale flag
    /// changing runs the hooks. A subscriber that does not keep up is dropped (its socket shut
    /// down), never allowed to stall the agent.
    func publish() {
        guard let events = try? store.events(after: lastEventId), let last = events.last else { return }
        lastEventId = last.id
        for event in events {
            switch event.kind {
            case "stale-set": hooks.enqueue(HookEvent(kind: .staleSet))
            case "stale-cleared": hooks.enqueue(HookEvent(kind: .staleCleared))
            default: break
            }
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

    /// Every value as `get` sees it, when there are hooks to tell about changes (else `nil`): the
    /// "old" side of the next activation's hook event.
    func valuesBeforeActivation() -> [String: String]? {
        guard !hooks.hooks.isEmpty, let values = try? store.allValues() else { return nil }
        return Dictionary(values.map { ($0.key, $0.text) }) { $1 }
    }

    /// Runs the hooks for an activation that changed something, with each key's old and new value.
    func activated(_ activation: Activation, before: [String: String]?) {
        guard let before, !activation.changedKeys.isEmpty else { return }
        var event = HookEvent(kind: .activated, templateVersion: activation.templateVersion)
        for key in activation.changedKeys {
            let now = try? store.value(forKey: key)
            event.changes[key] = HookEvent.Change(old: before[key], new: now?.text, source: now?.source)
        }
        hooks.enqueue(event)
    }

    private static func sendWithoutBlocking(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) } == bytes.count
    }
}
