import Dispatch
import RCCore
import RCMQTT
import RCSystem
import Synchronization

/// The network side of a ``ReportCollector``: an ``MQTTSession`` (a thread of its own runs the
/// client's loop, so the keepalive goes on however long the reports take to read; it reconnects,
/// with the MQTT 5 → 3.1.1 fallback) whose events are queued here for the collector's thread,
/// which takes the queue and parses. What is handed on and not yet ``consumed(topic:payload:)`` is bounded in
/// bytes (``maximumBacklog``, the session's): past it the session waits for the collector to
/// catch up before it reads more.
final class CollectorLoop: Sendable {
    /// One thing from the network thread.
    typealias Item = MQTTSession.Event

    /// 64 MiB of reports waiting to be read: 4,096 at the largest size, far more at a usual one.
    static let maximumBacklog = 64 << 20

    let session: MQTTSession
    private let items = Mutex<[Item]>([])
    /// Signalled when items arrive (the collector waits on it).
    private let arrived = DispatchSemaphore(value: 0)

    /// `session` must be configured with ``maximumBacklog``; its events come here from now on.
    init(session: MQTTSession) {
        self.session = session
        session.onEvent { [weak self] event in self?.append(event) }
    }

    private func append(_ item: Item) {
        items.withLock { $0.append(item) }
        arrived.signal()
    }

    /// Starts the session's thread; `false` when no thread could be made.
    func start() -> Bool { session.start() }

    /// Waits at most `timeout` for something to arrive, then takes all that came. Call
    /// ``consumed(topic:payload:)`` with each message once it is read.
    func take(waiting timeout: Duration) -> [Item] {
        if items.withLock({ $0.isEmpty }) {
            _ = arrived.wait(timeout: .now() + .milliseconds(Int(timeout.milliseconds)))
        }
        return items.withLock { items in
            defer { items.removeAll(keepingCapacity: true) }
            return items
        }
    }

    func consumed(topic: String, payload: [UInt8]) { session.consumed(topic: topic, payload: payload) }

    /// Disconnects and waits (3 s at most) for the session's thread. Blocks: the collector's
    /// thread is its own, never the cooperative pool.
    func stop() { session.stop() }
}
