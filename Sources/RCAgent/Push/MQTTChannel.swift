@preconcurrency import Dispatch
import RCCore
import RCMQTT
import RCService
import Synchronization

/// The MQTT push channel: the Linux counterpart of the FCM `PUSH_RC` topic. It
/// subscribes to `MQTTTopic` and `MQTTTopic/<deviceId>` with QoS 1 on a persistent session
/// (client id = device id, clean session off), so pings published while the device was offline
/// arrive when it reconnects. Payloads are the FCM-style messages the socket takes and go through
/// the same handler; the refetch waits a random `Jitter`. A thread of its own runs RCMQTT's client
/// loop, which reconnects with exponential backoff; every reconnect refetches once.
final class MQTTChannel: Sendable {
    private let client: MQTTClient
    private let agent: Agent
    private let log: Logger
    private let topics: [String]
    private let jitter: Duration
    private let host: String
    private let port: Int32
    private struct State {
        var connected = false
        var everConnected = false
        var stopped = false
    }
    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    /// What the connection did, in the order the network thread saw it: the channel's own task
    /// (``run()``) hands it to the agent, so `status` never shows an older state after a newer one ("connecting" after
    /// "connected" when a task per callback raced), and messages are handled in arrival order.
    private let events: AsyncStream<ConnectionEvent>
    private let eventInput: AsyncStream<ConnectionEvent>.Continuation

    private enum ConnectionEvent: Sendable {
        case state(String)
        /// Connected (`first`: for the first time since start): a ping may have been missed.
        case connected(state: String, first: Bool)
        case message(PushMessage, topic: String)
    }

    struct SetupError: Error, CustomStringConvertible {
        let description: String
    }

    init(config: AgentConfig, deviceId: String, agent: Agent, log: Logger) throws(SetupError) {
        guard let url = config.mqtt, let (tls, host, port) = MQTTAddress.parse(url) else {
            throw SetupError(description: "[Push] MQTT= is not an mqtt:// or mqtts:// URL")
        }
        var options = MQTTClient.Options(clientId: deviceId, cleanSession: false)
        if let username = config.mqttUsername {
            options.username = username
            if let file = config.mqttPasswordFile {
                guard let bytes = try? FileBytes.read(file, limit: 64 << 10, symlinks: .trustedOwners) else {
                    throw SetupError(description: "cannot read MQTTPasswordFile=\(file)")
                }
                options.password = String(decoding: bytes, as: UTF8.self).trimmingSpaces().description
            }
        }
        options.tls = tls
        options.caFile = config.mqttCAFile
        do { client = try MQTTClient(options) } catch {
            throw SetupError(description: "cannot set up MQTT (MQTTCAFile=, TLS): \(error)")
        }
        self.agent = agent
        self.log = log
        (events, eventInput) = AsyncStream.makeStream()
        self.host = host
        self.port = port
        jitter = config.jitter
        topics = [config.mqttTopic, config.mqttTopic + "/" + deviceId]
        // libmosquitto's own reconnect inside its loop: 1 s growing to 60 s.
        client.setReconnectDelay(initial: 1, maximum: 60, exponential: true)
        client.onEvent { [weak self] event in self?.handle(event) }
    }

    /// Runs the channel until the calling task is cancelled: a thread of its own connects and runs
    /// the client's loop (and whenever the loop gives up, broker refused or gone, TLS failure,
    /// waits 1 s doubling to 60 s, ±50% jitter so a fleet does not reconnect in step, and tries
    /// again), and this task hands what the thread saw to the agent, in order. Cancelled, it stops
    /// the thread and takes the channel out of `status`.
    func run() async {
        eventInput.yield(.state("mqtt \(host):\(port) connecting"))
        let started = DetachedThread.start { [self] in
            networkLoop()
            finished.signal()
        }
        if !started {
            // Without its thread the channel is dead: say so in the log and in status, not nothing.
            log.error("Failed to start the MQTT network thread; push over MQTT is off until a restart")
            eventInput.yield(.state("mqtt \(host):\(port) not running (no network thread)"))
            finished.signal()  // `stop` has no thread to wait for
        }
        // Ends when the task is cancelled (the stream ends with it).
        for await event in events { await deliver(event) }
        stop()
        // A reload that removes or replaces the channel leaves no state of it behind.
        await agent.setPushState(nil)
    }

    private func deliver(_ event: ConnectionEvent) async {
        switch event {
        case let .state(state): await agent.setPushState(state)
        case let .connected(state, first):
            await agent.setPushState(state)
            if first { await forgetEarlierTopics() }
            // A ping may have been missed while disconnected (at start too: the broker may hold none).
            if first {
                agent.request(.pushReconnect)
            } else {
                agent.requestAfterJitter(.pushReconnect, jitter: jitter)
            }
        case let .message(message, topic):
            do {
                _ = try await agent.handle(message, from: "mqtt \(topic)", jitter: jitter)
            } catch {
                log.error("Failed to handle an MQTT message on \(topic): \(error)")
            }
        }
    }

    /// The broker keeps a persistent session's subscriptions, whatever config the daemon has now:
    /// topics an earlier channel subscribed (before a reload or a restart that changed
    /// `MQTTTopic=`) would go on delivering pings. The topics are remembered in the state
    /// database, and those no longer wanted are unsubscribed at the first connect; the record is
    /// updated only once every unsubscribe went out, so a connection lost meanwhile tries again.
    private func forgetEarlierTopics() async {
        let remembered = await agent.note(Self.topicsNote)?.split(separator: "\n").map(String.init) ?? []
        var complete = true
        for topic in remembered where !topics.contains(topic) {
            do { try client.unsubscribe(topic) } catch { complete = false }
        }
        if complete && remembered != topics { await agent.setNote(Self.topicsNote, topics.joined(separator: "\n")) }
    }

    static let topicsNote = "mqtt.topics"

    /// Stops the thread: disconnects, wakes a reconnect wait, and waits (3 s at most) for the
    /// thread to let go of the client before it can be destroyed.
    private func stop() {
        state.withLock { $0.stopped = true }
        client.disconnect()
        wake.signal()
        _ = finished.wait(timeout: .now() + .seconds(3))
        eventInput.finish()
    }

    /// Takes this channel's topics out of its persistent session (a reload moves to others). Sent
    /// before the disconnect that ``stop()`` sends; without a connection there is nothing to undo
    /// now, and the next connect of a channel with other topics does not subscribe these again.
    func unsubscribe() {
        for topic in topics { try? client.unsubscribe(topic) }  // best effort, as said above
    }

    private var isStopped: Bool { state.withLock { $0.stopped } }

    private func networkLoop() {
        var failures = 0
        var failure: MQTTError?
        do { try client.connect(host: host, port: port, keepAlive: 60) } catch { failure = error }
        while !isStopped {
            if failure == nil {
                // Reconnects after a lost connection by itself; returns on errors it will not retry.
                do {
                    try client.loopForever()
                    failure = MQTTError(.notConnected, "the network loop ended")
                } catch {
                    failure = error
                }
                if isStopped { return }
                if state.withLock({ $0.everConnected }) { failures = 0 }
            }
            failures += 1
            let base = Double(min(1 << min(failures - 1, 6), 60))
            let delay = base * Double.random(in: 0.5...1.5)
            if failures == 1 || failures.isMultiple(of: 10) {
                log.warning(
                    "Failed to keep the MQTT connection to \(host):\(port): \(failure?.reason ?? "?"); retrying in \(Int(delay.rounded()))s"
                )
            }
            _ = wake.wait(timeout: .now() + .milliseconds(Int(delay * 1_000)))
            if isStopped { return }
            do {
                try client.reconnect()
                failure = nil
            } catch {
                failure = error
            }
        }
    }

    /// What the client reports, on the network thread.
    private func handle(_ event: MQTTClient.Event) {
        switch event {
        case .connected: didConnect()
        case let .refused(reason): log.warning("MQTT broker \(host):\(port) refused the connection: \(reason)")
        case let .disconnected(reason): didDisconnect(reason)
        case let .message(topic, payload): didReceive(payload, topic: topic)
        case .published, .subscribed: break  // QoS 1 acknowledgements: nothing to do
        }
    }

    private func didConnect() {
        for topic in topics {
            do { try client.subscribe(topic, qos: 1) } catch {
                log.warning("Failed to subscribe to \(topic) on \(host):\(port): \(error.reason)")
            }
        }
        let first = state.withLock { state in
            defer { state.connected = true; state.everConnected = true }
            return !state.everConnected
        }
        log.info("MQTT connected to \(host):\(port), subscribed to \(topics.joined(separator: ", "))")
        eventInput.yield(
            .connected(state: "mqtt \(host):\(port) connected, topics \(topics.joined(separator: ", "))", first: first))
    }

    private func didDisconnect(_ reason: String) {
        let wasConnected = state.withLock { state in
            defer { state.connected = false }
            return state.connected
        }
        if wasConnected && !isStopped {
            log.warning("MQTT connection to \(host):\(port) lost (\(reason)); reconnecting")
        }
        eventInput.yield(.state("mqtt \(host):\(port) disconnected, reconnecting"))
    }

    private func didReceive(_ payload: [UInt8], topic: String) {
        let message: PushMessage
        do {
            message = try PushMessage.parse(try JSONValue.parse(payload))
        } catch {
            let shown = String(decoding: payload.prefix(120), as: UTF8.self)
            log.warning("Ignoring an MQTT message on \(topic): \(error) (payload: \(shown))")
            return
        }
        eventInput.yield(.message(message, topic: topic))
    }
}
