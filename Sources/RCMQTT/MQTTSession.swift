@preconcurrency import Dispatch
import RCCore
import RCSystem
import Synchronization

/// One MQTT session to one broker of a failover list at a time, kept up by a thread of its own: the
/// one way the daemon's push channel and report reach their brokers. The thread connects and runs
/// the client's loop (keepalive pings and their timeouts are the loop's); the policy is in plain
/// values it consults: a failed connect or a lost connection moves to the next broker
/// (``BrokerRotation``), waiting only after a full round, jittered (``MQTTBackoff``); each connect
/// speaks MQTT 5 unless the broker refused that version before (``ProtocolFallback``: then 3.1.1
/// at once, for good with that broker); the topics of ``setSubscriptions(_:qos:)`` are asked for on
/// every connect, and one the broker refuses is asked for again on the same connection
/// (``SubscriptionRetry``). What is worth a log line comes as an ``Event`` too: the session has no
/// logger, its owner says things its own way.
///
/// Messages are handed on unparsed (the thread must keep the keepalive going whatever a payload
/// costs); what is handed on and not yet ``consumed(topic:payload:)`` is bounded (`maximumBacklog`): past it
/// the thread stops reading until the owner catches up.
public final class MQTTSession: Sendable {
    public let brokers: [MQTTBroker]
    private let client: any MQTTSessionClient
    private let configuration: Configuration
    private struct State {
        var rotation: BrokerRotation
        var fallback = ProtocolFallback()
        var retry: SubscriptionRetry
        var connected: MQTTBroker?
        var stopped = false
        var started = false
        /// The will the next connect hands the broker.
        var will: MQTTClient.Will?
        var handler: (@Sendable (Event) -> Void)?
        /// Set by the CONNACK of the current attempt: refused for its protocol version.
        var protocolRefused = false
        /// What the messages handed on and not yet consumed cost (``cost(topic:payload:)``).
        var backlog = 0
        var topics: [String] = []
        var qos: Int32 = 1
        /// The session's own subscriptions in flight (message id → topic) and those to ask again.
        var inFlight: [Int32: String] = [:]
        var retries: [(topic: String, due: ContinuousClock.Instant)] = []
    }
    private let state: Mutex<State>
    private let wake = DispatchSemaphore(value: 0)
    /// Signalled when the backlog shrinks (or on stop), for a thread waiting for room.
    private let room = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    public init(client: any MQTTSessionClient, _ configuration: Configuration) {
        self.client = client
        self.configuration = configuration
        brokers = configuration.brokers
        state = Mutex(
            State(
                rotation: BrokerRotation(
                    count: configuration.brokers.count, base: configuration.reconnectBase,
                    cap: configuration.reconnectCap),
                retry: SubscriptionRetry(base: configuration.subscriptionBase, cap: configuration.subscriptionCap)))
        client.onEvent { [weak self] event in self?.handle(event) }
    }

    /// The broker it is connected to, else the one it tries next.
    public var currentBroker: MQTTBroker { state.withLock { $0.connected ?? brokers[$0.rotation.index] } }

    /// Where events go; set it before ``start()``.
    public func onEvent(_ handler: @escaping @Sendable (Event) -> Void) { state.withLock { $0.handler = handler } }

    /// The last will of the next connect (a connection already open keeps the one it was made with).
    public func setWill(_ will: MQTTClient.Will?) { state.withLock { $0.will = will } }

    /// The topics asked for on every connect, at `qos`; set before ``start()``.
    public func setSubscriptions(_ topics: [String], qos: Int32 = 1) {
        state.withLock {
            $0.topics = topics
            $0.qos = qos
        }
    }

    /// Starts the thread; `false` when no thread could be made (the session is dead then).
    public func start() -> Bool {
        state.withLock { $0.started = true }
        let started = DetachedThread.start { [self] in
            run()
            finished.signal()
        }
        if !started { finished.signal() }  // ``stop()`` has no thread to wait for
        return started
    }

    /// Disconnects (a clean DISCONNECT: the broker does not publish the will), wakes a wait between
    /// rounds, and waits (3 s at most) for the thread to let go of the client; whether it did.
    /// Blocks: from a thread of the caller's own; from a task, ``shutDown()``.
    @discardableResult
    public func stop() -> Bool {
        let started = state.withLock { state in
            state.stopped = true
            return state.started
        }
        client.disconnect()
        wake.signal()
        room.signal()
        let ended = !started || finished.wait(timeout: .now() + .seconds(3)) == .success
        // The handler holds the owners, which hold this session: let go, so the client (its socket
        // and libmosquitto's wake-up pair) is freed with them.
        state.withLock { $0.handler = nil }
        return ended
    }

    /// ``stop()`` on a thread of its own, awaited: never blocks the cooperative pool.
    @discardableResult
    public func shutDown() async -> Bool {
        await withCheckedContinuation { (done: CheckedContinuation<Bool, Never>) in
            if !DetachedThread.start({ [self] in done.resume(returning: stop()) }) {
                // No thread to be had: stop without waiting for the loop (it ends by itself).
                state.withLock { $0.stopped = true }
                client.disconnect()
                wake.signal()
                room.signal()
                done.resume(returning: false)
            }
        }
    }

    /// The owner is done with a ``Event/message(topic:payload:)``.
    public func consumed(topic: String, payload: [UInt8]) {
        let cost = Self.cost(topic: topic, payload: payload)
        state.withLock { $0.backlog = max(0, $0.backlog - cost) }
        room.signal()
    }

    /// What a message waiting for its owner holds, counted against `maximumBacklog`: its payload,
    /// its topic (up to 64 KiB) and a fixed share for the event and its queue slot. Counting only
    /// the payload let a flood of empty messages queue without bound, none of them counting.
    static func cost(topic: String, payload: [UInt8]) -> Int {
        payload.count + topic.utf8.count + messageOverhead
    }

    /// The bytes a queued message holds besides its payload and topic (the event, an array and a
    /// string header, the queue's slot), rounded up.
    static let messageOverhead = 128

    // MARK: - Calls from any thread (the client locks its own state)

    /// Asks for `topic` and returns the request's message id (``Event/subscribed(messageId:refused:)`` follows).
    public func subscribe(_ topic: String, qos: Int32 = 1) throws(MQTTError) -> Int32 {
        try client.subscribe(topic, qos: qos)
    }

    public func unsubscribe(_ topic: String) throws(MQTTError) { try client.unsubscribe(topic) }

    /// Queues `payload` and returns its message id (``Event/published(messageId:)`` follows at QoS 1).
    public func publish(_ payload: [UInt8], topic: String, qos: Int32 = 1, retain: Bool) throws(MQTTError) -> Int32 {
        try client.publish(payload, topic: topic, qos: qos, retain: retain)
    }

    // MARK: - The session's thread

    private var isStopped: Bool { state.withLock { $0.stopped } }

    private func run() {
        var failures = 0
        while !isStopped {
            let (index, will, version) = state.withLock { state in
                state.protocolRefused = false
                return (state.rotation.index, state.will, state.fallback.version(for: state.rotation.index))
            }
            let broker = brokers[index]
            var failure = "?"
            do {
                try client.setWill(will)
                try client.connect(
                    host: broker.host, port: broker.port, keepAlive: configuration.keepAlive,
                    protocolVersion: version)
                // Until the connection is lost, refused (the CONNACK ends the loop with an error) or
                // ended by ``stop()``.
                while !isStopped {
                    waitForRoom()
                    try client.loop(timeout: passTimeout())
                    retryDueSubscriptions()
                }
                // Stopping: the DISCONNECT that ``stop()`` queued is written by this loop; returning
                // before it is would close the socket without it, and the broker would publish the
                // will of a client that stopped cleanly. The loop ends once the socket is closed.
                for _ in 0..<30 { try client.loop(timeout: .milliseconds(100)) }
                return
            } catch {
                failure = error.reason
            }
            if isStopped { return }
            if state.withLock({ $0.protocolRefused && $0.fallback.refusedVersion(of: index) }) {
                deliver(.fellBack(broker))
                continue
            }
            let wasConnected = state.withLock { state in
                defer {
                    state.connected = nil
                    state.inFlight = [:]
                    state.retries = []
                    state.retry.reset()
                }
                return state.connected != nil
            }
            if wasConnected {
                failures = 0
                deliver(.disconnected(broker))
            }
            let (step, next) = state.withLock { state in
                let step = state.rotation.failed()
                return (step, brokers[state.rotation.index])
            }
            failures += 1
            let wait = step == .zero ? .zero : configuration.jitter(step)
            deliver(
                .failed(
                    broker, reason: failure, lost: wasConnected, next: next, wait: wait,
                    worthLogging: wasConnected || failures <= brokers.count || failures.isMultiple(of: 10)))
            if wait > .zero { _ = wake.wait(timeout: .now() + .milliseconds(Int(wait.milliseconds))) }
        }
    }

    /// Waits, before reading more, while the owner is behind by more than the backlog allows (the
    /// broker's keepalive may lapse then: a reconnect is cheaper than unbounded memory).
    private func waitForRoom() {
        while state.withLock({ !$0.stopped && $0.backlog > configuration.maximumBacklog }) {
            _ = room.wait(timeout: .now() + .seconds(1))
        }
    }

    /// How long the next pass of the loop may wait for traffic: the configured most, or until the
    /// first refused subscription comes due (rounded up to the next millisecond). Nothing else needs
    /// a pass: libmosquitto ends the wait itself for a publish, subscribe or disconnect from another
    /// thread (its socket pair) and for the next keepalive, and ``stop()`` disconnects.
    private func passTimeout() -> Duration {
        var due: ContinuousClock.Instant?
        state.withLock { state in
            for retry in state.retries where due.map({ retry.due < $0 }) ?? true { due = retry.due }
        }
        guard let due else { return configuration.loopTimeout }
        return max(.zero, min(configuration.loopTimeout, due - ContinuousClock.now + .milliseconds(1)))
    }

    /// Asks again for the refused subscriptions whose wait is over, on the connection they were
    /// refused on (a new connection asks for everything anyway and drops the list).
    private func retryDueSubscriptions() {
        // Most passes have none: an idle pass runs as little code as it can (each page it runs is
        // mapped back into an idle daemon).
        if state.withLock({ $0.retries.isEmpty }) { return }
        let now = ContinuousClock.now
        let due = state.withLock { state -> [String] in
            let due = state.retries.filter { $0.due <= now }.map(\.topic)
            state.retries.removeAll { $0.due <= now }
            return due
        }
        if let broker = state.withLock({ $0.connected }) {
            for topic in due { subscribeOwn(topic, on: broker) }
        }
    }

    private func subscribeOwn(_ topic: String, on broker: MQTTBroker) {
        let qos = state.withLock { $0.qos }
        do {
            let messageId = try client.subscribe(topic, qos: qos)
            state.withLock { $0.inFlight[messageId] = topic }
        } catch {
            deliver(.subscribeFailed(topic: topic, broker: broker, reason: error.reason))
        }
    }

    /// What the client reports, on the session's thread.
    private func handle(_ event: MQTTClient.Event) {
        switch event {
        case .connected:
            let (broker, topics) = state.withLock { state in
                state.rotation.connected()
                let broker = brokers[state.rotation.index]
                state.connected = broker
                state.inFlight = [:]
                state.retries = []
                state.retry.reset()
                return (broker, state.topics)
            }
            deliver(.connected(broker))
            for topic in topics { subscribeOwn(topic, on: broker) }
        case let .refused(reason, protocolVersion):
            let legacy = state.withLock { state in
                state.protocolRefused = protocolVersion
                return state.fallback.version(for: state.rotation.index) == .v311
            }
            // A v5 CONNECT refused for its version is retried in 3.1.1 at once (``Event/fellBack(_:)``).
            if protocolVersion && !legacy { return }
            deliver(.refused(currentBroker, reason: reason))
        case .disconnected:
            break  // the end of the loop says it, with the reason
        case let .subscribed(messageId, granted):
            let refused = granted.contains(where: MQTTClient.isRefusal)
            let own = state.withLock { state -> (String, SubscriptionRetry.Outcome, MQTTBroker)? in
                guard let topic = state.inFlight.removeValue(forKey: messageId), let broker = state.connected else {
                    return nil
                }
                return (topic, state.retry.answered(topic, refused: refused), broker)
            }
            guard let (topic, outcome, broker) = own else {
                return deliver(.subscribed(messageId: messageId, refused: refused))
            }
            switch outcome {
            case let .granted(afterRefusals):
                deliver(.subscriptionGranted(topic: topic, broker: broker, afterRefusals: afterRefusals))
            case let .refused(refusals, step, worthLogging):
                let wait = configuration.jitter(step)
                state.withLock { $0.retries.append((topic, ContinuousClock.now + wait)) }
                deliver(
                    .subscriptionRefused(
                        topic: topic, broker: broker, refusals: refusals, retryIn: wait, worthLogging: worthLogging))
            }
        case let .message(topic, payload):
            state.withLock { $0.backlog += Self.cost(topic: topic, payload: payload) }
            deliver(.message(topic: topic, payload: payload))
        case let .oversized(topic, size): deliver(.oversized(topic: topic, size: size))
        case let .published(messageId): deliver(.published(messageId: messageId))
        }
    }

    private func deliver(_ event: Event) {
        let handler = state.withLock { $0.handler }
        handler?(event)
    }
}
