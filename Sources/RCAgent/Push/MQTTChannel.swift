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
///
/// A payload is parsed on the channel's task, never on the network thread (which must keep the
/// keepalive going); one over the size limit never gets here. A refused message, too large or
/// unreadable, is logged, at most once a minute per reason with the count of those not logged.
final class MQTTChannel: Sendable {
    private let connection: any PushConnection
    private let agent: any PushTarget
    private let log: Logger
    private let topics: [String]
    private let jitter: Duration
    private let refusals: RefusalLog
    private let everConnected = Mutex(false)
    /// What the connection did, in the order the network thread saw it: the channel's own task
    /// (``run()``) hands it to the agent, so `status` never shows an older state after a newer one ("connecting" after
    /// "connected" when a task per callback raced), and messages are handled in arrival order.
    private let events: AsyncStream<ConnectionEvent>
    private let eventInput: AsyncStream<ConnectionEvent>.Continuation

    private enum ConnectionEvent: Sendable {
        case state(PushState)
        /// Connected (`first`: for the first time since start): a ping may have been missed.
        case connected(state: PushState, first: Bool)
        /// A payload as it came, parsed on the channel's task.
        case message([UInt8], topic: String)
    }

    init(config: AgentConfig, deviceId: String, connection: any PushConnection, agent: any PushTarget, log: Logger) {
        self.connection = connection
        self.agent = agent
        self.log = log
        refusals = RefusalLog(log)
        (events, eventInput) = AsyncStream.makeStream()
        jitter = config.jitter
        topics = [config.mqttTopic, config.mqttTopic + "/" + deviceId]
        // Asked for on every connect by the session, a refused one again with backoff.
        connection.setSubscriptions(topics)
        // Queued now, before the connection starts: it must come before whatever its thread reports.
        eventInput.yield(.state(.connecting(broker: connection.currentBroker.name)))
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
        eventInput.yield(.state(.notRunning(broker: connection.currentBroker.name)))
    }

    private func deliver(_ event: ConnectionEvent) async {
        switch event {
        case let .state(state): await agent.setPushState(state)
        case let .connected(state, first):
            await agent.setPushState(state)
            if first { await forgetEarlierTopics() }
            // A ping may have been missed while disconnected (at start too: the broker may hold none).
            // A round running now (the start-up fetch, as the connection comes up beside it) settles
            // the cache itself, and its own backoff retries a failure.
            guard await !agent.isFetching else { return }
            if first {
                agent.request(.pushReconnect, reply: nil)
            } else {
                agent.requestAfterJitter(.pushReconnect, jitter: jitter)
            }
        case let .message(payload, topic):
            defer { connection.consumed(topic: topic, payload: payload) }
            let message: PushMessage
            do {
                message = try PushMessage.parse(try JSONValue.parse(payload))
            } catch {
                let shown = String(decoding: payload.prefix(120), as: UTF8.self)
                refusals.refused(
                    "unreadable", "Ignoring an MQTT message on \(topic): \(error) (payload: \(shown))")
                return
            }
            do {
                _ = try await agent.handle(message, from: "mqtt \(topic)", wait: false, jitter: jitter, strict: false)
            } catch {
                log.error("Failed to handle an MQTT message on \(topic): \(error)")
            }
        }
    }

    /// The broker keeps a persistent session's subscriptions, whatever config the daemon has now:
    /// topics an earlier channel subscribed (before a reload or a restart that changed
    /// `MQTTTopic=`) would go on delivering pings. The topics are remembered in the state
    /// database (the ``StateNote/mqttTopics`` note), and those no longer wanted are unsubscribed at the first connect; the record is
    /// updated only once every unsubscribe went out, so a connection lost meanwhile tries again.
    private func forgetEarlierTopics() async {
        let remembered = await agent.note(.mqttTopics)?.split(separator: "\n").map(String.init) ?? []
        var complete = true
        for topic in remembered where !topics.contains(topic) {
            do { try connection.unsubscribe(topic) } catch { complete = false }
        }
        if complete && remembered != topics { await agent.setNote(.mqttTopics, topics.joined(separator: "\n")) }
    }

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
            eventInput.yield(.state(.reconnecting(broker: broker.name)))
        case let .message(topic, payload): eventInput.yield(.message(payload, topic: topic))
        case let .oversized(topic, size):
            refusals.refused(
                "oversized",
                "Ignoring an MQTT message on \(topic): \(size) bytes, over the limit of "
                    + "\(MQTTClient.defaultMaximumPayload) (not read)")
        case let .subscriptionGranted(topic, broker, afterRefusals):
            guard afterRefusals > 0 else { return }
            log.info("MQTT broker \(broker.name) took the subscription to \(topic) after \(afterRefusals) refusals")
            eventInput.yield(.state(connectedState(broker)))
        case let .subscriptionRefused(topic, broker, _, retryIn, worthLogging):
            // A refused subscription leaves the device deaf on that topic while the connection
            // looks healthy (a broker's ACL, a cluster that could not create the subscription's
            // storage in time): logged, shown in status, and asked for again by the session, 1 s
            // doubling to 5 min, ±50%, on the same connection (a reconnect would cost every device a fetch).
            if worthLogging {
                log.warning(
                    "MQTT broker \(broker.name) refused the subscription to \(topic); pings there are not heard; "
                        + "retrying in \(DurationText.format(retryIn))")
            }
            eventInput.yield(.state(.subscriptionRefused(broker: broker.name, topic: topic)))
        case .published, .subscribed, .failed, .refused, .fellBack, .subscribeFailed:
            break  // the report's acknowledgements; what the connection logs itself
        }
    }

    private func connectedState(_ broker: MQTTConnection.Broker) -> PushState {
        .connected(broker: broker.name, topics: topics)
    }

    private func didConnect(_ broker: MQTTConnection.Broker) {
        let first = everConnected.withLock { ever in
            defer { ever = true }
            return !ever
        }
        log.info("MQTT connected to \(broker.name), subscribed to \(topics.joined(separator: ", "))")
        eventInput.yield(.connected(state: connectedState(broker), first: first))
    }
}
