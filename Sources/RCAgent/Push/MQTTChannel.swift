import RCCore
import RCMQTT
import RCService
import Synchronization

/// The MQTT push channel: the Linux counterpart of the FCM `PUSH_RC` topic. It
/// subscribes to `MQTTTopic` and `MQTTTopic/<deviceId>` with QoS 1 on a persistent session
/// (client id = device id, clean session off), so pings published while the device was offline
/// arrive when it reconnects. Payloads are the FCM-style messages the socket takes and go through
/// the same handler; the refetch waits a random `Jitter`. The connection (``MQTTConnection``, which
/// the report may share) reconnects, moving along the broker list; every reconnect refetches once.
final class MQTTChannel: Sendable {
    private let connection: MQTTConnection
    private let agent: Agent
    private let log: Logger
    private let topics: [String]
    private let jitter: Duration
    private let everConnected = Mutex(false)
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

    init(config: AgentConfig, deviceId: String, connection: MQTTConnection, agent: Agent, log: Logger) {
        self.connection = connection
        self.agent = agent
        self.log = log
        (events, eventInput) = AsyncStream.makeStream()
        jitter = config.jitter
        topics = [config.mqttTopic, config.mqttTopic + "/" + deviceId]
        // Queued now, before the connection starts: it must come before whatever its thread reports.
        eventInput.yield(.state("mqtt \(connection.currentBroker.name) connecting"))
    }

    /// Hands what the connection's thread saw to the agent, in order, until the calling task is
    /// cancelled; then takes the channel out of `status`.
    func run() async {
        await withTaskCancellationHandler {
            for await event in events { await deliver(event) }
        } onCancel: {
            eventInput.finish()
        }
        // A reload that removes or replaces the channel leaves no state of it behind.
        await agent.setPushState(nil)
    }

    /// The connection could not start its thread: said in status, not nothing.
    func noNetworkThread() {
        eventInput.yield(.state("mqtt \(connection.currentBroker.name) not running (no network thread)"))
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
            do { try connection.unsubscribe(topic) } catch { complete = false }
        }
        if complete && remembered != topics { await agent.setNote(Self.topicsNote, topics.joined(separator: "\n")) }
    }

    static let topicsNote = "mqtt.topics"

    /// Takes this channel's topics out of its persistent session (a reload moves to others). Sent
    /// before the disconnect that ``MQTTConnection/stop()`` sends; without a connection there is nothing to undo
    /// now, and the next connect of a channel with other topics does not subscribe these again.
    func unsubscribe() {
        for topic in topics { try? connection.unsubscribe(topic) }  // best effort, as said above
    }

    /// What the connection reports, on its network thread.
    func handle(_ event: MQTTConnection.Event) {
        switch event {
        case let .connected(broker): didConnect(broker)
        case let .disconnected(broker):
            eventInput.yield(.state("mqtt \(broker.name) disconnected, reconnecting"))
        case let .message(topic, payload): didReceive(payload, topic: topic)
        case .published: break  // the report's acknowledgements, when it shares the connection
        }
    }

    private func didConnect(_ broker: MQTTConnection.Broker) {
        for topic in topics {
            do { try connection.subscribe(topic) } catch {
                log.warning("Failed to subscribe to \(topic) on \(broker.name): \(error.reason)")
            }
        }
        let first = everConnected.withLock { ever in
            defer { ever = true }
            return !ever
        }
        log.info("MQTT connected to \(broker.name), subscribed to \(topics.joined(separator: ", "))")
        eventInput.yield(
            .connected(
                state: "mqtt \(broker.name) connected, topics \(topics.joined(separator: ", "))", first: first))
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
