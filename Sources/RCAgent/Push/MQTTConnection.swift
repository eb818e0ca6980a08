import RCCore
import RCMQTT
import RCService
import Synchronization

/// One MQTT connection of the daemon, to one broker of a failover list at a time: the push channel
/// and the report share it when they go to the same brokers (one connection per device), or the
/// report has one of its own. The session (``MQTTSession``, in RCMQTT) keeps it up: broker
/// rotation, reconnect backoff with jitter, MQTT 5 with the fallback to 3.1.1 per broker, the push
/// channel's subscriptions and their retries. This type is the daemon's side of it: the client
/// made from `[Push]`/`[Report]` settings (``MQTTCredentials``, the password read by
/// ``MQTTPassword``), and the log lines for what the session reports.
final class MQTTConnection: Sendable {
    typealias Broker = MQTTBroker
    typealias Event = MQTTSession.Event

    struct SetupError: Error, CustomStringConvertible {
        let description: String
    }

    let brokers: [Broker]
    private let session: MQTTSession
    private let log: Logger
    private let handler = Mutex<(@Sendable (Event) -> Void)?>(nil)

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
        options.threaded = true  // the session's thread writes; see ``MQTTSession/stop()``
        do { try credentials.apply(to: &options, tls: tls ?? false) } catch {
            guard error.kind == .setup, let file = credentials.passwordFile else {
                throw SetupError(description: "cannot set up MQTT: \(error)")
            }
            throw SetupError(description: "cannot read MQTTPasswordFile=\(file): \(error.reason)")
        }
        let client: MQTTClient
        do { client = try MQTTClient(options) } catch {
            // Only a TLS failure is about the TLS settings; a missing libmosquitto is not.
            let settings = error.kind == .tls ? " (MQTTCAFile=, MQTTClientCertificate=, TLS)" : ""
            throw SetupError(description: "cannot set up MQTT\(settings): \(error)")
        }
        var configuration = MQTTSession.Configuration(brokers: brokers)
        configuration.keepAlive = keepAlive
        configuration.maximumBacklog = Self.maximumBacklog
        session = MQTTSession(client: client, configuration)
        self.brokers = brokers
        self.log = log
        session.onEvent { [weak self] event in self?.handle(event) }
    }

    /// The broker it is connected to, else the one it tries next.
    var currentBroker: Broker { session.currentBroker }

    /// Where events go; set it before ``start()``.
    func onEvent(_ handler: @escaping @Sendable (Event) -> Void) { self.handler.withLock { $0 = handler } }

    /// The last will of the next connect (a connection already open keeps the one it was made with).
    func setWill(_ will: MQTTClient.Will?) { session.setWill(will) }

    /// The topics asked for at QoS 1 on every connect, a refused one again with backoff; set before ``start()``.
    func setSubscriptions(_ topics: [String]) { session.setSubscriptions(topics, qos: 1) }

    /// Starts the session's thread; `false` when no thread could be made (the connection is dead then).
    func start() -> Bool { session.start() }

    /// Disconnects cleanly (the broker does not publish the will) and waits for the session's
    /// thread, on a thread of its own: never on the cooperative pool.
    func stop() async {
        if !(await session.shutDown()) {
            log.warning("Failed to end the MQTT network thread within 3 s; going on without waiting for it")
        }
        handler.withLock { $0 = nil }
    }

    /// The most message bytes handed on and not yet consumed: 16 push messages at the limit.
    static let maximumBacklog = 16 * MQTTClient.defaultMaximumPayload

    /// The receiver of a message is done with it.
    func consumed(topic: String, payload: [UInt8]) { session.consumed(topic: topic, payload: payload) }

    func unsubscribe(_ topic: String) throws(MQTTError) { try session.unsubscribe(topic) }

    /// Queues `payload` at QoS 1 and returns its message id (``MQTTSession/Event/published(messageId:)`` follows).
    func publish(_ payload: [UInt8], topic: String, retain: Bool) throws(MQTTError) -> Int32 {
        try session.publish(payload, topic: topic, qos: 1, retain: retain)
    }

    /// What the session reports, on its thread: logged here, handed on.
    private func handle(_ event: Event) {
        switch event {
        case let .failed(broker, reason, lost, next, wait, worthLogging):
            let retry =
                wait == .zero
                ? "trying \(next.name)"
                : "retrying \(next.name) in \(Int((Double(wait.milliseconds) / 1_000).rounded()))s"
            if lost {
                log.warning("MQTT connection to \(broker.name) lost (\(reason)); \(retry)")
            } else if worthLogging {
                log.warning("Failed to keep the MQTT connection to \(broker.name): \(reason); \(retry)")
            }
        case let .refused(broker, reason):
            log.warning("MQTT broker \(broker.name) refused the connection: \(reason)")
        case let .fellBack(broker):
            log.notice(
                "MQTT broker \(broker.name) does not speak MQTT 5; using MQTT 3.1.1, where it cannot be told "
                    + "the largest message the daemon takes (\(MQTTClient.defaultMaximumPayload) bytes)")
        case let .subscribeFailed(topic, broker, reason):
            log.warning("Failed to subscribe to \(topic) on \(broker.name): \(reason)")
        default:
            break
        }
        let handler = handler.withLock { $0 }
        handler?(event)
    }
}

/// Who the daemon is to a broker: `[Push]`'s MQTTUsername=/MQTTPasswordFile=/MQTTCAFile=/
/// MQTTClientCertificate=/MQTTClientKey=, or `[Report]`'s for a report connection of its own (each
/// defaulting to `[Push]`'s; the certificate and its key as a pair).
extension MQTTCredentials {
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
