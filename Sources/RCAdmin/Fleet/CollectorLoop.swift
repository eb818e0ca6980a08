import Dispatch
import RCCore
import RCMQTT
import Synchronization

/// The network side of a ``ReportCollector``: a thread of its own runs libmosquitto's loop (so the
/// keepalive goes on however long the reports take to read) and queues what the client reports;
/// the collector's thread takes the queue and parses. What is queued and not yet handled is
/// bounded in bytes (``maximumBacklog``): past it the thread waits for the collector to catch up
/// before it reads more. A failed loop pauses the thread until ``resume()`` (after a reconnect)
/// or ``stop()``.
final class CollectorLoop: Sendable {
    /// One thing from the network thread: a client event, or why the loop failed.
    enum Item: Sendable {
        case event(MQTTClient.Event)
        case failed(MQTTError)
    }

    /// 64 MiB of reports waiting to be read: 4,096 at the largest size, far more at a usual one.
    static let maximumBacklog = 64 << 20

    private let client: MQTTClient
    private struct State {
        var items: [Item] = []
        var backlog = 0
        var paused = false
        var stopped = false
        var running = false
    }
    private let state = Mutex(State())
    /// Signalled when items arrive (the collector waits on it).
    private let arrived = DispatchSemaphore(value: 0)
    /// Signalled when the backlog shrinks, the loop resumes or stops (the thread waits on it).
    private let changed = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    /// `client` must be threaded (``MQTTClient/Options/threaded``): the collector subscribes and
    /// publishes from its own thread while this one runs the loop.
    init(client: MQTTClient) {
        self.client = client
        client.onEvent { [weak self] event in self?.append(.event(event)) }
    }

    private func append(_ item: Item) {
        state.withLock { state in
            if case let .event(.message(_, payload)) = item { state.backlog += payload.count }
            state.items.append(item)
        }
        arrived.signal()
    }

    /// Starts the thread (once the client is connecting); `false` when no thread could be made.
    func start() -> Bool {
        state.withLock { $0.running = true }
        let started = DetachedThread.start { [self] in
            run()
            finished.signal()
        }
        if !started { state.withLock { $0.running = false } }
        return started
    }

    private func run() {
        while true {
            let (stopped, wait) = state.withLock { ($0.stopped, $0.paused || $0.backlog > Self.maximumBacklog) }
            if stopped { return }
            if wait {
                _ = changed.wait(timeout: .now() + .milliseconds(200))
                continue
            }
            do { try client.loop(timeout: .milliseconds(100)) } catch {
                state.withLock { $0.paused = true }
                append(.failed(error))
                changed.signal()  // for a ``stop()`` waiting for the loop to end
            }
        }
    }

    /// Waits at most `timeout` for something to arrive, then takes all that came. Call
    /// ``consumed(_:)`` with each message's size once it is read.
    func take(waiting timeout: Duration) -> [Item] {
        if state.withLock({ $0.items.isEmpty }) {
            _ = arrived.wait(timeout: .now() + .milliseconds(Int(timeout.milliseconds)))
        }
        return state.withLock { state in
            defer { state.items.removeAll(keepingCapacity: true) }
            return state.items
        }
    }

    func consumed(_ size: Int) {
        state.withLock { $0.backlog = max(0, $0.backlog - size) }
        changed.signal()
    }

    /// After a reconnect: the loop runs again.
    func resume() {
        state.withLock { $0.paused = false }
        changed.signal()
    }

    /// Ends the thread and waits (3 s at most) for it to let go of the client. After a
    /// ``MQTTClient/disconnect()`` the loop is given a second to write the DISCONNECT first.
    func stop() {
        for _ in 0..<10 where state.withLock({ $0.running && !$0.paused }) {
            _ = changed.wait(timeout: .now() + .milliseconds(100))
        }
        let running = state.withLock { state in
            state.stopped = true
            return state.running
        }
        changed.signal()
        if running { _ = finished.wait(timeout: .now() + .seconds(3)) }
    }
}
