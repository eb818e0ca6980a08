@preconcurrency import Dispatch
import RCCore
import RCMQTT
import RCService
import Synchronization

/// One MQTT connection of the daemon, to one broker of a failover list at a time: the push channel
/// and the report share it when they go to the same brokers (one connection per device), or the
/// report has one of its own. A thread of its own connects and drives libmosquitto's loop (not
/// `loop_forever`, which reconnects to the same host for good): a failed connect or a lost
/// connection moves on to the next broker of the list (``BrokerRotation``), waiting only after a
/// full round, jittered ±50% so a fleet whose broker died does not come back in step. Keepalive
/// pings and their timeouts are the loop's (`mosquitto_loop` runs them on every pass).
///
/// Each connect tries MQTT 5 first, which tells the broker the largest message the daemon takes
/// (``MQTTClient/Options/maximumPayload``); a broker that refuses the protocol version in its
/// CONNACK (NATS, mosquitto 1.x) is asked again at once in MQTT 3.1.1, for the rest of the
/// daemon's run. (A connection closed without a CONNACK is not taken as a refusal: a transient
/// failure must not cost the bound for good.) Messages are handed on without being parsed here:
/// the thread must keep the keepalive going whatever a payload costs. What is handed on and not
/// yet ``consumed(_:)`` is bounded (``maximumBacklog``): past it the thread stops reading until
/// the handler catches up.
final class MQTTConnection: Sendable {
    /// One broker of the list, as `[Push] MQTT=` names it.
    struct Broker: Sendable, Equatable {
        let host: String
        let port: Int32
        /// `host:port`, for status and the log.
        var name: String { "\(host):\(port)" }
    }

    /// What the connection did, on its thread, in order.
    enum Event: Sendable {
        case connected(Broker)
        case disconnected(Broker)
        /// A message, at most ``MQTTClient/defaultMaximumPayload`` bytes: the receiver calls
        /// ``consumed(_:)`` with its size once it is done with it.
        case message(topic: String, payload: [UInt8])
        /// A message larger than the limit, dropped without a copy.
        case oversized(topic: String, size: Int)
        /// The broker acknowledged the publish with this id (PUBACK).
        case published(messageId: Int32)
        /// The broker answered the subscription with this id (SUBACK), granting or refusing it.
        case subscribed(messageId: Int32, refused: Bool)
    }

    struct SetupError: Error, CustomStringConvertible {
        let description: String
    }

    let brokers: [Broker]
    private let client: MQTTClient
    private let log: Logger
    private let keepAlive: Int32
    private struct State {
        var rotation: BrokerRotation
        var connected: Broker?
        var stopped = false
        var started = false
        /// The will the next connect hands the broker (the report as of then, offline).
        var will: MQTTClient.Will?
        var handler: (@Sendable (Event) -> Void)?
        /// Brokers (by index) found not to speak MQTT 5: connected to in 3.1.1 from then on.
        var legacyBrokers: Set<Int> = []
        /// Set by the CONNACK of the current attempt: refused for its protocol version.
        var protocolRefused = false
        /// Bytes of messages handed on and not yet consumed.
        var backlog = 0
    }
    private let state: Mutex<State>
    private let wake = DispatchSemaphore(value: 0)
    /// Signalled when the backlog shrinks (or on stop), for a network thread waiting for room.
    private let room = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    /// `urls`: the list, already checked by the config (all `mqtt://` or all `mqtts://`).
    init(
        urls: [String], clientId: String, cleanSession: Bool, credentials: MQTTCredentials, log: Logger,
        keepAlive: Int32 = 60
    ) throws(SetupError) {
        var brokers: [Broker] = []
        var tls: Bool?
        for url in urls {
            guard let (secure, host, port) = MQTTAddress.parse(url) else {
                throw SetupError(description: "MQTT= '\(url)' is not an mqtt:// or mqtts:// URL")
            }
            // One client, one TLS setting: libmosquitto sets TLS up per handle, not per connect.
            if let tls, tls != secure { throw SetupError(description: "MQTT= mixes mqtt:// and mqtts:// URLs") }
            tls = secure
            brokers.append(Broker(host: host, port: port))
        }
        guard !brokers.isEmpty else { throw SetupError(description: "MQTT= names no broker") }
        var options = MQTTClient.Options(clientId: clientId, cleanSession: cleanSession)
        options.threaded = true  // the network thread writes; see ``stop()``
        if let username = credentials.username {
            options.username = username
            if let file = credentials.passwordFile {
                guard let bytes = try? FileBytes.read(file, limit: 64 << 10, symlinks: .trustedOwners) else {
                    throw SetupError(description: "cannot read MQTTPasswordFile=\(file)")
                }
                options.password = String(decoding: bytes, as: UTF8.self).trimmingSpaces().description
            }
        }
        options.tls = tls ?? false
        options.caFile = credentials.caFile
        options.certificateFile = credentials.certificateFile
        options.keyFile = credentials.keyFile
        do { client = try MQTTClient(options) } catch {
            throw SetupError(description: "cannot set up MQTT (MQTTCAFile=, MQTTClientCertificate=, TLS): \(error)")
        }
        self.brokers = brokers
        self.log = log
        self.keepAlive = keepAlive
        state = Mutex(State(rotation: BrokerRotation(count: brokers.count)))
        client.onEvent { [weak self] event in self?.handle(event) }
    }

    /// `host:port` of the broker it is connected to, else of the one it tries next.
    var currentBroker: Broker {
        state.withLock { $0.connected ?? brokers[$0.rotation.index] }
    }

    /// Where events go; set it before ``start()``.
    func onEvent(_ handler: @escaping @Sendable (Event) -> Void) {
        state.withLock { $0.handler = handler }
    }

    /// The last will of the next connect (a connection already open keeps the one it was made with).
    func setWill(_ will: MQTTClient.Will?) {
        state.withLock { $0.will = will }
    }

    /// Starts the network thread; `false` when no thread could be made (the connection is dead then).
    func start() -> Bool {
        state.withLock { $0.started = true }
        let started = DetachedThread.start { [self] in
            networkLoop()
            finished.signal()
        }
        if !started { finished.signal() }  // ``stop()`` has no thread to wait for
        return started
    }

    /// Disconnects (a clean DISCONNECT: the broker does not publish the will), wakes a wait between
    /// rounds, and waits (3 s at most) for the thread to let go of the client before it can go.
    func stop() {
        let started = state.withLock { state in
            state.stopped = true
            return state.started
        }
        client.disconnect()
        wake.signal()
        room.signal()
        if started { _ = finished.wait(timeout: .now() + .seconds(3)) }
        // The handler holds the channel and the reporter, which hold this connection: let go, so
        // the client (its socket and libmosquitto's wake-up pair) is freed with the service.
        state.withLock { $0.handler = nil }
    }

    /// The most message bytes handed on and not yet consumed: 16 push messages at the limit.
    static let maximumBacklog = 16 * MQTTClient.defaultMaximumPayload

    /// The receiver of a ``Event/message(topic:payload:)`` is done with `size` of its bytes.
    func consumed(_ size: Int) {
        state.withLock { $0.backlog = max(0, $0.backlog - size) }
        room.signal()
    }

    /// Waits, before reading more, while the handler is behind by more than the backlog allows
    /// (the broker's keepalive may lapse then: a reconnect is cheaper than unbounded memory).
    private func waitForRoom() {
        while state.withLock({ !$0.stopped && $0.backlog > Self.maximumBacklog }) {
            _ = room.wait(timeout: .now() + .seconds(1))
        }
    }

    // MARK: - Calls from any thread (libmosquitto locks its own state)

    /// Asks for `topic` at QoS 1 and returns the request's message id (``Event/subscribed(messageId:refused:)`` follows).
    func subscribe(_ topic: String) throws(MQTTError) -> Int32 { try client.subscribe(topic, qos: 1) }

    func unsubscribe(_ topic: String) throws(MQTTError) { try client.unsubscribe(topic) }

    /// Queues `payload` at QoS 1 and returns its message id (``Event/published(messageId:)`` follows).
    func publish(_ payload: [UInt8], topic: String, retain: Bool) throws(MQTTError) -> Int32 {
        try client.publish(payload, topic: topic, qos: 1, retain: retain)
    }

    // MARK: - The network thread

    private var isStopped: Bool { state.withLock { $0.stopped } }

    private func networkLoop() {
        var failures = 0
        while !isStopped {
            let (index, will, legacy) = state.withLock { state in
                state.protocolRefused = false
                return (state.rotation.index, state.will, state.legacyBrokers.contains(state.rotation.index))
            }
            let broker = brokers[index]
            var failure = "?"
            do {
                try client.setWill(will)
                try client.connect(
                    host: broker.host, port: broker.port, keepAlive: keepAlive, protocolVersion: legacy ? .v311 : .v5)
                // Until the connection is lost, refused (the CONNACK ends the loop with an error) or
                // ended by ``stop()``.
                while !isStopped {
                    waitForRoom()
                    try client.loop(timeout: .seconds(1))
                }
                // Stopping: the DISCONNECT that ``stop()`` queued is written by this loop; returning
                // before it is would close the socket without it, and the broker would publish the
                // will of a daemon that stopped cleanly. The loop ends once the socket is closed.
                for _ in 0..<30 { try client.loop(timeout: .milliseconds(100)) }
                return
            } catch {
                failure = error.reason
            }
            if isStopped { return }
            if !legacy, state.withLock({ $0.protocolRefused }) {
                // Not MQTT 5: 3.1.1 at once, and for good with this broker.
                state.withLock { _ = $0.legacyBrokers.insert(index) }
                log.notice(
                    "MQTT broker \(broker.name) does not speak MQTT 5; using MQTT 3.1.1, where it cannot be told "
                        + "the largest message the daemon takes (\(MQTTClient.defaultMaximumPayload) bytes)")
                continue
            }
            let wasConnected = state.withLock { state in
                defer { state.connected = nil }
                return state.connected != nil
            }
            if wasConnected {
                failures = 0
                deliver(.disconnected(broker))
            }
            let step = state.withLock { $0.rotation.failed() }
            failures += 1
            let next = brokers[state.withLock { $0.rotation.index }]
            let delay = step == .zero ? 0 : Double(step.milliseconds) * Double.random(in: 0.5...1.5)
            let retry =
                delay == 0 ? "trying \(next.name)" : "retrying \(next.name) in \(Int((delay / 1_000).rounded()))s"
            // Logged: a lost connection, the first round of failures (each broker of a list once) and
            // every tenth failure after it; a broker down for hours does not fill the journal.
            if wasConnected {
                log.warning("MQTT connection to \(broker.name) lost (\(failure)); \(retry)")
            } else if failures <= brokers.count || failures.isMultiple(of: 10) {
                log.warning("Failed to keep the MQTT connection to \(broker.name): \(failure); \(retry)")
            }
            if delay > 0 { _ = wake.wait(timeout: .now() + .milliseconds(Int(delay))) }
        }
    }

    /// What the client reports, on the network thread.
    private func handle(_ event: MQTTClient.Event) {
        switch event {
        case .connected:
            let broker = state.withLock { state in
                state.rotation.connected()
                let broker = brokers[state.rotation.index]
                state.connected = broker
                return broker
            }
            deliver(.connected(broker))
        case let .refused(reason, protocolVersion):
            let legacy = state.withLock { state in
                state.protocolRefused = protocolVersion
                return state.legacyBrokers.contains(state.rotation.index)
            }
            // A v5 CONNECT refused for its version is retried in 3.1.1 at once; said then, once.
            if protocolVersion && !legacy { return }
            log.warning("MQTT broker \(currentBroker.name) refused the connection: \(reason)")
        case .disconnected:
            break  // the end of the loop says it, with the reason
        case let .subscribed(messageId, granted):
            deliver(.subscribed(messageId: messageId, refused: granted.contains(where: MQTTClient.isRefusal)))
        case let .message(topic, payload):
            state.withLock { $0.backlog += payload.count }
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

/// Who the daemon is to a broker: `[Push]`'s MQTTUsername=/MQTTPasswordFile=/MQTTCAFile=/
/// MQTTClientCertificate=/MQTTClientKey=, or `[Report]`'s for a report connection of its own (each
/// defaulting to `[Push]`'s; the certificate and its key as a pair).
struct MQTTCredentials: Sendable {
    var username: String?
    var passwordFile: String?
    var caFile: String?
    var certificateFile: String?
    var keyFile: String?

    static func push(_ config: AgentConfig) -> MQTTCredentials {
        MQTTCredentials(
            username: config.mqttUsername, passwordFile: config.mqttPasswordFile, caFile: config.mqttCAFile,
            certificateFile: config.mqttClientCertificate, keyFile: config.mqttClientKey)
    }

    static func report(_ config: AgentConfig) -> MQTTCredentials {
        let ownCertificate = config.reportClientCertificate != nil
        return MQTTCredentials(
            username: config.reportUsername ?? config.mqttUsername,
            passwordFile: config.reportPasswordFile ?? config.mqttPasswordFile,
            caFile: config.reportCAFile ?? config.mqttCAFile,
            certificateFile: ownCertificate ? config.reportClientCertificate : config.mqttClientCertificate,
            keyFile: ownCertificate ? config.reportClientKey : config.mqttClientKey)
    }
}
